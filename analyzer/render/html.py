"""Self-contained HTML report: inline CSS and SVG, one small optional inline script.

jinja2 autoescaping is on, so every string from the bundle is inert text. The Content-Security-
Policy allows no network access at all and only our own script, by its hash: even a string that
escaped escaping could not run.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import re
from typing import Any

from jinja2 import Environment, pass_context
from jinja2.runtime import Context
from markupsafe import Markup, escape

from analyzer.catalogue.messages import message
from analyzer.facts.model import Evidence
from analyzer.render.evidence import fresh, grouped
from analyzer.render.pages import page_environment
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
FINDING_COLOUR = {"critical": "var(--bad)", "error": "var(--bad)", "warning": "var(--warn)"}
CHART_POINTS = 1500
# tick steps of the timeline axis (seconds): the smallest that gives at most 7 ticks
TICK_STEPS: tuple[int, ...] = (
    *(1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200),
    *(86400 * d for d in (1, 2, 7, 14, 30, 91, 182, 365)),
)
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


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _prose(text: object) -> Markup:
    """A rule's text: escaped, with its Markdown `code` spans as <code>.

    >>> str(_prose("a `<b>` c"))
    'a <code>&lt;b&gt;</code> c'
    """
    return Markup(_CODE_SPAN.sub(r"<code>\1</code>", str(escape(str(text)))))


def _ticks(t0: dt.datetime, t1: dt.datetime, year: bool) -> list[tuple[float, str]]:
    """(seconds after t0, label) of round times between t0 and t1, at most 7.

    >>> a = dt.datetime(2026, 8, 15, 9, 0, 0, tzinfo=dt.UTC)
    >>> _ticks(a, a + dt.timedelta(seconds=150), True)
    [(0.0, '08-15 09:00:00'), (30.0, '09:00:30'), (60.0, '09:01:00'), (90.0, '09:01:30'), (120.0, '09:02:00'), (150.0, '09:02:30')]
    """
    span = max((t1 - t0).total_seconds(), 1.0)
    step = next((x for x in TICK_STEPS if span / x <= 6), TICK_STEPS[-1])
    epoch = t0.timestamp()
    first = -(-epoch // step) * step  # the first multiple of step at or after t0
    long = span >= 86400 or step >= 86400
    out: list[tuple[float, str]] = []
    x = first
    while x <= t1.timestamp() + 1e-6:
        t = dt.datetime.fromtimestamp(x, dt.UTC)
        if long:
            label = t.strftime("%Y-%m-%d" if step >= 86400 and year else "%m-%d %H:%M")
        else:
            label = t.strftime("%H:%M:%S" if step < 60 else "%H:%M")
            if not out:  # the date once, on the first tick
                label = t.strftime("%m-%d ") + label
        out.append((x - epoch, label))
        x += step
    return out


def _fmt_time(t: Any, year: bool) -> str:
    if not isinstance(t, dt.datetime):
        return "" if t is None else str(t)
    return t.strftime("%Y-%m-%d %H:%M:%S" if year else "%m-%d %H:%M:%S")


def _chart(d: NodeReport, prefix: str = "") -> dict[str, Any] | None:
    timed = [(r.time, r) for r in d.timeline if isinstance(r.time, dt.datetime)]
    logs = [t for t, r in timed if r.source != "node"]
    if logs:  # the chart spans the logs; node events far outside them (creation) are left out
        lo, hi = min(logs), max(logs)
        pad = max((hi - lo) * 0.05, dt.timedelta(seconds=30))
        timed = [(t, r) for t, r in timed if lo - pad <= t <= hi + pad]
    if len(timed) < 2:
        return None
    rows = [r for _, r in timed]
    t0, t1 = min(t for t, _ in timed), max(t for t, _ in timed)
    span = max((t1 - t0).total_seconds(), 1.0)
    lanes = sorted({r.source for r in rows}, key=lambda s: (s != "node", s))
    width, left, lane_h = 1000, 150, 28
    step = max(1, len(rows) // CHART_POINTS)
    findings = {f.rule_id: f for f in d.all_findings()}
    # lines of a signature that a "looks wrong but is normal" finding cites are not alarming
    benign = {e.signature for f in d.normals() for e in f.evidence if e.signature}
    points = []
    for i, (t, r) in enumerate(timed):
        citing = [findings[x] for x in (r.findings or "").split(",") if x in findings]
        if i % step and not citing and r.severity not in ("E", "F"):
            continue
        x = left + (width - left - 10) * (t - t0).total_seconds() / span
        y = 20 + lane_h * lanes.index(r.source) + lane_h / 2
        faults = [f for f in citing if f.kind == "fault"]
        if faults:  # coloured as the worst fault citing it
            colour = FINDING_COLOUR.get(faults[0].severity, "var(--unk)")
            if any(f.severity in ("critical", "error") for f in faults):
                colour = "var(--bad)"
        elif citing or set((r.signature or "").split(",")) & benign:
            colour = "var(--ok)"
        else:
            colour = SEV_COLOUR.get(r.severity, "var(--unk)")
        points.append(
            {
                "x": round(x, 1),
                "y": y,
                "r": 5 if citing else 3 if r.severity in ("E", "F") else 2,
                "colour": colour,
                "title": f"{_fmt_time(t, True)} {_inside(r.file, prefix)}:{r.line} {str(r.message or '')[:200]}",
            }
        )
    marks = []
    for e in d.episodes:
        if isinstance(e.time, dt.datetime) and t0 <= e.time <= t1:
            x = left + (width - left - 10) * (e.time - t0).total_seconds() / span
            marks.append({"x": round(x, 1), "kind": e.kind, "title": e.text})
    scale = (width - left - 10) / span
    return {
        "width": width,
        "height": 44 + lane_h * len(lanes),
        "left": left,
        "lanes": [{"name": n, "y": 20 + lane_h * i + lane_h / 2} for i, n in enumerate(lanes)],
        "points": points,
        "marks": marks,
        "ticks": [
            {"x": round(left + scale * sec, 1), "label": label}
            for sec, label in _ticks(t0, t1, d.clock.year is not None)
        ],
    }


def _inside(text: object, prefix: str | None) -> str:
    """A file name inside the bundle: the archive (`prefix`) is named once, at the top."""
    return str(text).replace(prefix, "") if prefix else str(text)


@pass_context
def _rel(context: Context, text: object) -> str:
    """`_inside`, the page's own archive read from its context."""
    return _inside(text, context.get("prefix"))


@functools.cache
def _environment() -> Environment:
    return page_environment(
        {
            "highlight": _highlight,
            "prose": _prose,
            "rel": _rel,
            "when": lambda t, year=True: _fmt_time(t, year),
            "duration": lambda s: human_duration(s) if isinstance(s, int | float) else "",
        },
        {"message": message, "grouped": grouped, "fresh": fresh},
    )


def render_html(report: Report) -> str:
    archive, prefix = report.archive
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        prefix=prefix,
        diags=report.nodes,
        gpu_columns=GPU_COLUMNS,
        charts=[_chart(d, prefix) for d in report.nodes],
        archive=archive,
        script=Markup(SCRIPT),
        script_hash=f"sha256-{digest}",
    )
