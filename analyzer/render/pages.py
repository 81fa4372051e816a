"""The jinja2 environment of the HTML pages (templates/: the report, the batch summary)."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader

from analyzer.cache import cached_environment


def page_environment(filters: dict[str, Any], names: dict[str, Any] | None = None) -> Environment:
    """An environment for the pages with these filters and global names, its templates'
    compiled code kept in the cache folder (compiled afresh, report.html.j2 cost every HTML
    report ~40 ms). Autoescaping is on: every string from a bundle is inert text. Each page
    makes one per process (`batch --reports` renders a page per bundle)."""
    env = cached_environment(
        Environment,
        PackageLoader("analyzer", "render/templates"),
        filters,
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(names or {})
    return env
