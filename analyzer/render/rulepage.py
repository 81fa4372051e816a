"""`rules show ID`: a rule's page with fixed sections, like `ruff rule CODE`."""

from __future__ import annotations

import yaml

from analyzer.rules.model import RuleSet


def render_rule_page(rs: RuleSet, rid: str) -> str:
    if rid in rs.signatures:
        s = rs.signatures[rid]
        return "\n".join(
            [
                f"# signature {s.id}",
                f"sources: {', '.join(s.sources)}   level: {s.level}   verbosity: V{s.verbosity}   versions: {s.versions}",
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
                f"defined in {s.file}:{s.line}",
            ]
        )
    r = rs.rules[rid]
    lines = [
        f"# {r.id}: {r.title}",
        f"kind: {r.kind}   severity: {r.severity}   category: {r.category}   link: {r.link or '-'}   case: {r.case or '-'}",
        f"versions: {r.versions}   requires: {', '.join(x if isinstance(x, str) else ' or '.join(x) for x in r.requires) or '-'}",
        "",
        "## What it detects",
        r.summary or r.title,
        "",
        "## Why it matters",
        r.explanation,
        "",
        "## Evidence it uses",
        yaml.safe_dump(r.when, sort_keys=False, allow_unicode=True).rstrip(),
    ]
    sigs = sorted(set(_signatures(r.when)))
    for sid in sigs:
        s = rs.signatures[sid]
        lines.append(f"  - {sid}: {s.meaning.splitlines()[0] if s.meaning else s.pattern}")
    lines += ["", "## Fix"]
    for step in r.remediation:
        lines.append(f"- {step.get('text', '')}")
        if step.get("command"):
            lines.append(f"    {step['command']}")
    lines += [
        "",
        "## References",
        *[f"- {x}" for x in r.references],
        "",
        f"defined in {r.file}:{r.line}",
    ]
    return "\n".join(lines)


def _signatures(cond) -> list[str]:
    if isinstance(cond, dict):
        out = [cond["signature"]] if "signature" in cond else []
        for v in cond.values():
            out.extend(_signatures(v))
        return out
    if isinstance(cond, list):
        return [s for c in cond for s in _signatures(c)]
    return []
