"""The whole analysis of one bundle as a pure function of its inputs."""

from __future__ import annotations

from analyzer.bundle.reader import Limits
from analyzer.decisions import build_decisions
from analyzer.diagnosis import Diagnosis
from analyzer.facts import build_contexts
from analyzer.pipeline import ParsedBundle, parse_bundle
from analyzer.rules.engine import diagnose
from analyzer.rules.model import RuleSet
from analyzer.timeline import attach


def analyze_parsed(
    bundle: ParsedBundle, ruleset: RuleSet, node: str | None = None
) -> list[Diagnosis]:
    diags = []
    for ctx in build_contexts(bundle, ruleset, node):
        diag = diagnose(ruleset, ctx, bundle)
        attach(diag, bundle, ctx, ruleset)
        diag.decisions = build_decisions(ctx, ruleset.decisions)
        diags.append(diag)
    return diags


def analyze(
    inputs: list[str], ruleset: RuleSet, node: str | None = None, limits: Limits | None = None
) -> tuple[ParsedBundle, list[Diagnosis]]:
    bundle = parse_bundle(inputs, ruleset, limits)
    return bundle, analyze_parsed(bundle, ruleset, node)


def analyze_issue(
    raw: bytes, ruleset: RuleSet, node: str | None = None
) -> tuple[ParsedBundle, list[Diagnosis]]:
    """A GitHub issue (Markdown or event JSON): its code blocks and prose become the bundle."""
    from analyzer.bundle.issue import issue_from_payload, parse_issue
    from analyzer.bundle.reader import BundleReader
    from analyzer.pipeline import parse_files

    issue = parse_issue(issue_from_payload(raw))
    reader = BundleReader()
    try:
        for name, body in issue.blocks:
            reader.add_bytes(name, body.encode("utf-8", errors="replace"))
        if issue.prose.strip():
            reader.add_bytes("issue-text.md", issue.prose.encode("utf-8", errors="replace"))
        bundle = parse_files(reader, ruleset)
    finally:
        reader.close()
    return bundle, analyze_parsed(bundle, ruleset, node)
