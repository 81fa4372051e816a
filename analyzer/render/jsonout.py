"""Machine-readable report (schema: analyzer/schema/diagnosis.schema.json).

The top level carries the worst node's verdict and findings under the keys the issue bot and
batch read (`primary`, `findings`, `links`, ...); `nodes` holds every node's own."""

from __future__ import annotations

import datetime as dt
from json.encoder import encode_basestring
from typing import Any

from analyzer.report.model import SEQUENCES, NodeReport, Report, plain

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


_INFINITY = float("inf")


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == _INFINITY:
        return "Infinity"
    if o == -_INFINITY:
        return "-Infinity"
    return float.__repr__(o)


def _key(k: Any) -> str:
    """A member's name as json writes it (a key that is not a text is converted the same way)."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def indented(value: Any) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False, default=_default)`, in 60 % of its
    time: json's indented writer is pure Python and passes every piece up through a generator
    per level of nesting; this appends the pieces to one list. The same checks in the same
    order (a text, None, True, False, an int, a float, a list or tuple, a dict, else
    `_default`); a document that holds itself recurses until Python stops it, where json
    says "Circular reference" (a report's document is a tree). tests/test_jsonout.py
    compares the two on generated documents."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)


def _write(o: Any, depth: int, out: list[str]) -> None:
    if isinstance(o, str):
        out.append(encode_basestring(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, int):
        out.append(int.__repr__(o))
    elif isinstance(o, float):
        out.append(_float(o))
    elif isinstance(o, SEQUENCES):
        if not o:
            out.append("[]")
            return
        inner = "\n" + "  " * (depth + 1)
        sep = "[" + inner
        for v in o:
            if type(v) is str:  # most items: written here, not by a call
                out.append(sep + encode_basestring(v))
            else:
                out.append(sep)
                _write(v, depth + 1, out)
            sep = "," + inner
        out.append("\n" + "  " * depth + "]")
    elif isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        inner = "\n" + "  " * (depth + 1)
        sep = "{" + inner
        for k, v in o.items():
            key = encode_basestring(k if type(k) is str else _key(k))
            if type(v) is str:
                out.append(sep + key + ": " + encode_basestring(v))
            else:
                out.append(sep + key + ": ")
                _write(v, depth + 1, out)
            sep = "," + inner
        out.append("\n" + "  " * depth + "}")
    else:
        _write(_default(o), depth, out)


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
    """`report_document` as json writes it with `indent=2` (`indented`): the worst node's
    members are both the top level's and the first of `nodes`, and each is encoded once. A
    JSON text holds no newline but between its lines (json escapes one in a string), so its
    text one level down is the same with each line indented two more spaces."""
    doc = report_document(report)
    once: dict[int, str] = {}  # each value's text at depth 0, by the value's identity

    def value(v: Any, depth: int) -> str:
        if id(v) not in once:
            once[id(v)] = indented(v)
        return once[id(v)].replace("\n", "\n" + "  " * depth)

    def members(d: dict[str, Any], depth: int) -> str:
        pad = "  " * depth
        lines = (f"{pad}{encode_basestring(k)}: {value(v, depth)}" for k, v in d.items())
        return "{\n" + ",\n".join(lines) + "\n" + "  " * (depth - 1) + "}"

    once[id(doc["nodes"])] = "[\n" + ",\n".join("  " + members(n, 2) for n in doc["nodes"]) + "\n]"
    return members(doc, 1)
