"""The command line: exit codes, formats, one-line errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from analyzer.cli import app
from conftest import SAMPLES

runner = CliRunner()


def test_analyze_json_and_exit_codes():
    res = runner.invoke(
        app, ["analyze", str(SAMPLES / "rbac-patch-forbidden" / "bundle"), "--format", "json"]
    )
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == "2.0"
    assert doc["primary"]["rule_id"] == "rbac-patch-forbidden"
    assert doc["primary"]["category"] == "rbac-patch-forbidden"
    f = next(f for f in doc["findings"] if f["rule_id"] == "rbac-patch-forbidden")
    assert {"rule_id", "category", "severity", "kind", "evidence"} <= set(f)
    assert f["evidence"][0]["file"] == "device-plugin.log" and f["evidence"][0]["line"] > 0
    healthy = runner.invoke(
        app, ["analyze", str(SAMPLES / "healthy-single-gpu" / "bundle"), "-f", "json"]
    )
    assert healthy.exit_code == 0
    assert json.loads(healthy.stdout)["primary"]["category"] == "healthy"


def test_terminal_output_and_missing_input(tmp_path):
    res = runner.invoke(app, ["analyze", str(SAMPLES / "no-gpu-label" / "bundle")])
    assert res.exit_code == 1
    assert "kubectl label node gpu-node-4 gpu=on --overwrite" in res.stdout
    bad = runner.invoke(app, ["analyze", str(tmp_path / "missing")])
    assert bad.exit_code == 2
    assert bad.stderr.strip().count("\n") == 0 and "no such file or directory" in bad.stderr


def test_inspect_text_and_json():
    res = runner.invoke(app, ["inspect", str(SAMPLES / "annotation-health-omitted" / "bundle")])
    assert res.exit_code == 0
    assert "absent health means unhealthy" in res.stdout
    js = json.loads(
        runner.invoke(
            app, ["inspect", str(SAMPLES / "annotation-health-omitted" / "bundle"), "-f", "json"]
        ).stdout
    )
    devs = js["nodes"][0]["register"]["devices"]
    assert [d["health"] for d in devs] == [True, False] and "health" in devs[1]["absent"]
    # the plugin log of this sample holds three "Start working on node" lines: two restarts
    crash = str(SAMPLES / "nvml-init-error" / "bundle")
    assert "restarts: 2" in runner.invoke(app, ["inspect", crash]).stdout
    stats = json.loads(runner.invoke(app, ["inspect", crash, "-f", "json"]).stdout)["logs"]
    assert [s["restarts"] for s in stats if s["kind"] == "device-plugin-log"] == [2]


def test_rules_commands():
    assert runner.invoke(app, ["rules", "lint"]).exit_code == 0
    listing = runner.invoke(app, ["rules", "list"])
    assert "rbac-patch-forbidden" in listing.stdout
    page = runner.invoke(app, ["rules", "show", "unhealthy-gpu-in-annotation"])
    assert "## What it detects" in page.stdout and "## Fix" in page.stdout
    assert runner.invoke(app, ["rules", "show", "nope"]).exit_code == 2


def test_internal_error_is_one_line(monkeypatch, capsys):
    """A bug in the analyzer prints one line and exits 3, never a traceback."""
    from analyzer import cli

    def boom(*_a, **_k):
        raise RuntimeError("synthetic failure")

    monkeypatch.setattr("analyzer.analyze.analyze", boom)
    monkeypatch.setattr(
        "sys.argv", ["hami-analyzer", "analyze", str(SAMPLES / "no-gpu-label" / "bundle")]
    )
    monkeypatch.delenv("HAMI_ANALYZER_DEBUG", raising=False)
    assert cli.run() == 3
    err = capsys.readouterr().err
    assert (
        err.strip().count("\n") == 0 and "internal error (RuntimeError: synthetic failure)" in err
    )


def test_console_process_without_a_writable_cache(tmp_path):
    """The real process: caches that cannot be written cost speed only, and the output of the
    fast exit (no interpreter teardown) is complete, with the right exit status."""
    import os
    import subprocess
    import sys

    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    env = dict(os.environ, XDG_CACHE_HOME=str(blocked / "cache"))
    bundle = str(SAMPLES / "rbac-patch-forbidden" / "bundle")
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "analyze", bundle, "--format", "html"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.rstrip().endswith("</html>") and "rbac-patch-forbidden" in proc.stdout
    assert proc.stderr == ""
    bad = subprocess.run(
        [sys.executable, "-m", "analyzer", "analyze", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and bad.stdout == ""
