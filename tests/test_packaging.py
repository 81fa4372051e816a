"""The wheel carries the rules, templates and schema: a plain install must work anywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

from conftest import REPO


def test_every_rules_folder_is_a_listed_package():
    """setuptools ships only listed packages (and warns about the rest): a new rules/ folder
    must be added to pyproject.toml."""
    import tomllib

    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    folders = {
        "analyzer._rules"
        + (("." + ".".join(p.relative_to(REPO / "rules").parts)) if p != REPO / "rules" else "")
        for p in [REPO / "rules", *(d for d in (REPO / "rules").rglob("*") if d.is_dir())]
    }
    assert folders <= listed, sorted(folders - listed)


def test_wheel_ships_rules_templates_and_schema(tmp_path):
    # build from a copy: setuptools' build/ folder in a working tree can hold files deleted since
    src = tmp_path / "src"
    for part in ("analyzer", "rules"):
        shutil.copytree(REPO / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / part, src / part)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    wheel = next(tmp_path.glob("hami_bundle_analyzer-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    rule_files = {
        p.relative_to(REPO / "rules").as_posix() for p in (REPO / "rules").rglob("*.yaml")
    }
    assert {f"analyzer/_rules/{f}" for f in rule_files} <= names
    assert "analyzer/render/templates/report.html.j2" in names
    assert {"analyzer/render/templates/summary.html.j2", "analyzer/summary/grids.py"} <= names
    assert {"analyzer/batch/executor.py", "analyzer/dev/score.py", "analyzer/dev/synth.py"} <= names
    assert "analyzer/schema/diagnosis.schema.json" in names
    assert "analyzer/schema/rules.schema.json" in names
    shipped = {
        n.removeprefix("analyzer/_rules/")
        for n in names
        if n.startswith("analyzer/_rules/") and n.endswith(".yaml")
    }
    assert shipped == rule_files  # nothing stale, nothing missing
    assert any(n.endswith("entry_points.txt") for n in names)
    # installed from the wheel (not the checkout) and run from elsewhere, it finds its rules
    target = tmp_path / "site"
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), wheel],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    where = subprocess.run(
        [sys.executable, "-c", "import analyzer; print(analyzer.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert where.stdout.startswith(str(target)), where.stdout
    sample = REPO / "sample_bundles" / "rbac-patch-forbidden" / "bundle"

    def installed(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "analyzer", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )

    run = installed("analyze", str(sample), "--format", "json")
    assert run.returncode == 1, run.stderr
    assert json.loads(run.stdout)["primary"]["rule_id"] == "rbac-patch-forbidden"
    # the validated rules are cached by the wheel's RECORD, not by file times: a reinstall of
    # the same code and rules (every file newer) reuses them
    cached = sorted((tmp_path / "cache").rglob("rules-*.pickle"))
    assert len(cached) == 1
    later = cached[0].stat().st_mtime + 100
    for path in (*(target / "analyzer").rglob("*.py"), *(target / "analyzer").rglob("*.yaml")):
        os.utime(path, (later, later))
    again = installed("analyze", str(sample), "--format", "json")
    assert again.stdout == run.stdout
    assert sorted((tmp_path / "cache").rglob("rules-*.pickle")) == cached
    # the GitHub Action installs the same way (pip install "$GITHUB_ACTION_PATH"): the bot, its
    # data (rules/bot.yaml) and the comment's phrases (analyzer/catalogue/messages.yaml) come with it
    assert {"analyzer/bot/run.py", "analyzer/catalogue/messages.yaml"} <= names
    event = tmp_path / "event.json"
    body = "```\nE0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n```"
    event.write_text(json.dumps({"issue": {"number": 1, "title": "显卡插件崩溃", "body": body}}))
    bot = installed("bot", "--event", str(event), "--repo", "o/r", "--dry-run")
    assert bot.returncode == 0, bot.stderr
    assert bot.stdout.startswith("dry-run: plugin-crash-nvml nvml-init-failed (high, zh)")
