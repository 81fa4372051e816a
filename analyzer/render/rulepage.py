"""`rules show ID`: a rule's or a signature's page with fixed sections, like `ruff rule CODE`."""

from __future__ import annotations

import re

from jinja2 import TemplateError

from analyzer.rules.conditions import describe, signatures_in
from analyzer.rules.model import RuleSet
from analyzer.rules.templates import render


class _Hole(str):
    """A value a bundle would fill in, shown as <name>: any field, key or item of it is a hole
    too, and it reads as a one-item list (so `| join` prints it once)."""

    def __new__(cls, name: object) -> _Hole:
        return super().__new__(cls, f"<{name}>")

    def __getattr__(self, name: str) -> _Hole:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Hole(name)

    def __getitem__(self, key):  # type: ignore[override]
        return self if isinstance(key, slice | int) else _Hole(key)

    def __iter__(self):  # type: ignore[override]
        yield self

    def get(self, key: object, default: object = None) -> _Hole:
        return _Hole(key)


class _Captures(dict):
    def get(self, key, default=None):  # type: ignore[override]
        return _Hole(str(key).rsplit("-", 1)[-1])

    def __getitem__(self, key):
        return self.get(key)


_PREVIEW = {
    "node": _Hole("node"),
    "pod": _Hole("pod"),
    "pod_ns": _Hole("namespace"),
    "namespace": _Hole("hami-namespace"),
    "fact": lambda path, default=None: _Hole(path),
    "captures": _Captures(),
    "count": lambda sid: _Hole("count"),
    "version": _Hole("version"),
    "register": _Hole("register"),
    "handshake": _Hole("handshake"),
    "human": lambda seconds: _Hole("age"),
    "device_plugin": None,  # a listing names both plugins' fixes
}


def preview(text: str) -> str:
    """A rule text without a bundle: every value it would fill in shows as <name>, so a listing
    reads as a sentence, not as template code.

    >>> preview("XID {{ captures['dp-xid'].xid }} on {{ node }}{% if fact('a.b') %} ({{ fact('a.b') | join(', ') }}){% endif %}")
    'XID <xid> on <node> (<a.b>)'
    """
    try:
        return " ".join(render(text, **_PREVIEW).split())
    except (TemplateError, TypeError, ValueError, AttributeError, KeyError):
        # a template the holes cannot satisfy: its text with each value as "…"
        text = re.sub(r"\{%.*?%\}", "", text, flags=re.S)
        return " ".join(re.sub(r"\{\{.*?\}\}", "…", text, flags=re.S).split())


def render_signature_page(rs: RuleSet, sid: str) -> str:
    s = rs.signatures[sid]
    return "\n".join(
        [
            f"# signature {s.id}",
            f"printed by: {s.component}   level: {s.level}   verbosity: V{s.verbosity}   versions: {s.versions}",
            f"expected in: {', '.join(s.sources)}"
            + ("   (a described symptom: weak evidence)" if s.symptom else ""),
            f"origin: {s.origin or '(not recorded)'}",
            "",
            "## Meaning",
            s.meaning or "(none)",
            "",
            "## Pattern",
            s.pattern,
            "",
            "## Examples",
            *[f"  matches: {e}" for e in s.examples_match],
            *[f"  does not match: {e}" for e in s.examples_no_match],
            "",
            "## References",
            *[f"- {x}" for x in s.references],
            "",
            f"used by: {', '.join(r.id for r in rs.rules.values() if sid in signatures_in(r.when) + signatures_in(r.unless)) or '(no rule)'}",
            f"defined in {s.file}:{s.line}",
        ]
    )


def render_rule_page(rs: RuleSet, rid: str) -> str:
    if rid in rs.signatures and rid not in rs.rules:
        return render_signature_page(rs, rid)
    r = rs.rules[rid]
    lines = [
        f"# {r.id}: {preview(r.title)}",
        f"kind: {r.kind}   severity: {r.severity}   category: {r.category}   link: {r.link or '-'}   case: {r.case or '-'}",
        f"versions: {r.versions}   confidence at most: {r.confidence}   priority: {r.priority}",
        "",
        "## What it detects",
        r.summary or r.title,
        "",
        "## Why it matters",
        r.explanation,
        "",
        "## Evidence it uses",
        *describe(r.when, "  "),
    ]
    if r.unless is not None:
        lines += ["  unless:", *describe(r.unless, "    ")]
    for sid in sorted(set(signatures_in(r.when) + signatures_in(r.unless))):
        s = rs.signatures[sid]
        lines.append(f"  - {sid} ({s.component}): {s.meaning or s.pattern}")
    if r.explains:
        lines += [
            "",
            "## Explains (consequences grouped under it)",
            *[f"- {x}" for x in r.explains],
        ]
    lines += ["", "## Fix"]
    for step in r.remediation:
        lines.append(f"- {step.text}")
        if step.command:
            lines.append(f"    {step.command}")
    if r.collect:
        lines += [
            "",
            "## What confirms or overturns it",
            *[f"- {rs.catalogue[k].title}: {rs.catalogue[k].collect}" for k in r.collect],
        ]
    lines += [
        "",
        "## References",
        *[f"- {x}" for x in r.references],
        "",
        f"defined in {r.file}:{r.line}",
    ]
    return "\n".join(lines)
