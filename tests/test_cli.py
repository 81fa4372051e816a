"""The command line: exit codes, formats, one-line errors."""

from __future__ import annotations

import json
import re

import pytest
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
    assert doc["schema_version"] == "2.1"
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


# ---- help and option values (issue 22) -------------------------------------------------------
def _all_commands():
    import typer

    group = typer.main.get_command(app)
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from ((f"{name} {sub}".split(), c) for sub, c in cmd.commands.items())
        else:
            yield [name], cmd


def test_help_describes_every_option_at_any_width():
    """Plain help: `-h` works, usage names arguments plainly, every option has a description,
    and a choice list is never broken across lines, at 60 or 120 columns."""
    from conftest import run_cli

    for path, cmd in _all_commands():
        for p in cmd.params:
            assert p.help, f"{' '.join(path)} {p.name}: no help"
        for width in ("60", "120"):
            out = run_cli(*path, "-h", COLUMNS=width).stdout
            assert out.startswith("Usage: hami-analyzer"), out[:200]
            assert "{" not in out.splitlines()[0]
            for line in out.splitlines():
                assert not re.search(r"<[\w|-]+$", line.strip()), f"choice list cut: {line!r}"
    top = run_cli("-h", COLUMNS="80").stdout
    assert "analyze   Diagnose a bundle" in top and "╭" not in top and "--version" in top
    assert run_cli("--version").stdout.strip() == __import__("analyzer").__version__


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["inspect", "-f", "yaml"], "'yaml' is not one of 'text', 'json'"),
        (["analyze", "-f", "yaml"], "'yaml' is not one of 'terminal', 'json', 'markdown', 'html'"),
        (
            ["timeline", "--source", "device-plugin"],
            "use one of apiserver-log, containerd-config, device-plugin-log",
        ),
        (["timeline", "--severity", "loud"], "use info, warning, error or fatal"),
        (["batch", "--executor", "k8s", "--out", "x"], "'k8s' is not one of 'local', 'dask'"),
        (["rules", "facts", "-f", "csv"], "'csv' is not one of 'text', 'json'"),
    ],
)
def test_a_choice_outside_its_values_is_refused_with_them(args, fragment):
    from conftest import run_cli

    bundle = str(SAMPLES / "xid79-gpu-lost" / "bundle")
    full = [
        *args[:1],
        *(["x"] if args[0] == "batch" else [bundle] if args[0] != "rules" else []),
        *args[1:],
    ]
    res = run_cli(*full)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert fragment in res.stderr, res.stderr


def test_timeline_severity_takes_words_and_letters():
    bundle = str(SAMPLES / "xid79-gpu-lost" / "bundle")
    words = runner.invoke(app, ["timeline", bundle, "--severity", "warning"])
    letter = runner.invoke(app, ["timeline", bundle, "--severity", "W"])
    assert words.exit_code == letter.exit_code == 0 and words.stdout == letter.stdout
    assert words.stdout and " I " not in words.stdout


def test_batch_without_any_bundle_is_a_usage_error(tmp_path):
    from conftest import run_cli

    (tmp_path / "empty").mkdir()
    res = run_cli("batch", str(tmp_path / "empty"), "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "no bundle to analyse" in res.stderr
    assert not (tmp_path / "out").exists()


def test_rules_list_and_show_read_as_text():
    listing = runner.invoke(app, ["rules", "list"]).stdout.splitlines()
    assert listing[0].split()[:4] == ["RULE", "KIND", "SEVERITY", "CATEGORY"]
    assert not any("{{" in line or "{%" in line for line in listing)
    xid = next(line for line in listing if line.startswith("xid-marked-unhealthy"))
    assert xid.endswith("XID <xid> marked GPU <uuid> unhealthy")
    res = runner.invoke(app, ["rules", "show", "nvml-init"])
    assert res.exit_code == 2 and "did you mean nvml-init-failed" in res.stderr
