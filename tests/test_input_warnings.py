"""Each input warning names its file as the stage that raised it knew it, not as a reader of
its text would guess: a file name holding ": " is named whole (the batch `warnings.parquet`
groups by that column), and under `--redact` the file is the redacted copy's name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.analyze import AnalyzeOptions, RedactOptions, Thread, analyze
from analyzer.bundle.thread import Post
from conftest import SAMPLES

HEALTHY = SAMPLES / "healthy-single-gpu" / "bundle"


def _bundle(tmp_path: Path) -> Path:
    """The healthy sample with a link the reader does not follow and a log in Latin-1 that
    recognition decodes with a warning, both named with ": " (legal on Linux)."""
    root = tmp_path / "bundle"
    shutil.copytree(HEALTHY, root)
    (root / "gpu-node-1: old plugin.log").symlink_to(root / "device-plugin.log")
    (root / "dmesg: gpu-node-1.txt").write_bytes(b"NVRM: Xid (PCI:0000:3b:00): 79, caf\xe9\n")
    return root


def _warnings(analysis) -> list[tuple[str, str | None, str]]:
    return sorted((w.source, w.file, w.text) for w in analysis.report.input_warnings)


def test_a_file_name_with_a_colon_is_named_whole(tmp_path, ruleset):
    got = _warnings(analyze([str(_bundle(tmp_path))], AnalyzeOptions(ruleset=ruleset)))
    assert got == [
        (
            "read",
            "gpu-node-1: old plugin.log",
            "gpu-node-1: old plugin.log: symbolic link not followed",
        ),
        (
            "recognise",
            "dmesg: gpu-node-1.txt",
            "dmesg: gpu-node-1.txt: non-UTF-8 bytes replaced with U+FFFD",
        ),
    ]


def test_redacted_warnings_name_the_redacted_file(tmp_path, ruleset):
    """The node's name is replaced in the file column as in the text (the redacted copy's
    files are named the same way)."""
    options = AnalyzeOptions(ruleset=ruleset, redact=RedactOptions())
    analysis = analyze([str(_bundle(tmp_path))], options)
    got = _warnings(analysis)
    assert [(source, file) for source, file, _ in got] == [
        ("read", "node-1: old plugin.log"),
        ("recognise", "dmesg: node-1.txt"),
    ]
    assert all(text.startswith(f"{file}: ") for _, file, text in got)
    assert "gpu-node-1" not in repr(got)
    assert "dmesg: node-1.txt" in {f.name for f in analysis.bundle.inventory.files}


@pytest.mark.parametrize("comments", [1, 2])
def test_a_replaced_paste_is_named_by_selection(ruleset, comments):
    """An issue thread keeps the newest paste of a kind; each older one is a warning of the
    selection naming the block it left out."""
    node = (HEALTHY / "node.yaml").read_text()
    posts = [Post("issue", f"# GPU not seen\n\n```yaml\n{node}```\n")]
    posts += [Post(f"comment-{i}", f"now:\n\n```yaml\n{node}```\n") for i in range(1, comments + 1)]
    # the same paste twice is one file (its latest copy): change each comment's a little
    posts = [
        Post(p.label, p.text.replace("gpu-node-1\n", f"gpu-node-1\n  uid: u{i}\n", 1))
        for i, p in enumerate(posts)
    ]
    report = analyze(Thread(tuple(posts)), AnalyzeOptions(ruleset=ruleset)).report
    pastes = [w for w in report.input_warnings if w.source == "select" and "-block-" in w.text]
    older = ["issue-block-01.yaml", *[f"comment-{i}-block-01.yaml" for i in range(1, comments)]]
    assert [(w.file, w.text) for w in pastes] == [
        (name, f"{name}: node replaced by the newer one in comment {comments}") for name in older
    ]
