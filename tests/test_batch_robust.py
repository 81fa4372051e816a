"""Batch hardening: a bundle's problem is its row's error, parts are written by time as well as
count, each bundle has a time limit, and workers die quietly with a killed parent."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from analyzer.batch import run as batch
from analyzer.batch.executor import LocalExecutor
from analyzer.dev.synth import make_tickets
from conftest import SAMPLES, batch_env, run_cli, wait_for_part
from contract import children, running


def _copy_sample(name: str, dest: Path) -> Path:
    shutil.copytree(SAMPLES / name / "bundle", dest)
    return dest


def _run(tickets: Path, out: Path, **kw) -> pl.DataFrame:
    batch.run_batch([str(tickets)], str(out), LocalExecutor(0), False, False, **kw)
    return pl.read_parquet(out / "bundles.parquet")


def _by_name(frame: pl.DataFrame) -> dict[str, dict]:
    return {Path(r["id"]).name: r for r in frame.to_dicts()}


def test_collection_time_before_year_1000_neither_stops_nor_breaks_a_rerun(tmp_path):
    tickets = tmp_path / "t"
    _copy_sample("healthy-single-gpu", tickets / "fine")
    old = _copy_sample("healthy-single-gpu", tickets / "year-999")
    node = old / "node.yaml"
    node.write_text(re.sub(r"'\d{4}-(\d\d-\d\dT)", r"'0999-\1", node.read_text()))
    assert "0999-08-15T" in node.read_text()
    rows = _by_name(_run(tickets, tmp_path / "out"))
    assert rows["fine"]["error"] is None and rows["fine"]["collected_at"].year == 2026
    # an impossible heartbeat is no collection time: another clue (or none) gives it, no error
    assert rows["year-999"]["error"] is None
    when = rows["year-999"]["collected_at"]
    # the handshake annotation's time (Requesting_2026-08-01 07:02:11) is the next clue
    assert when == dt.datetime(2026, 8, 1, 7, 2, 11, tzinfo=dt.UTC)
    assert rows["year-999"]["category"] == rows["fine"]["category"]
    again = _run(tickets, tmp_path / "out")  # the rerun resumes without a crash
    assert again.height == 2


def test_a_value_the_tables_cannot_hold_is_that_bundles_error(tmp_path, monkeypatch):
    tickets = tmp_path / "t"
    _copy_sample("healthy-single-gpu", tickets / "fine")
    _copy_sample("rbac-patch-forbidden", tickets / "bad-value")
    real = batch._rows

    def rows(bundle_id, row, bundle, report):
        res = real(bundle_id, row, bundle, report)
        if bundle_id.endswith("bad-value"):
            row["collected_at"] = "999-08-15 10:00:00"  # a string where a datetime belongs
            row["n_faults"] = "999-08-15"  # and one that no Int64 column takes
        return res

    monkeypatch.setattr(batch, "_rows", rows)
    b = _by_name(_run(tickets, tmp_path / "out"))
    assert b["fine"]["error"] is None and b["fine"]["category"] == "healthy"
    assert b["bad-value"]["error"].startswith("internal error: ")
    assert b["bad-value"]["n_faults"] is None  # no half-built verdict beside the error
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    assert not findings.filter(pl.col("bundle_id").str.ends_with("bad-value")).height


def test_bundle_time_limit_is_recorded_as_its_error(tmp_path, monkeypatch):
    tickets = tmp_path / "t"
    _copy_sample("healthy-single-gpu", tickets / "quick")
    _copy_sample("rbac-patch-forbidden", tickets / "slow")
    import analyzer.analyze

    real = analyzer.analyze.load_bundle

    def load_bundle(paths, ruleset, **kwargs):
        while paths[0].endswith("slow"):  # a runaway analysis, stopped only by the limit
            pass
        return real(paths, ruleset, **kwargs)

    monkeypatch.setattr(analyzer.analyze, "load_bundle", load_bundle)
    start = time.monotonic()
    b = _by_name(_run(tickets, tmp_path / "out", bundle_timeout=0.5))
    assert time.monotonic() - start < 30
    assert b["slow"]["error"] == "timed out after 0.5s"
    assert b["quick"]["error"] is None and b["quick"]["category"] == "healthy"


def test_bundle_timeout_must_be_positive(tmp_path):
    res = run_cli("batch", str(SAMPLES), "--out", str(tmp_path / "o"), "--bundle-timeout", "0")
    assert (
        res.returncode == 2 and "--bundle-timeout" in res.stderr and "Traceback" not in res.stderr
    )


def _batch(tickets: Path, out: Path, jobs: int, env: dict, stderr=subprocess.DEVNULL):
    cmd = [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(out)]
    return subprocess.Popen(
        [*cmd, "--jobs", str(jobs)], env=env, stdout=subprocess.DEVNULL, stderr=stderr
    )


def test_parts_are_written_by_time_so_a_killed_run_keeps_its_work(tmp_path):
    tickets = tmp_path / "t"
    make_tickets(tickets, 150, seed=5)
    out = tmp_path / "out"
    # the default part size (200 rows) is more than the whole run: only time can write a part
    env = batch_env(tmp_path, HAMI_BATCH_PART_SECONDS="0.3")
    env.pop("HAMI_BATCH_PART_ROWS", None)
    proc = _batch(tickets, out, 1, env)
    wait_for_part(out, proc)
    assert proc.poll() is None, "the run ended before the test could kill it"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = pl.read_parquet(list((out / "parts").glob("bundles-*.parquet"))).height
    assert 0 < kept < 150
    rerun = subprocess.run(
        [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(out), "-j", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"{kept} already analysed" in rerun.stderr
    final = pl.read_parquet(out / "bundles.parquet")
    assert final.height == 150 and final["id"].n_unique() == 150


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_workers_exit_at_once_and_quietly_when_the_parent_is_killed(tmp_path):
    tickets = tmp_path / "t"
    make_tickets(tickets, 300, seed=7)
    out = tmp_path / "out"
    env = batch_env(tmp_path, HAMI_BATCH_PART_ROWS="8")
    log = (tmp_path / "stderr.txt").open("wb")
    proc = _batch(tickets, out, 2, env, stderr=log)
    wait_for_part(out, proc)
    workers = children(proc.pid)
    assert len(workers) >= 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = time.monotonic()
    while any(running(w) for w in workers) and time.monotonic() - killed < 5:
        time.sleep(0.05)
    lingering = [w for w in workers if running(w)]
    assert not lingering, f"workers {lingering} outlived their parent by 5 s"
    assert time.monotonic() - killed < 2
    time.sleep(0.3)  # anything a dying worker might still print
    log.close()
    text = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert "Traceback" not in text and "BrokenPipe" not in text, text[-2000:]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path):
    tickets = tmp_path / "t"
    make_tickets(tickets, 200, seed=9)
    ref = _run(tickets, tmp_path / "ref")
    out = tmp_path / "out"
    proc = _batch(tickets, out, 2, batch_env(tmp_path, HAMI_BATCH_PART_SECONDS="0.2"))
    wait_for_part(out, proc)
    workers = [
        w for w in children(proc.pid) if b"spawn_main" in Path(f"/proc/{w}/cmdline").read_bytes()
    ]
    assert proc.poll() is None and workers, "the run ended before a worker could be killed"
    os.kill(workers[0], signal.SIGKILL)
    assert proc.wait(timeout=120) == 0
    got = pl.read_parquet(out / "bundles.parquet")
    assert got.height == 200 and got["id"].n_unique() == 200
    cols = ["id", "digest", "duplicate_of", "category", "rule_id", "n_faults", "error"]
    assert got.select(cols).sort("id").equals(ref.select(cols).sort("id"))


HOOK = """
import datetime as dt
import os


def _crash_on_bundles_named_crash():
    import analyzer.analyze as module

    real = module.load_bundle

    def load_bundle(paths, ruleset, **kwargs):
        if os.path.basename(str(paths[0])) == "crash":
            os._exit(70)  # as a segfault or the OOM killer would: no exception, no answer
        return real(paths, ruleset, **kwargs)

    module.load_bundle = load_bundle


_crash_on_bundles_named_crash()
"""


def test_a_bundle_that_kills_its_worker_is_its_rows_error(tmp_path):
    """Every worker process runs this sitecustomize (inherited PYTHONPATH), which makes the
    analysis of a bundle named `crash` end the process, as a native crash would."""
    tickets = tmp_path / "t"
    for i, name in enumerate(["healthy-single-gpu", "rbac-patch-forbidden", "no-gpu-label"] * 2):
        _copy_sample(name, tickets / f"{i}-{name}")
    _copy_sample("no-gpu-label", tickets / "crash")
    (tickets / "crash" / "note.txt").write_text("makes it differ from its copies\n")
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    env = batch_env(tmp_path, PYTHONPATH=str(tmp_path / "hook"))
    res = subprocess.run(
        [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(tmp_path / "o")]
        + ["--jobs", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    b = _by_name(pl.read_parquet(tmp_path / "o" / "bundles.parquet"))
    assert len(b) == 7
    assert b["crash"]["error"] == "the worker process died on it (exit code 70)"
    others = [r for name, r in b.items() if name != "crash"]
    assert all(r["error"] is None and r["category"] for r in others)
