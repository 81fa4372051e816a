"""The README stays short and true: every command is described, every link resolves, every
option it shows exists, and the screenshot it shows is there."""

from __future__ import annotations

import re

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
