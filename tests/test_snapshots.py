"""Snapshots of the terminal report of every sample in sample_bundles/: what a person reads first.

A change to the renderer or to a rule's text shows up here as a diff to read. The snapshots were
reviewed by reading each one whole; after a change, update them and read the diff again:

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_snapshots.py

The report is rendered at the width used when the output is not a terminal (100 columns) and
without colour; a second test holds the colour and NO_COLOR rules of the console script.
"""

from __future__ import annotations

import os

import pytest

from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.render.terminal import DEFAULT_WIDTH, render_terminal
from conftest import REPO, SAMPLES, run_cli

SNAPSHOTS = REPO / "tests" / "snapshots" / "terminal"
SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "bundle").is_dir())
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_terminal_snapshot(ruleset, sample):
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    text = render_terminal(report, colour=False, width=DEFAULT_WIDTH) + "\n"
    snap = SNAPSHOTS / f"{sample.name}.txt"
    if UPDATE:
        snap.parent.mkdir(parents=True, exist_ok=True)
        snap.write_text(text, encoding="utf-8")
    assert snap.is_file(), (
        f"no snapshot for {sample.name}: run UPDATE_SNAPSHOTS=1 pytest {__file__}"
    )
    assert text == snap.read_text(encoding="utf-8"), (
        f"the terminal report of {sample.name} changed: read the diff, then "
        "UPDATE_SNAPSHOTS=1 pytest tests/test_snapshots.py"
    )


def test_no_snapshot_without_its_sample():
    stale = {p.stem for p in SNAPSHOTS.glob("*.txt")} - {p.name for p in SAMPLE_DIRS}
    assert not stale, f"snapshots of samples that no longer exist: {sorted(stale)}"


def test_colour_only_on_request_of_a_terminal(ruleset):
    """Piped output has no escape codes; with NO_COLOR or --no-color neither. (A terminal is not
    available to a test, so colour itself is checked on the renderer.)"""
    bundle = str(SAMPLES / "xid79-gpu-lost" / "bundle")
    piped = run_cli("analyze", bundle)
    assert piped.returncode == 1 and "\x1b[" not in piped.stdout
    assert "\x1b[" not in run_cli("analyze", bundle, "--no-color").stdout
    report = analyze([bundle], AnalyzeOptions(ruleset=ruleset)).report
    coloured = render_terminal(report, colour=True)
    assert "\x1b[1;31m✖ CRITICAL\x1b[0m" in coloured  # the verdict in its severity's colour
    assert "\x1b[33m!\x1b[0m" in coloured  # a warning's symbol in amber
    assert coloured.count("\x1b[") % 2 == 0


def test_wants_colour_follows_no_color(monkeypatch):
    from analyzer.render.terminal import wants_colour

    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_colour(Tty()) and not wants_colour(Tty(), disabled=True)
    assert not wants_colour(object())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_colour(Tty())
    monkeypatch.setenv("NO_COLOR", "")  # an empty NO_COLOR does not count (no-color.org)
    assert wants_colour(Tty())


def test_paths_inside_a_collect_archive_are_cited_from_its_top(tmp_path, ruleset):
    """A `collect` archive's members are `bundle-T/logs/x.log` inside `hami-bundle-T.tar.gz`:
    the reports name the archive once and cite `logs/x.log`, not the archive path before it."""
    import tarfile

    from analyzer.render.html import render_html

    archive = tmp_path / "hami-bundle-20260815T102000Z.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for f in sorted((SAMPLES / "xid79-gpu-lost" / "bundle").iterdir()):
            tf.add(f, arcname=f"bundle-20260815T102000Z/logs/{f.name}")
    report = analyze([str(archive)], AnalyzeOptions(ruleset=ruleset)).report
    text = render_terminal(report)
    assert text.startswith(f"Bundle: {archive.name} (file names below are inside it)")
    assert text.count("tar.gz") == 1 and "logs/device-plugin.log:44" in text
    page = render_html(report)
    body = page[page.index("<main>") :]
    assert body.count("hami-bundle-20260815T102000Z.tar.gz") == 1  # the note at the top
    assert "logs/device-plugin.log:44" in body and "tar.gz!" not in body
