"""Plain-text summary for a terminal."""

from __future__ import annotations

from analyzer.diagnosis import Diagnosis

MARK = {"broken": "✗", "ok": "✓", "unknown": "?"}


def _clean(text: str) -> str:
    return "".join(ch if ch.isprintable() or ch == "\n" else "?" for ch in str(text))


def render_terminal(diags: list[Diagnosis]) -> str:
    out: list[str] = []
    for d in diags:
        p = d.primary
        out.append(
            f"Node: {_clean(d.node or '(unknown)')}   HAMi version: {_clean(d.version['summary'])}"
        )
        out.append(
            f"Verdict: [{p.severity.upper()}] {p.category}: {_clean(p.title)}"
            + (f"  (rule {p.rule_id})" if p.rule_id else "")
        )
        out.append(
            "Links:  " + "   ".join(f"{MARK[ln.state]} {ln.link}: {ln.state}" for ln in d.links)
        )
        for f in d.faults():
            out.append("")
            out.append(f"✗ {f.rule_id} [{f.severity}] {_clean(f.title)}")
            for line in _clean(f.explanation).splitlines():
                out.append(f"    {line}")
            for e in f.evidence:
                if e.kind == "log":
                    more = f"  (+{e.count - 1} more)" if e.count and e.count > 1 else ""
                    out.append(f"    > {e.file}:{e.line}: {_clean(e.text or '')[:200]}{more}")
                elif e.kind == "fact":
                    where = f" ({e.file}:{e.line})" if e.line else ""
                    out.append(f"    > {e.path} = {_clean(str(e.value))[:200]}{where}")
                else:
                    out.append(f"    > {_clean(e.text or '')}")
            for s in f.remediation:
                out.append(f"    fix: {_clean(s.text)}")
                if s.command:
                    out.append(f"      $ {_clean(s.command)}")
        normals = d.normals()
        if normals:
            out.append("")
            out.append("Looks suspicious but is normal:")
            for f in normals:
                out.append(f"  • {f.rule_id}: {_clean(f.title)}")
        if d.collect:
            out.append("")
            out.append("Collect next:")
            for c in d.collect:
                out.append(f"  • {c.title}: {_clean(c.command)}")
        if d.rule_errors:
            out.append("")
            out.append("Rule errors: " + "; ".join(_clean(x) for x in d.rule_errors))
        out.append(f"\n{d.clock['how']}")
        out.append("")
    return "\n".join(out)
