"""The scheduler's decisions per pod and node, rebuilt from signature matches as declared in
rules/decisions.yaml (which signature, which captures hold pod, node, reason)."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.catalogue.datafiles import DecisionSpec
from analyzer.facts.context import NodeContext


@dataclass(frozen=True)
class Decision:
    """One row of the pod x node table: how often the scheduler decided so, first seen where."""

    pod: str
    node: str
    fit: bool
    reason: str
    count: int
    file: str
    line: int


def _first(caps: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((caps[n] for n in names if caps.get(n)), None)


def build_decisions(ctx: NodeContext, spec: tuple[DecisionSpec, ...]) -> tuple[Decision, ...]:
    rows: dict[tuple, list] = {}
    for entry in spec:
        for m in ctx.matches(entry.signature):
            pod = _first(m.captures, entry.pod) or "(pod not named)"
            node = _first(m.captures, entry.node) or "(all candidates)"
            reason = _first(m.captures, entry.reason) or ("" if entry.fit else entry.signature)
            key = (pod, node, entry.fit, reason)
            if key in rows:
                rows[key][0] += 1
            else:
                rows[key] = [1, m.file, m.line]
    return tuple(
        Decision(pod, node, fit, reason, n, file, line)
        for (pod, node, fit, reason), (n, file, line) in sorted(rows.items(), key=lambda kv: kv[0])
    )
