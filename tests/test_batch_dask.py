"""`batch` on a real dask.distributed cluster of separate worker processes on 127.0.0.1: the same
tables as the local executor, a worker killed mid-run loses and duplicates nothing, a killed run
resumes; fsspec URLs for inputs and the output folder."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.dev.synth import make_tickets
from conftest import SAMPLES, batch_env, run_cli, wait_for_part

pytest.importorskip("distributed", reason="the [dask] extra is not installed")
fsspec = pytest.importorskip("fsspec", reason="the [dask] extra is not installed")

DASK = Path(sys.executable).with_name("dask")
TABLES = ("bundles", "nodes", "findings", "warnings", "unexplained")
N = 120
runner = CliRunner()


@pytest.fixture(scope="module")
def tickets(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dask-tickets")
    make_tickets(root, N, seed=11)
    return root


@pytest.fixture(scope="module")
def local_tables(tickets, tmp_path_factory) -> dict[str, pl.DataFrame]:
    """The reference: the local executor on the same tickets."""
    out = tmp_path_factory.mktemp("local-out")
    res = runner.invoke(app, ["batch", str(tickets), "--out", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    return _tables(out)


def _tables(out: Path) -> dict[str, pl.DataFrame]:
    """Every table row for row, in a canonical order, without the timings."""
    tables = {}
    for name in TABLES:
        frame = pl.read_parquet(out / f"{name}.parquet")
        frame = frame.drop("duration_s") if "duration_s" in frame.columns else frame
        tables[name] = frame.sort(frame.columns, nulls_last=True)
    return tables


def _assert_same(got: dict[str, pl.DataFrame], want: dict[str, pl.DataFrame]) -> None:
    for name in TABLES:
        assert got[name].equals(want[name]), name


@pytest.fixture
def cluster(tmp_path):
    """`dask scheduler` and two `dask worker` processes (no nanny: a killed one stays dead)."""
    if not DASK.exists():
        pytest.skip("the dask command is not installed beside this Python")
    sched_file = tmp_path / "scheduler.json"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    common = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
            + ["--scheduler-file", str(sched_file)],
            **common,
        )
    ]
    address = _scheduler_address(sched_file, deadline=time.monotonic() + 30)
    workers = [
        subprocess.Popen(
            [str(DASK), "worker", address, "--host", "127.0.0.1", "--nthreads", "1"]
            + ["--no-nanny", "--no-dashboard", "--local-directory", str(tmp_path / f"w{i}")],
            **common,
        )
        for i in range(2)
    ]
    procs += workers
    try:
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=30)
        yield address, workers
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()


def _scheduler_address(sched_file: Path, deadline: float) -> str:
    """The address in the scheduler's file, once the file is whole: the scheduler creates it
    before it writes it, and a loaded machine showed the empty file."""
    while True:
        try:
            return json.loads(sched_file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _batch(tickets, out, *args: str, env=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(out), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _fast_parts(tmp_path: Path) -> dict[str, str]:
    return batch_env(tmp_path, HAMI_BATCH_PART_SECONDS="0.2")


def test_worker_killed_mid_run_loses_and_duplicates_nothing(
    cluster, tickets, local_tables, tmp_path
):
    address, workers = cluster
    out = tmp_path / "out"
    proc = _batch(tickets, out, "--scheduler", address, env=_fast_parts(tmp_path))
    wait_for_part(out, proc)
    assert proc.poll() is None, "the run ended before a worker could be killed"
    workers[0].send_signal(signal.SIGKILL)
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-3000:]
    # progress is silent for a run shorter than its quiet period (analyzer/progress.QUIET_FOR),
    # which an idle machine reaches: when it spoke, its last line counted every bundle
    shown = re.findall(r"^batch: (\d+)/(\d+), .* bundles/s", stderr, re.M)
    assert not shown or shown[-1][0] == shown[-1][1], shown
    got = _tables(out)
    assert got["bundles"].height == N and got["bundles"]["id"].n_unique() == N
    _assert_same(got, local_tables)


def test_killed_run_resumes_on_the_cluster(cluster, tickets, local_tables, tmp_path):
    address, _workers = cluster
    out = tmp_path / "out"
    env = _fast_parts(tmp_path)
    proc = _batch(tickets, out, "--scheduler", address, env=env)
    wait_for_part(out, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    kept = pl.read_parquet(list((out / "parts").glob("bundles-*.parquet"))).height
    assert 0 < kept < N
    again = _batch(tickets, out, "--scheduler", address, env=env)
    _stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr[-3000:]
    assert f"{kept} already analysed" in stderr
    _assert_same(_tables(out), local_tables)


def test_local_dask_cluster_with_file_urls_gives_the_local_tables(tickets, local_tables, tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(
        app,
        ["batch", tickets.as_uri(), "--out", out.as_uri(), "--executor", "dask", "-j", "2"],
    )
    assert res.exit_code == 0, res.output
    got = _tables(out)
    # the ids and paths are the URLs given; everything else is the same row for row
    for name, frame in got.items():
        for col in ("id", "path", "bundle_id", "duplicate_of"):
            if col in frame.columns:
                frame = frame.with_columns(pl.col(col).str.replace("^file://", ""))
        got[name] = frame.sort(frame.columns, nulls_last=True)
    _assert_same(got, local_tables)


def test_memory_urls_in_and_out(tmp_path):
    """Bundles fetched through fsspec (a temporary copy for the reader) and the parts, tables and
    summary written to an fsspec folder; a second run resumes from the parts stored there."""
    mem = fsspec.filesystem("memory")
    for folder in ("/tickets", "/out"):  # the memory store lives as long as this process
        if mem.exists(folder):
            mem.rm(folder, recursive=True)
    for name in ("healthy-single-gpu", "rbac-patch-forbidden"):
        for f in (SAMPLES / name / "bundle").iterdir():
            mem.pipe(f"/tickets/{name}/{f.name}", f.read_bytes())
    make_tickets(tmp_path / "t", 12, seed=2)
    archive = next(p for p in sorted((tmp_path / "t").iterdir()) if p.name.endswith(".tgz"))
    mem.pipe("/tickets/one.tgz", archive.read_bytes())
    # the memory store is this process's: analysed here (-j 0), not in a worker process
    args = ["batch", "memory://tickets", "--out", "memory://out", "-j", "0"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    b = pl.read_parquet(mem.cat("/out/bundles.parquet"))
    rows = {r["id"].rsplit("/", 1)[1]: r for r in b.to_dicts()}
    assert set(rows) == {"healthy-single-gpu", "rbac-patch-forbidden", "one.tgz"}
    assert rows["healthy-single-gpu"]["category"] == "healthy"
    assert rows["rbac-patch-forbidden"]["rule_id"] == "rbac-patch-forbidden"
    assert rows["one.tgz"]["error"] is None and rows["one.tgz"]["nodes"]
    assert mem.exists("/out/summary.html") and mem.exists("/out/findings.parquet")
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "3 already analysed" in again.stderr


def test_usage_errors_are_one_line(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [
        (["--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:1"], "Dask scheduler"),
        (
            ["--out", str(tmp_path / "o"), "--executor", "spark"],
            "'spark' is not one of 'local', 'dask'",
        ),
        (["--out", str(a_file / "sub")], "cannot write"),
    ]
    for args, words in cases:
        res = run_cli("batch", str(SAMPLES), *args, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s")
        assert res.returncode == 2 and words in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    res = run_cli("batch", "file:///nonexistent/tickets", "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "no such file" in res.stderr


def test_list_file_mixes_paths_and_urls(tmp_path):
    for name in ("healthy-single-gpu", "rbac-patch-forbidden"):
        (tmp_path / name).mkdir()
        for f in (SAMPLES / name / "bundle").iterdir():
            (tmp_path / name / f.name).write_bytes(f.read_bytes())
    url = (tmp_path / "rbac-patch-forbidden").as_uri()
    (tmp_path / "tickets.list").write_text(f"# two tickets\nhealthy-single-gpu\n{url}\n")
    out = tmp_path / "out"
    res = runner.invoke(
        app, ["batch", str(tmp_path / "tickets.list"), "--out", str(out), "-j", "1"]
    )
    assert res.exit_code == 0, res.output
    rows = {r["id"]: r for r in pl.read_parquet(out / "bundles.parquet").to_dicts()}
    assert rows[url]["rule_id"] == "rbac-patch-forbidden"
    assert rows[str(tmp_path / "healthy-single-gpu")]["category"] == "healthy"
