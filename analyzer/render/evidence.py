"""How every renderer lists evidence: a signature's lines together with its count said once, and
a consequence citing only what its cause did not already show."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from analyzer.facts.model import Evidence
from analyzer.report.model import Finding


@dataclass(frozen=True)
class EvidenceGroup:
    items: tuple[Evidence, ...]  # lines of one signature (or one fact, or one absence)
    more: int  # matching lines beyond those shown (0: all shown)


def grouped(evidence: tuple[Evidence, ...]) -> list[EvidenceGroup]:
    """Consecutive citations of one signature as one group with its count once.

    >>> e = Evidence("log", "a.log", 1, "x", signature="s", count=4)
    >>> [(len(g.items), g.more) for g in grouped((e, Evidence("log", "a.log", 2, "x", signature="s", count=4)))]
    [(2, 2)]
    """
    out = []
    for (kind, _sig), items in groupby(evidence, key=lambda e: (e.kind, e.signature)):
        lines = tuple(items)
        total = max((e.count or 0) for e in lines) if kind == "log" else 0
        out.append(EvidenceGroup(lines, max(total - len(lines), 0)))
    return out


def fresh(cause: Finding) -> list[tuple[Finding, tuple[Evidence, ...]]]:
    """Each consequence of a cause with the evidence neither the cause nor an earlier
    consequence already cited."""
    cited = {e.key for e in cause.evidence}
    out = []
    for c in cause.consequences:
        new = tuple(e for e in c.evidence if e.key not in cited)
        cited |= {e.key for e in new}
        out.append((c, new))
    return out
