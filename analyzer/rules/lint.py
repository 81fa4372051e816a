"""Semantic checks of a loaded rule set, one small validator each. Errors stop the load (a rule
that names an unknown fact or compares a string fact with `true` can never work); warnings are
printed by `hami-analyzer rules lint`, which fails CI on either."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import regex

from analyzer.facts.registry import spec_of
from analyzer.rules.conditions import (
    ORDERING,
    AgeCond,
    Cond,
    FactCond,
    FactRef,
    required_signatures,
    signatures_in,
)
from analyzer.rules.model import Rule, RuleSet

Problem = tuple[str, str]  # (error | warning, "file:line: message")
_TEMPLATE_FACT_RE = regex.compile(r"""fact\(\s*['"]([^'"]+)['"]""")
_TEMPLATE_CAPTURE_RE = regex.compile(r"""captures\[\s*['"]([\w-]+)['"]\s*\]""")
# `captures.get('sig')` in a template: context the rule shows when that line exists, on purpose
_TEMPLATE_GUARD_RE = regex.compile(r"""captures\.get\(\s*['"]([\w-]+)['"]""")
_PY_TYPES = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "list": (list,),
}


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


def unknown_facts(rs: RuleSet) -> Iterator[Problem]:
    """Every fact a template names is declared in the registry (conditions are checked when
    they are parsed)."""
    for rule in rs.rules.values():
        paths: list[str] = []
        for text in _templates(rule):
            paths += _TEMPLATE_FACT_RE.findall(text)
        for path in sorted(set(paths)):
            if path.endswith("."):
                continue  # a template builds the rest of the path (fact('cdi.devices.' ~ kind))
            if spec_of(path) is None:
                yield (
                    "error",
                    f"{rule.file}:{rule.line}: rule {rule.id}: unknown fact {path!r} (see `hami-analyzer rules facts`)",
                )


def operand_types(rs: RuleSet) -> Iterator[Problem]:
    """A comparison's operand has the fact's type: `eq: true` on a string label never matches."""
    for rule in rs.rules.values():
        for c in _conditions(rule):
            if not isinstance(c, FactCond | AgeCond):
                continue
            spec = spec_of(c.path)
            if spec is None:
                continue
            where = f"{rule.file}:{c.line}: rule {rule.id}: {c.path} ({spec.type})"
            if spec.type == "any":  # a config value may be anything; `exists` still takes a bool
                for op, want in getattr(c, "ops", ()):
                    if op == "exists":
                        yield from _operand_problem(where, spec.type, op, want)
                continue
            if isinstance(c, AgeCond):
                if spec.type != "datetime":
                    yield "error", f"{where}: age_of needs a datetime fact"
                continue
            for op, want in c.ops:
                if isinstance(want, FactRef):
                    other = spec_of(want.path)
                    if (
                        other
                        and other.type not in (spec.type, "any")
                        and not ({other.type, spec.type} <= {"int", "float"})
                    ):
                        yield "error", f"{where}: compared with {want.path} ({other.type})"
                    continue
                yield from _operand_problem(where, spec.type, op, want)


def _operand_problem(where: str, typ: str, op: str, want) -> Iterator[Problem]:
    if op == "exists":
        if not isinstance(want, bool):
            yield "error", f"{where}: exists takes true or false, got {want!r}"
        return
    if op in ORDERING:
        if (
            typ not in ("int", "float")
            or isinstance(want, bool)
            or not isinstance(want, int | float)
        ):
            yield "error", f"{where}: {op} needs a number fact and a number, got {want!r}"
        return
    if op == "matches":
        if typ != "str":
            yield "error", f"{where}: matches needs a string fact"
        return
    if op in ("contains", "not_contains"):
        if typ not in ("list", "str"):
            yield "error", f"{where}: {op} needs a list or string fact"
        elif typ == "str" and not isinstance(want, str):
            yield "error", f"{where}: {op} on a string needs a string, got {want!r}"
        return
    values = want if op in ("in", "not_in") else [want]
    allowed = _PY_TYPES.get(typ)
    if allowed is None:
        return
    for v in values:
        bad = not isinstance(v, allowed) or (typ != "bool" and isinstance(v, bool))
        if bad:
            yield (
                "error",
                f"{where}: {op} {v!r} can never equal a {typ} value (write it as a {typ})",
            )


def signature_examples(rs: RuleSet) -> Iterator[Problem]:
    """Every signature shows real lines it matches, and each example behaves as declared."""
    for s in rs.signatures.values():
        here = f"{s.file}:{s.line}: signature {s.id}"
        if not s.examples_match:
            yield "warning", f"{here}: no `examples: match:` line (give a real line it must match)"
        for ex in s.examples_match:
            if s.compiled.search(ex) is None:
                yield "error", f"{here}: example does not match: {ex[:80]!r}"
        for ex in s.examples_no_match:
            if s.compiled.search(ex) is not None:
                yield "error", f"{here}: no_match example matches: {ex[:80]!r}"


def references_resolve(rs: RuleSet) -> Iterator[Problem]:
    """`explains` names rules, `collect` names kinds that have a command, `in:` names kinds."""
    for rule in rs.rules.values():
        here = f"{rule.file}:{rule.line}: rule {rule.id}"
        for c in _conditions(rule):
            for kid in getattr(c, "kinds", ()):
                if kid not in rs.catalogue:
                    yield "error", f"{rule.file}:{c.line}: rule {rule.id}: in: unknown kind {kid!r}"
        for rid in rule.explains:
            if rid not in rs.rules:
                yield "error", f"{here}: explains unknown rule {rid!r}"
            elif rid == rule.id:
                yield "error", f"{here}: explains itself"
        for kid in rule.collect:
            kind = rs.catalogue.get(kid)
            if kind is None:
                yield "error", f"{here}: collect names unknown kind {kid!r}"
            elif not kind.collect:
                yield "error", f"{here}: collect names kind {kid!r}, which has no command"


def template_captures(rs: RuleSet) -> Iterator[Problem]:
    """A template reads captures['sig'] only of a signature every firing of the rule has lines
    of, or guards the read with captures.get('sig') (optional context): an unguarded read of a
    signature from one branch of an `any` fails when another branch fires."""
    for rule in rs.rules.values():
        used = set(signatures_in(rule.when)) | set(signatures_in(rule.unless))
        guarded = {sid for text in _templates(rule) for sid in _TEMPLATE_GUARD_RE.findall(text)}
        required = required_signatures(rule.when)
        reads = {sid for text in _templates(rule) for sid in _TEMPLATE_CAPTURE_RE.findall(text)}
        where = f"{rule.file}:{rule.line}: rule {rule.id}: template reads"
        for sid in sorted(reads):
            if sid not in rs.signatures:
                yield "error", f"{where} unknown signature {sid!r}"
            elif sid in guarded:
                continue
            elif sid not in used:
                yield "warning", f"{where} captures of {sid!r}, which its conditions never use"
            elif sid not in required:
                yield (
                    "warning",
                    f"{where} captures of {sid!r}, which not every firing has: use captures.get({sid!r})",
                )


def translation_reads(rs: RuleSet) -> Iterator[Problem]:
    """A translation reads no fact or capture the English texts do not: the English is what the
    rule's tests render, so a read only the translation makes could fail unseen."""
    for rule in rs.rules.values():
        if rule.zh is None:
            continue
        extra = _reads(_templates(rule, "zh")) - _reads(_templates(rule, "en"))
        for read in sorted(extra):
            yield (
                "error",
                f"{rule.file}:{rule.line}: rule {rule.id}: zh reads {read.replace(':', ' ', 1)!r}, which the English does not",
            )


def causes_consumed(rs: RuleSet) -> Iterator[Problem]:
    """A signature that names a cause is read by some rule: otherwise its line, however specific,
    never reaches a verdict, and a wrapper line around it (an admission error, an OCI error)
    decides instead."""
    used = {
        sid
        for rule in rs.rules.values()
        for sid in signatures_in(rule.when) + signatures_in(rule.unless)
    }
    for s in rs.signatures.values():
        if s.carries_cause and s.id not in used:
            yield (
                "warning",
                f"{s.file}:{s.line}: signature {s.id} carries the cause {s.category!r} but no rule uses it",
            )


def rule_tests(rs: RuleSet) -> Iterator[Problem]:
    """Every rule has at least one case it must fire on (ruff-style: each rule is tested)."""
    for rule in rs.rules.values():
        if not rule.tests.get("fires"):
            yield "warning", f"{rule.file}:{rule.line}: rule {rule.id}: no `tests: fires:` case"


VALIDATORS: tuple[Callable[[RuleSet], Iterator[Problem]], ...] = (
    unknown_facts,
    operand_types,
    signature_examples,
    references_resolve,
    template_captures,
    translation_reads,
    causes_consumed,
    rule_tests,
)


def lint(rs: RuleSet) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    for check in VALIDATORS:
        for level, msg in check(rs):
            (errors if level == "error" else warnings).append(msg)
    return errors, warnings
