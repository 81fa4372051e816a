"""Semantic checks of a loaded rule set, one small class each with typed issues. Errors stop
the load (a rule that names an unknown fact or compares a string fact with `true` can never
work); warnings are printed by `hami-analyzer rules lint`, which fails CI on either. Condition
nodes check themselves (Cond.check); `Conditions` runs those checks."""

from __future__ import annotations

from collections.abc import Iterator

import regex

from analyzer.facts.registry import spec_of
from analyzer.rules.conditions import Cond, required_signatures, signatures_in
from analyzer.rules.issues import Issue
from analyzer.rules.model import Rule, RuleSet

_TEMPLATE_FACT_RE = regex.compile(r"""fact\(\s*['"]([^'"]+)['"]""")
_TEMPLATE_CAPTURE_RE = regex.compile(r"""captures\[\s*['"]([\w-]+)['"]\s*\]""")
# `captures.get('sig')` in a template: context the rule shows when that line exists, on purpose
_TEMPLATE_GUARD_RE = regex.compile(r"""captures\.get\(\s*['"]([\w-]+)['"]""")


def _conditions(rule: Rule) -> Iterator[Cond]:
    for root in (rule.when, rule.unless):
        if root is not None:
            yield from root.walk()


def _templates(rule: Rule, lang: str | None = None) -> list[str]:
    """The rule's template texts: every language's (None) or one language's."""
    langs = ("en", "zh") if lang is None else (lang,)
    out: list[str] = []
    for la in langs:
        if la == "zh" and rule.zh is None:
            continue
        title, explanation, steps = rule.texts(la)
        out += [title, explanation, *[s.text for s in steps]]
    return out + [s.command for s in rule.remediation if s.command]


def _reads(texts: list[str]) -> set[str]:
    return {
        f"{what}:{name}"
        for text in texts
        for what, rx in (("fact", _TEMPLATE_FACT_RE), ("captures", _TEMPLATE_CAPTURE_RE))
        for name in rx.findall(text)
    } | {f"captures:{sid}" for text in texts for sid in _TEMPLATE_GUARD_RE.findall(text)}


class Check:
    """One semantic check over the whole rule set."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:  # pragma: no cover - abstract
        raise NotImplementedError


def _rule_issue(level: str, rule: Rule, message: str) -> Issue:
    return Issue(level, rule.file, rule.line, f"rule {rule.id}: {message}")


class UnknownFacts(Check):
    """Every fact a template names is declared in the registry (conditions are checked when
    they are parsed)."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for rule in rs.rules.values():
            paths = {p for text in _templates(rule) for p in _TEMPLATE_FACT_RE.findall(text)}
            for path in sorted(paths):
                if path.endswith("."):
                    continue  # a template builds the rest of the path (fact('cdi.devices.' ~ k))
                if spec_of(path) is None:
                    msg = f"unknown fact {path!r} (see `hami-analyzer rules facts`)"
                    yield _rule_issue("error", rule, msg)


class Conditions(Check):
    """Each condition node's own check: operands of the fact's type (`eq: true` on a string
    label never matches), age_of on a datetime, `in:` naming kinds of the catalogue."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for rule in rs.rules.values():
            for c in _conditions(rule):
                yield from c.check(rule, rs.catalogue)


class SignatureExamples(Check):
    """Every signature shows real lines it matches, and each example behaves as declared."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for s in rs.signatures.values():

            def issue(level: str, msg: str, s=s) -> Issue:
                return Issue(level, s.file, s.line, f"signature {s.id}: {msg}")

            if not s.examples_match:
                yield issue(
                    "warning", "no `examples: match:` line (give a real line it must match)"
                )
            for ex in s.examples_match:
                if s.compiled.search(ex) is None:
                    yield issue("error", f"example does not match: {ex[:80]!r}")
            for ex in s.examples_no_match:
                if s.compiled.search(ex) is not None:
                    yield issue("error", f"no_match example matches: {ex[:80]!r}")


class ReferencesResolve(Check):
    """`explains` names rules, `collect` names kinds that have a command."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for rule in rs.rules.values():
            for rid in rule.explains:
                if rid not in rs.rules:
                    yield _rule_issue("error", rule, f"explains unknown rule {rid!r}")
                elif rid == rule.id:
                    yield _rule_issue("error", rule, "explains itself")
            for kid in rule.collect:
                kind = rs.catalogue.get(kid)
                if kind is None:
                    yield _rule_issue("error", rule, f"collect names unknown kind {kid!r}")
                elif not kind.collect:
                    msg = f"collect names kind {kid!r}, which has no command"
                    yield _rule_issue("error", rule, msg)


class TemplateCaptures(Check):
    """A template reads captures['sig'] only of a signature every firing of the rule has lines
    of, or guards the read with captures.get('sig') (optional context): an unguarded read of a
    signature from one branch of an `any` fails when another branch fires."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for rule in rs.rules.values():
            used = set(signatures_in(rule.when)) | set(signatures_in(rule.unless))
            texts = _templates(rule)
            guarded = {sid for text in texts for sid in _TEMPLATE_GUARD_RE.findall(text)}
            required = required_signatures(rule.when)
            reads = {sid for text in texts for sid in _TEMPLATE_CAPTURE_RE.findall(text)}
            for sid in sorted(reads):
                if sid not in rs.signatures:
                    yield _rule_issue("error", rule, f"template reads unknown signature {sid!r}")
                elif sid in guarded:
                    continue
                elif sid not in used:
                    msg = f"template reads captures of {sid!r}, which its conditions never use"
                    yield _rule_issue("warning", rule, msg)
                elif sid not in required:
                    msg = (
                        f"template reads captures of {sid!r}, which not every firing has:"
                        f" use captures.get({sid!r})"
                    )
                    yield _rule_issue("warning", rule, msg)


class TranslationReads(Check):
    """A translation reads no fact or capture the English texts do not: the English is what the
    rule's tests render, so a read only the translation makes could fail unseen."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for rule in rs.rules.values():
            if rule.zh is None:
                continue
            extra = _reads(_templates(rule, "zh")) - _reads(_templates(rule, "en"))
            for read in sorted(extra):
                msg = f"zh reads {read.replace(':', ' ', 1)!r}, which the English does not"
                yield _rule_issue("error", rule, msg)


class CausesConsumed(Check):
    """A signature that names a cause is read by some rule: otherwise its line, however specific,
    never reaches a verdict, and a wrapper line around it (an admission error, an OCI error)
    decides instead."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        used = {
            sid
            for rule in rs.rules.values()
            for sid in signatures_in(rule.when) + signatures_in(rule.unless)
        }
        for s in rs.signatures.values():
            if s.carries_cause and s.id not in used:
                msg = f"signature {s.id} carries the cause {s.category!r} but no rule uses it"
                yield Issue("warning", s.file, s.line, msg)


class RuleTests(Check):
    """Every rule has at least one case it must fire on (ruff-style: each rule is tested)."""

    def issues(self, rs: RuleSet) -> Iterator[Issue]:
        for rule in rs.rules.values():
            if not rule.tests.get("fires"):
                yield _rule_issue("warning", rule, "no `tests: fires:` case")


CHECKS: tuple[Check, ...] = (
    UnknownFacts(),
    Conditions(),
    SignatureExamples(),
    ReferencesResolve(),
    TemplateCaptures(),
    TranslationReads(),
    CausesConsumed(),
    RuleTests(),
)


def lint(rs: RuleSet) -> tuple[list[str], list[str]]:
    """(errors, warnings) as `file:line: message` lines."""
    errors: list[str] = []
    warnings: list[str] = []
    for check in CHECKS:
        for issue in check.issues(rs):
            (errors if issue.level == "error" else warnings).append(str(issue))
    return errors, warnings
