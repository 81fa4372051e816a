"""`inspect`: what the analyzer found in the bundle, before any verdict."""

from __future__ import annotations

import json

from analyzer.render.jsonout import _default
from analyzer.render.terminal import clean
from analyzer.report.model import Report, plain

GPU_COLUMNS = ("id", "type", "devmem", "devcore", "count", "numa", "index", "mode", "health")


def inspect_document(report: Report) -> dict:
    return {
        "files": plain(report.inventory),
        "warnings": list(report.warnings),
        "logs": plain(report.log_stats),
        "nodes": [
            {
                "node": n.node,
                "clock": plain(n.clock),
                "version": plain(n.version),
                "register": plain(n.register),
                "handshake": plain(n.handshake),
            }
            for n in report.nodes
        ],
    }


def render_inspect_json(report: Report) -> str:
    return json.dumps(inspect_document(report), indent=2, ensure_ascii=False, default=_default)


def render_inspect(report: Report) -> str:
    out = ["Files:"]
    for a in report.inventory:
        where = f":{a.first_line}" if a.first_line > 1 else ""
        out.append(f"  {clean(a.file)}{where}  [{a.kind}]  {clean(a.reason)}")
    for w in report.warnings:
        out.append(f"  warning: {clean(w)}")
    for n in report.nodes:
        out.append("")
        out.append(f"Node: {clean(n.node or '(none)')}")
        out.append(f"Clock: {clean(n.clock.how)}")
        out.append(f"HAMi namespace: {clean(n.namespace.how)}")
        out.append(f"HAMi version: {clean(n.version.summary)}")
        for e in n.version.evidence:
            out.append(f"  - {e.range}: {clean(e.reason)} ({clean(e.where)})")
        for e in n.version.conflicts:
            out.append(f"  ! conflicting clue {e.range}: {clean(e.reason)} ({clean(e.where)})")
        for comp, rng in n.version.components:
            out.append(f"{comp} version: {rng}")
        r = n.register
        if r:
            out.append("")
            src = "" if r.source == "annotation" else " (printed by a HAMi log, no Node object)"
            out.append(
                f"Register {r.key}: {r.status}" + (f" ({r.format})" if r.format else "") + src
            )
            if r.error:
                out.append(f"  error: {clean(r.error)}")
            if r.devices:
                out.append(
                    "  " + "  ".join(f"{c:>8}" if c != "id" else f"{c:40}" for c in GPU_COLUMNS)
                )
                for dev in r.devices:
                    cells = []
                    for c in GPU_COLUMNS:
                        mark = "*" if c in dev.absent else ""
                        v = clean(str(getattr(dev, c))) + mark
                        cells.append(f"{v:40}" if c == "id" else f"{v:>8}")
                    out.append("  " + "  ".join(cells))
                out.append(
                    "  (* = field absent in the annotation; omitempty: absent health means unhealthy)"
                )
        h = n.handshake
        if h:
            if h.present:
                age = f" (age {int(h.age_seconds)}s)" if h.age_seconds is not None else ""
                out.append(f"Handshake {h.key}: {h.state} {clean(h.value)}{age}")
            else:
                out.append("Handshake hami.io/node-handshake: absent")
    out.append("")
    out.append("Logs:")
    for s in report.log_stats:
        sev = " ".join(f"{k}={v}" for k, v in sorted(s.severities.items()))
        out.append(
            f"  {clean(s.file)} [{s.kind}] {s.lines} lines, {s.klog_lines} klog ({sev}), {s.first or '?'} .. {s.last or '?'}"
        )
        if s.restarts is not None:
            out.append(f"    restarts: {s.restarts}")
        if s.containers:
            out.append(f"    containers: {', '.join(s.containers)}")
        if s.truncated_last_line:
            out.append("    last line is cut off mid-line")
        if s.hard_wrap_joins:
            out.append(f"    rejoined {s.hard_wrap_joins} terminal-wrapped lines")
        if s.signature_counts:
            out.append(
                "    signatures: " + ", ".join(f"{k}×{v}" for k, v in s.signature_counts.items())
            )
    return "\n".join(out)
