"""Plain-text summary for a terminal: every node's verdict, then the details of each faulty one."""

from __future__ import annotations

from analyzer.bundle.text import printable
from analyzer.facts.model import Where
from analyzer.report.model import Finding, NodeReport, Report

MARK = {"broken": "✗", "ok": "✓", "unknown": "?"}


clean = printable  # the name this module's callers use


def verdict_line(n: NodeReport) -> str:
    p = n.primary
    parts = []
    if p.case:
        parts.append(f"case {p.case}")
    if p.category != "inconclusive":
        parts.append(f"{p.confidence} confidence")
    if p.rule_id:
        parts.append(f"rule {p.rule_id}")
    tail = f"  ({', '.join(parts)})" if parts else ""
    likely = "likely " if p.likely else ""
    return f"[{p.severity.upper()}] {likely}{p.category}: {clean(p.title)}{tail}"


def _finding(f: Finding, indent: str = "") -> list[str]:
    out = [f"{indent}✗ {f.rule_id} [{f.severity}, {f.confidence} confidence] {clean(f.title)}"]
    for line in clean(f.explanation).splitlines():
        out.append(f"{indent}    {line}")
    for e in f.evidence:
        if e.kind == "log":
            more = f"  (+{e.count - 1} more)" if e.count and e.count > 1 else ""
            out.append(f"{indent}    > {e.file}:{e.line}: {clean(e.text or '')[:200]}{more}")
        elif e.kind == "fact":
            where = f" ({Where(e.file, e.line)})" if e.file else ""
            out.append(f"{indent}    > {e.path} = {clean(e.value)[:200]}{where}")
        else:
            out.append(f"{indent}    > {clean(e.text or '')}")
    for s in f.remediation:
        out.append(f"{indent}    fix: {clean(s.text)}")
        if s.command:
            out.append(f"{indent}      $ {clean(s.command)}")
    for c in f.consequences:
        out.append(f"{indent}    consequence:")
        out.extend(_finding(c, indent + "    "))
    return out


def render_node(n: NodeReport) -> list[str]:
    out = [f"Node: {clean(n.node or '(unknown)')}   HAMi version: {clean(n.version.summary)}"]
    out.append(f"Verdict: {verdict_line(n)}")
    if n.primary.confidence_reason:
        out.append(f"  because: {clean(n.primary.confidence_reason)}")
    out.append("Links:  " + "   ".join(f"{MARK[ln.state]} {ln.link}: {ln.state}" for ln in n.links))
    for f in n.faults():
        out.append("")
        out.extend(_finding(f))
    normals = n.normals()
    if normals:
        out.append("")
        out.append("Looks suspicious but is normal:")
        for f in normals:
            out.append(f"  • {f.rule_id}: {clean(f.title)}")
    if n.collect:
        out.append("")
        out.append("Collect next:")
        for c in n.collect:
            where = " (on the node)" if c.where == "node" else ""
            needs = f"  [set {', '.join(c.needs)} first]" if c.needs else ""
            command = clean(c.command).replace("\n", "\n      ")  # `collect` after its install
            out.append(f"  • {clean(c.title)}{where}: {command}{needs}")
    if n.rule_errors:
        out.append("")
        out.append("Rule errors: " + "; ".join(clean(x) for x in n.rule_errors))
    out.append(f"\n{clean(n.clock.how)}")
    return out


def render_terminal(report: Report) -> str:
    out: list[str] = []
    if len(report.nodes) > 1:
        out.append(f"{len(report.nodes)} nodes in the bundle:")
        for n in report.nodes:
            out.append(f"  {clean(n.node or '(unknown)')}: {verdict_line(n)}")
        out.append("")
    for n in report.nodes:
        if len(report.nodes) > 1 and not n.faults() and n is not report.worst:
            continue
        out.extend(render_node(n))
        out.append("")
    if report.warnings:
        out.append("Input warnings:")
        out.extend(f"  ! {clean(w)}" for w in report.warnings[:20])
        if len(report.warnings) > 20:
            out.append(f"  ... and {len(report.warnings) - 20} more")
        out.append("")
    return "\n".join(out)
