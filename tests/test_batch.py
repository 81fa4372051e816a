"""Batch: a mixed folder of tickets into tables; resilience, duplicates, resume, summary."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analyzer.batch.run import template_of
from analyzer.cli import app
from analyzer.dev.synth import make_tickets
from conftest import SAMPLES

runner = CliRunner()


@pytest.fixture(scope="module")
def tickets(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tickets")
    for name in ("healthy-single-gpu", "rbac-patch-forbidden", "no-gpu-label"):
        (root / name).mkdir()
        for f in (SAMPLES / name / "bundle").iterdir():
            (root / name / f.name).write_bytes(f.read_bytes())
    (root / "dup-of-healthy").mkdir()
    for f in (root / "healthy-single-gpu").iterdir():
        (root / "dup-of-healthy" / f.name).write_bytes(f.read_bytes())
    (root / "empty").mkdir()
    (root / "junk.tgz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    import io
    import tarfile

    with tarfile.open(root / "evil.tar", "w") as tf:
        info = tarfile.TarInfo("../../x")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    return root


def _batch_cmd(tickets: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "analyzer",
        "batch",
        str(tickets),
        "--out",
        str(out),
        "--jobs",
        "1",
    ]


def _table(out: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(out / f"{name}.parquet")


def test_batch_mixed_folder(tickets, tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["batch", str(tickets), "--out", str(out), "--jobs", "2", "--csv"])
    assert res.exit_code == 0, res.output
    b = _table(out, "bundles").sort("id")
    assert b.height == 7
    by_name = {Path(r["id"]).name: r for r in b.to_dicts()}
    assert by_name["healthy-single-gpu"]["category"] == "healthy"
    assert by_name["rbac-patch-forbidden"]["rule_id"] == "rbac-patch-forbidden"
    assert by_name["no-gpu-label"]["category"] == "no-device-plugin-pod"
    dups = {
        Path(r["id"]).name: Path(r["duplicate_of"]).name for r in b.to_dicts() if r["duplicate_of"]
    }
    assert dups == {"healthy-single-gpu": "dup-of-healthy"}  # the first copy (by order) is analysed
    assert "unsafe archive member name" in by_name["evil.tar"]["error"]
    assert "corrupt" in by_name["junk.tgz"]["error"]
    assert "nothing to analyse" in by_name["empty"]["error"]  # an input error, as `analyze` says
    f = _table(out, "findings")
    assert set(f.columns) >= {
        "bundle_id",
        "rule_id",
        "category",
        "severity",
        "kind",
        "file",
        "line",
    }
    assert f.filter(pl.col("rule_id") == "rbac-patch-forbidden")["line"].to_list()[0] > 0
    assert (out / "bundles.csv").is_file() and (out / "summary.html").is_file()
    html = (out / "summary.html").read_text()
    assert "Rules that never fired" in html and "rbac-patch-forbidden" in html
    # resume: nothing left to do, same tables
    again = runner.invoke(app, ["batch", str(tickets), "--out", str(out), "--jobs", "1"])
    assert again.exit_code == 0
    assert "7 bundles: 7 already analysed, 0 duplicates, 0 to analyse\n" in again.stderr
    assert _table(out, "bundles").sort("id").drop("duration_s").equals(b.drop("duration_s"))


def test_resume_after_kill_gives_the_same_tables(tmp_path):
    tickets = tmp_path / "t"
    make_tickets(tickets, 40, seed=3)
    full = tmp_path / "full"
    subprocess.run(
        _batch_cmd(tickets, full),
        check=True,
        capture_output=True,
    )
    part = tmp_path / "part"
    # a killed run cannot remove its temporary folders: keep them inside tmp_path
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, HAMI_BATCH_PART_ROWS="4", TMPDIR=str(tmp_path / "tmp"))
    proc = subprocess.Popen(
        _batch_cmd(tickets, part),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list((part / "parts").glob("bundles-*.parquet"))) < 2:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = len(list((part / "parts").glob("bundles-*.parquet")))
    assert written >= 2
    subprocess.run(
        _batch_cmd(tickets, part),
        check=True,
        capture_output=True,
        env=env,
    )
    cols = [
        "id",
        "path",
        "digest",
        "duplicate_of",
        "category",
        "rule_id",
        "severity",
        "n_faults",
        "error",
    ]
    a = _table(full, "bundles").select(cols).sort("id")
    b = _table(part, "bundles").select(cols).sort("id")
    assert a.height == 40 and a.equals(b)
    fa = _table(full, "findings").sort("bundle_id", "rule_id")
    fb = _table(part, "findings").sort("bundle_id", "rule_id")
    assert fa.equals(fb)


def test_summary_only_rebuilds(tickets, tmp_path):
    out = tmp_path / "o"
    runner.invoke(app, ["batch", str(tickets), "--out", str(out), "--jobs", "1"])
    (out / "summary.html").unlink()
    res = runner.invoke(app, ["batch", "--summary-only", str(out)])
    assert res.exit_code == 0 and (out / "summary.html").is_file()
    assert runner.invoke(app, ["batch", "--summary-only", str(tmp_path / "nope")]).exit_code == 2


def test_templates_mask_variable_parts():
    a = template_of(
        'E0815 09:06:21.709851  412873 register.go:112] nvml error uuid= GPU-5f0b6a19-e2c4-4d83-b7a5-91c3d6e0f272 idx=3 node="gpu-a"'
    )
    b = template_of(
        'E0901 11:00:00.000001     77 register.go:112] nvml error uuid= GPU-aaaaaaaa-e2c4-4d83-b7a5-91c3d6e0f272 idx=7 node="gpu-b"'
    )
    assert a == b and "<uuid>" in a and "<n>" in a
