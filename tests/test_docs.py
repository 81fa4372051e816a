"""The README stays short and true: every command is described, every link resolves, every
option it shows exists, and the screenshot it shows is there."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from analyzer.cli import app
from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _commands() -> dict[str, object]:
    group = typer.main.get_command(app)
    out = {}
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            out.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            out[name] = cmd
    return out


def test_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_every_command_is_in_the_readme():
    for name in _commands():
        assert f"hami-analyzer {name}" in README, f"the README shows no usage of `{name}`"


def test_options_the_readme_shows_exist():
    """`hami-analyzer CMD ... --opt` in a README code line names an option CMD has."""
    commands = _commands()
    for line in README.splitlines():
        m = re.match(r"\s*hami-analyzer ((?:rules|dev) \w+|\w+)(.*)", line)
        if not m or m.group(1) not in commands:
            continue
        names = {n for p in commands[m.group(1)].params for n in (*p.opts, *p.secondary_opts)}
        names |= {"-h", "--help"}
        shown = re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", m.group(2).split("#")[0])
        assert set(shown) <= names, (line, set(shown) - names)


def test_links_resolve():
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"


def test_screenshot_is_small():
    shot = REPO / "docs" / "report.png"
    assert shot.is_file() and 10_000 < shot.stat().st_size < 300_000


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_demo_is_short_and_ends_with_the_report(tmp_path):
    """`make demo` (the README's first command) prints fewer than 20 lines, the first run's one
    line about creating .venv included, and its last line is the path of the report it wrote.
    Run on a copy of the Makefile and the demo sample, with this checkout's environment."""
    venv = Path(sys.executable).parent.parent
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    demo = Path("sample_bundles") / "annotation-health-omitted" / "bundle"
    shutil.copytree(REPO / demo, tmp_path / demo)
    res = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={venv}", "-o", f"{venv}/.installed"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) + 1 < 20, res.stdout  # + "Creating .venv ..." on a fresh clone
    assert lines[0].startswith("Node gpu-node-2") and "Verdict:" in lines[1]
    report = tmp_path / "out" / "report.html"
    assert lines[-1] == f"Report written to {report}" and report.is_file()
