"""The whole analysis of one bundle as a pure function of its inputs."""

from __future__ import annotations

from analyzer.bundle.reader import Limits
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
        diags.append(diag)
    return diags


def analyze(
    inputs: list[str], ruleset: RuleSet, node: str | None = None, limits: Limits | None = None
) -> tuple[ParsedBundle, list[Diagnosis]]:
    bundle = parse_bundle(inputs, ruleset, limits)
    return bundle, analyze_parsed(bundle, ruleset, node)
