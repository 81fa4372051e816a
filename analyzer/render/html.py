"""Self-contained HTML report (inline CSS, no scripts, no external resources).

jinja2 autoescaping is on: every string from the bundle is rendered as inert text.
"""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from analyzer.diagnosis import Diagnosis, Evidence

GPU_COLUMNS = ("id", "type", "devmem", "devcore", "count", "numa", "index", "mode", "health")


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


def render_html(diags: list[Diagnosis]) -> str:
    env = Environment(
        loader=PackageLoader("analyzer", "render/templates"),
        autoescape=select_autoescape(default=True),
    )
    env.filters["highlight"] = _highlight
    return env.get_template("report.html.j2").render(diags=diags, gpu_columns=GPU_COLUMNS)
