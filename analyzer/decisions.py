"""The scheduler's decisions per pod and node, rebuilt from signature matches as declared in
rules/decisions.yaml (which signature, which captures hold pod, node, reason)."""

from __future__ import annotations

from typing import Any

from analyzer.facts import NodeContext


def _first(caps: dict[str, str], names: list[str]) -> str | None:
    return next((caps[n] for n in names if caps.get(n)), None)


def build_decisions(ctx: NodeContext, spec: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows: dict[tuple, dict[str, Any]] = {}
    for entry in spec:
        for m in ctx.matches.get(entry["signature"], []):
            pod = _first(m.captures, entry.get("pod", [])) or "(pod not named)"
            node = _first(m.captures, entry.get("node", [])) or "(all candidates)"
            reason = _first(m.captures, entry.get("reason", [])) or (
                "" if entry["fit"] else entry["signature"]
            )
            key = (pod, node, entry["fit"], reason)
            row = rows.get(key)
            if row is None:
                rows[key] = {
                    "pod": pod,
                    "node": node,
                    "fit": bool(entry["fit"]),
                    "reason": reason,
                    "count": 1,
                    "file": m.file,
                    "line": m.line,
                }
            else:
                row["count"] += 1
    return sorted(rows.values(), key=lambda r: (r["pod"], r["node"], r["fit"], r["reason"]))
