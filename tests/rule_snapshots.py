"""A rule's firing cases as text to read: the title, the verdict and the evidence `file:line`
each case produces (one file per rule under tests/snapshots/rules/, ruff/insta style).

The text holds what a reviewer must see change, and nothing that moves on its own: no rule-file
line numbers, no absolute paths, evidence lines cut to a readable length."""

from __future__ import annotations

from pathlib import Path

from analyzer.bundle.text import printable
from analyzer.dev.selftest import CaseResult
from analyzer.facts.model import Evidence
from analyzer.report.model import Finding, NodeReport, Report
from analyzer.rules.model import Rule

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots" / "rules"
TEXT_WIDTH = 100


def snapshot_path(rule_id: str) -> Path:
    return SNAPSHOTS / f"{rule_id}.snap"


def _short(text: object) -> str:
    one = " ".join(printable(str(text)).split())
    return one if len(one) <= TEXT_WIDTH else one[: TEXT_WIDTH - 3] + "..."


def _evidence(e: Evidence) -> str:
    if e.file is None:
        where = "-"  # a fact with no place (inferred, or stated in prose)
    else:
        where = Path(e.file).name if Path(e.file).is_absolute() else e.file
        where += f":{e.line}" if e.line is not None else ""
    if e.kind == "log":
        return f"log {where}  {_short(e.text)}"
    if e.kind == "fact":
        return f"fact {where}  {e.path} = {_short(repr(e.value))}"
    return f"{e.kind}  {_short(e.text)}"


def _cause_of(node: NodeReport, rule_id: str) -> str | None:
    for f in node.findings:
        if any(c.rule_id == rule_id for c in f.consequences):
            return f.rule_id
    return None


def _finding(node: NodeReport, f: Finding) -> list[str]:
    v = node.primary
    out = [
        f"  node: {node.node or '-'}",
        f"  title: {_short(f.title)}",
        f"  finding: {f.kind}, {f.severity}, {f.category}, confidence {f.confidence}",
        f"  node verdict: {v.category} [{v.confidence}] by {v.rule_id or '-'}",
    ]
    cause = _cause_of(node, f.rule_id)
    if cause:
        out.append(f"  explained by: {cause}")
    out.append("  evidence:")
    out += [f"    {_evidence(e)}" for e in f.evidence] or ["    (none)"]
    return out


def _case(rule_id: str, result: CaseResult) -> list[str]:
    out = [f"{result.case}"]
    report: Report | None = result.report
    if not result.ok or report is None:
        return [*out, f"  did not fire: {result.detail}"]
    for node in report.nodes:
        for f in node.all_findings():
            if f.rule_id == rule_id:
                out += _finding(node, f)
    return out


def render(rule: Rule, results: list[CaseResult], rules_root: Path) -> str:
    """The snapshot text of one rule from its `fires` case results (in the rule file's order)."""
    try:
        source = Path(rule.file).resolve().relative_to(rules_root.resolve()).as_posix()
    except ValueError:
        source = Path(rule.file).name
    lines = [f"rule: {rule.id}", f"file: {source}", "---"]
    cases = [r for r in results if r.rule_id == rule.id and r.case.startswith("fires[")]
    cases = [r for r in cases if not r.case.endswith("(zh)")]
    for r in cases:
        lines += _case(rule.id, r)
    if not cases:
        lines.append("(no fires case)")
    return "\n".join(lines) + "\n"
