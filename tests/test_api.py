"""The one analysis API: `analyze(inputs, AnalyzeOptions)` for paths, issues, threads, readers."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from analyzer.analyze import AnalyzeOptions, Issue, RedactOptions, Thread, analyze
from analyzer.bundle.reader import BundleReader
from analyzer.bundle.thread import Post
from analyzer.errors import BundleError
from conftest import REPO, SAMPLES

NVML = "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n"


def test_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        AnalyzeOptions().node = "n1"  # type: ignore[misc]


def test_paths_give_the_bundle_its_report_and_its_digest(ruleset):
    result = analyze(
        [str(SAMPLES / "rbac-patch-forbidden" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    )
    assert result.report.primary.rule_id == "rbac-patch-forbidden"
    assert result.digest == result.bundle.digest.encode() and len(result.bundle.digest) == 64
    assert result.lang == "en" and result.thread is None


def test_an_issue_digests_its_text_and_chooses_its_language_from_its_prose(ruleset):
    text = f"# 显卡插件崩溃\n\n插件启动失败:\n\n```\n{NVML}```\n"
    seen = []

    def choose(prose: str) -> str:
        seen.append(prose)
        return "zh" if "插件" in prose else "en"

    result = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset, lang=choose))
    assert result.lang == "zh" and "插件启动失败" in seen[0]
    assert result.report.primary.rule_id == "nvml-init-failed"
    assert result.digest == text.encode()  # what `analyze --from-issue --format markdown` marks
    assert result.thread is not None and result.thread.problems == []


def test_paths_with_nothing_to_analyse_are_an_error_an_empty_issue_is_not(ruleset, tmp_path):
    (tmp_path / "notes.bin").write_bytes(b"\x00\x01")
    with pytest.raises(BundleError, match=r"^nothing to analyse"):
        analyze([str(tmp_path)], AnalyzeOptions(ruleset=ruleset))
    empty = analyze(Issue(b"# it does not work\n\nplease help"), AnalyzeOptions(ruleset=ruleset))
    assert empty.report.primary.category == "inconclusive"


def test_a_thread_and_its_first_post_as_an_issue_agree(ruleset):
    text = f"# crash\n\n```\n{NVML}```\n"
    as_issue = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset))
    as_thread = analyze(Thread((Post("issue", text),)), AnalyzeOptions(ruleset=ruleset))
    assert as_thread.report.primary == as_issue.report.primary
    assert as_thread.digest == as_issue.digest


def test_redaction_is_a_reader_below_the_analysis(ruleset):
    bundle = SAMPLES / "rbac-patch-forbidden" / "bundle"
    plain = analyze([str(bundle)], AnalyzeOptions(ruleset=ruleset))
    hidden = analyze([str(bundle)], AnalyzeOptions(ruleset=ruleset, redact=RedactOptions()))
    assert hidden.report.primary.rule_id == plain.report.primary.rule_id
    real = plain.report.nodes[0].node
    assert real and hidden.report.nodes[0].node != real
    # --node may name the real node: the token map finds its token
    by_real_name = analyze(
        [str(bundle)], AnalyzeOptions(ruleset=ruleset, node=real, redact=RedactOptions())
    )
    assert by_real_name.report.nodes[0].node == hidden.report.nodes[0].node


def test_an_open_reader_is_analysed_as_it_is(ruleset):
    reader = BundleReader()
    try:
        reader.add_bytes("plugin.log", NVML.encode())
        assert (
            analyze(reader, AnalyzeOptions(ruleset=ruleset)).report.primary.rule_id
            == "nvml-init-failed"
        )
        with pytest.raises(ValueError, match="redact its inputs"):
            analyze(reader, AnalyzeOptions(ruleset=ruleset, redact=RedactOptions()))
    finally:
        reader.close()


# the stages below `analyze` that callers outside analyze.py may still use, and why
STAGE_USERS = {
    ("analyzer/cli.py", "load_bundle"): "`timeline` reads the bundle, then its timeline stage",
    ("analyzer/cli.py", "node_timelines"): "`timeline`: the per-node timeline stage, no rules",
    ("analyzer/dev/samples.py", "matcher_for"): "docstring fixtures scan pasted lines",
}
API = {"analyze", "AnalyzeOptions", "Analysis", "Issue", "Thread", "RedactOptions", "Inputs"}


def test_every_caller_goes_through_analyze():
    """No module of the package calls a stage of analyze.py directly, except those listed."""
    offenders = []
    for path in sorted((REPO / "analyzer").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "analyzer.analyze":
                offenders += [
                    f"{rel}: {a.name}"
                    for a in node.names
                    if a.name not in API and (rel, a.name) not in STAGE_USERS
                ]
    assert offenders == []
