"""`inspect`: what the analyzer found in the bundle, before any verdict."""

from __future__ import annotations

import json

from analyzer.diagnosis import Diagnosis
from analyzer.render.jsonout import _default
from analyzer.render.terminal import _clean

GPU_COLUMNS = ("id", "type", "devmem", "devcore", "count", "numa", "index", "mode", "health")


def _inspect_dict(d: Diagnosis) -> dict:
    return {
        "node": d.node,
        "other_nodes": d.other_nodes,
        "files": d.inventory,
        "warnings": d.warnings,
        "clock": d.clock,
        "version": d.version,
        "register": d.register,
        "handshake": d.handshake,
        "logs": d.log_stats,
    }


def render_inspect_json(diags: list[Diagnosis]) -> str:
    return json.dumps(
        [_inspect_dict(d) for d in diags], indent=2, ensure_ascii=False, default=_default
    )


def render_inspect(diags: list[Diagnosis]) -> str:
    d = diags[0]
    out = ["Files:"]
    for a in d.inventory:
        where = f":{a['first_line']}" if a["first_line"] > 1 else ""
        out.append(f"  {_clean(a['file'])}{where}  [{a['kind']}]  {_clean(a['reason'])}")
    for w in d.warnings:
        out.append(f"  warning: {_clean(w)}")
    out.append("")
    out.append(
        f"Node: {_clean(d.node or '(none)')}"
        + (f"  (also in bundle: {', '.join(d.other_nodes)})" if d.other_nodes else "")
    )
    out.append(f"Clock: {d.clock['how']}")
    out.append(f"HAMi version: {d.version['summary']}")
    for e in d.version["evidence"]:
        out.append(f"  - {e['range']}: {_clean(e['reason'])} ({_clean(e['where'])})")
    for e in d.version["conflicts"]:
        out.append(
            f"  ! conflicting clue {e['range']}: {_clean(e['reason'])} ({_clean(e['where'])})"
        )
    r = d.register
    if r:
        out.append("")
        out.append(
            f"Register annotation {r['key']}: {r['status']}"
            + (f" ({r['format']})" if r.get("format") else "")
        )
        if r.get("error"):
            out.append(f"  error: {_clean(r['error'])}")
        if r["devices"]:
            out.append("  " + "  ".join(f"{c:>8}" if c != "id" else f"{c:40}" for c in GPU_COLUMNS))
            for dev in r["devices"]:
                cells = []
                for c in GPU_COLUMNS:
                    v = dev[c]
                    mark = "*" if c in dev["absent"] else ""
                    cells.append(
                        f"{_clean(str(v)) + mark:40}"
                        if c == "id"
                        else f"{_clean(str(v)) + mark:>8}"
                    )
                out.append("  " + "  ".join(cells))
            out.append(
                "  (* = field absent in the annotation; omitempty: absent health means unhealthy)"
            )
    h = d.handshake
    if h:
        if h.get("present"):
            out.append(
                f"Handshake {h['key']}: {h['state']} {_clean(h['value'])}"
                + (f" (age {h['age']})" if h.get("age") else "")
            )
        else:
            out.append("Handshake hami.io/node-handshake: absent")
    out.append("")
    out.append("Logs:")
    for s in d.log_stats:
        sev = " ".join(f"{k}={v}" for k, v in sorted(s["severities"].items()))
        out.append(
            f"  {_clean(s['file'])} [{s['kind']}] {s['lines']} lines, {s['klog_lines']} klog ({sev}), {s['first'] or '?'} .. {s['last'] or '?'}"
        )
        if s.get("restarts") is not None:
            out.append(f"    restarts: {s['restarts']}")
        if s["containers"]:
            out.append(f"    containers: {', '.join(s['containers'])}")
        if s["truncated_last_line"]:
            out.append("    last line is cut off mid-line")
        if s["hard_wrap_joins"]:
            out.append(f"    rejoined {s['hard_wrap_joins']} terminal-wrapped lines")
        if s["signature_counts"]:
            out.append(
                "    signatures: " + ", ".join(f"{k}×{v}" for k, v in s["signature_counts"].items())
            )
    return "\n".join(out)
