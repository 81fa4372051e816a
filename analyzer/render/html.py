"""Self-contained HTML report: inline CSS and SVG, one small optional inline script.

jinja2 autoescaping is on, so every string from the bundle is inert text. The Content-Security-
Policy allows no network access at all and only our own script, by its hash: even a string that
escaped escaping could not run.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from analyzer.facts.model import Evidence
from analyzer.report.model import NodeReport, Report
from analyzer.rules.conditions import human_duration

GPU_COLUMNS = ("id", "type", "devmem", "devcore", "count", "numa", "index", "mode", "health")
SEV_COLOUR = {
    "I": "var(--unk)",
    "W": "var(--warn)",
    "E": "var(--bad)",
    "F": "var(--bad)",
    None: "var(--unk)",
}
CHART_POINTS = 1500
SCRIPT = """
document.querySelectorAll('[data-copy]').forEach(function (b) {
  b.hidden = false;
  b.addEventListener('click', function () {
    var t = document.getElementById(b.getAttribute('data-copy')).textContent;
    if (navigator.clipboard) { navigator.clipboard.writeText(t); b.textContent = 'copied'; }
  });
});
var src = document.getElementById('tl-source'), sev = document.getElementById('tl-sev'), q = document.getElementById('tl-q');
function applyFilter() {
  var s = src.value, v = sev.value, text = q.value.toLowerCase();
  document.querySelectorAll('#tl-table tbody tr').forEach(function (r) {
    var ok = (!s || r.dataset.source === s) && (!v || 'IWEF'.indexOf(r.dataset.sev) >= 'IWEF'.indexOf(v))
      && (!text || r.textContent.toLowerCase().indexOf(text) >= 0);
    r.hidden = !ok;
  });
}
if (src) { document.getElementById('tl-filters').hidden = false; [src, sev, q].forEach(function (e) { e.addEventListener('input', applyFilter); }); }
""".strip()


def _highlight(e: Evidence) -> Markup:
    text = e.text or ""
    if e.span and 0 <= e.span[0] <= e.span[1] <= len(text):
        a, b = e.span
        return (
            escape(text[:a])
            + Markup("<mark>")
            + escape(text[a:b])
            + Markup("</mark>")
            + escape(text[b:])
        )
    return escape(text)


def _fmt_time(t: Any, year: bool) -> str:
    if not isinstance(t, dt.datetime):
        return "" if t is None else str(t)
    return t.strftime("%Y-%m-%d %H:%M:%S" if year else "%m-%d %H:%M:%S")


def _chart(d: NodeReport) -> dict[str, Any] | None:
    rows = [r for r in d.timeline if isinstance(r.time, dt.datetime)]
    logs = [r.time for r in rows if r.source != "node"]
    if logs:  # the chart spans the logs; node events far outside them (creation) are left out
        lo, hi = min(logs), max(logs)
        pad = max((hi - lo) * 0.05, dt.timedelta(seconds=30))
        rows = [r for r in rows if lo - pad <= r.time <= hi + pad]
    if len(rows) < 2:
        return None
    t0, t1 = min(r.time for r in rows), max(r.time for r in rows)
    span = max((t1 - t0).total_seconds(), 1.0)
    lanes = sorted({r.source for r in rows}, key=lambda s: (s != "node", s))
    width, left, lane_h = 1000, 150, 28
    step = max(1, len(rows) // CHART_POINTS)
    points = []
    for i, r in enumerate(rows):
        cited = bool(r.findings)
        if i % step and not cited and r.severity not in ("E", "F"):
            continue
        x = left + (width - left - 10) * (r.time - t0).total_seconds() / span
        y = 20 + lane_h * lanes.index(r.source) + lane_h / 2
        points.append(
            {
                "x": round(x, 1),
                "y": y,
                "r": 5 if cited else 3 if r.severity in ("E", "F") else 2,
                "colour": "var(--bad)" if cited else SEV_COLOUR.get(r.severity, "var(--unk)"),
                "title": f"{_fmt_time(r.time, True)} {r.file}:{r.line} {str(r.message or '')[:200]}",
            }
        )
    marks = []
    for e in d.episodes:
        if isinstance(e.time, dt.datetime) and t0 <= e.time <= t1:
            x = left + (width - left - 10) * (e.time - t0).total_seconds() / span
            marks.append({"x": round(x, 1), "kind": e.kind, "title": e.text})
    return {
        "width": width,
        "height": 40 + lane_h * len(lanes),
        "left": left,
        "lanes": [{"name": n, "y": 20 + lane_h * i + lane_h / 2} for i, n in enumerate(lanes)],
        "points": points,
        "marks": marks,
        "start": _fmt_time(t0, d.clock.year is not None),
        "end": _fmt_time(t1, d.clock.year is not None),
    }


def render_html(report: Report) -> str:
    env = Environment(
        loader=PackageLoader("analyzer", "render/templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["highlight"] = _highlight
    env.filters["when"] = lambda t, year=True: _fmt_time(t, year)
    env.filters["duration"] = lambda s: human_duration(s) if isinstance(s, int | float) else ""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return env.get_template("report.html.j2").render(
        report=report,
        diags=report.nodes,
        gpu_columns=GPU_COLUMNS,
        charts=[_chart(d) for d in report.nodes],
        script=Markup(SCRIPT),
        script_hash=f"sha256-{digest}",
    )
