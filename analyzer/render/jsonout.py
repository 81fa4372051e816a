"""Machine-readable report (schema: analyzer/schema/diagnosis.schema.json).

The top level carries the worst node's verdict and findings under the keys the issue bot and
batch read (`primary`, `findings`, `links`, ...); `nodes` holds every node's own."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from analyzer.report.model import NodeReport, Report, plain

SCHEMA_VERSION = "2.1"  # 2.1: `namespace` (where the printed commands address HAMi)
NODE_KEYS = (
    "node",
    "primary",
    "findings",
    "links",
    "not_evaluated",
    "not_applicable",
    "not_fired",
    "explained_away",
    "rule_errors",
    "collect",
    "version",
    "clock",
    "namespace",
    "register",
    "handshake",
    "decisions",
    "episodes",
    "clock_issues",
)


def _default(o: Any) -> Any:
    if isinstance(o, dt.datetime):
        return o.isoformat()
    if isinstance(o, set | tuple | frozenset):
        return list(o)
    return str(o)


def node_document(n: NodeReport) -> dict[str, Any]:
    doc = {k: plain(getattr(n, k)) for k in NODE_KEYS}
    doc["primary"]["likely"] = n.primary.likely
    return doc


def report_document(report: Report) -> dict[str, Any]:
    worst = report.worst
    nodes = [node_document(n) for n in report.nodes]  # the worst first: also the top level
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **nodes[0]}
    doc["timeline"] = plain(worst.timeline)
    doc["timeline_total"] = worst.timeline_total
    doc["inventory"] = plain(report.inventory)
    doc["warnings"] = list(report.warnings)
    doc["log_stats"] = plain(report.log_stats)
    doc["nodes"] = nodes
    doc["analyzer_version"] = report.analyzer_version
    doc["rules_version"] = report.rules_version
    return doc


def render_json(report: Report) -> str:
    return json.dumps(report_document(report), indent=2, ensure_ascii=False, default=_default)
