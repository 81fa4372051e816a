"""summary.html for a batch: what fails, how often, across HAMi releases, time and customers, what
grew, and what no rule explains yet (normalised error templates: candidates for new rules). A
table of contents leads; every count opens the tickets behind it (an anchor in the page), and
each ticket its report when one was written.

Everything from the bundles is untrusted: jinja2 autoescaping, anchors made from indices only,
report links only of the form `reports/<safe name>.html`; the page runs no script.
"""

from __future__ import annotations

import functools

import polars as pl
from jinja2 import Environment
from markupsafe import Markup

from analyzer.render.pages import page_environment
from analyzer.summary import grids, lists, plots, trends
from analyzer.summary.tickets import report_href

TEMPLATE = "summary.html.j2"
ROWS = "summary_rows.html.j2"  # its drill-down lists' rows


@functools.cache
def _environment() -> Environment:
    return page_environment({"pct": lambda x: f"{100 * x:.0f}%" if x >= 0.01 or x == 0 else "<1%"})


def prepare() -> None:
    """The page's template loaded (compiled, or read from the cache), ahead of its rendering."""
    _environment().get_template(TEMPLATE)
    _environment().get_template(ROWS)


def _rows(frame: pl.DataFrame) -> list[dict]:
    return frame.to_dicts()


def _ticket_refs(tickets: pl.DataFrame) -> dict[str, dict]:
    """What a drill-down list shows of each bundle, by id."""
    return {
        r["id"]: {
            "ticket": r["ticket"] or r["id"],
            "href": report_href(r["report"]),
            "category": r["category"],
            "rule_id": r["rule_id"],
            "version": r["version"],
            "month": r["month"],
            "customer": r.get("customer"),
        }
        for r in tickets.iter_rows(named=True)
    }


def _listed(drills: list[grids.Drill], refs: dict[str, dict], customers: bool) -> dict[str, Markup]:
    """Each drill-down list's rows, by its anchor: each bundle's row (`ROWS`) rendered once and
    the lists joined here. A bundle is listed under every count it is in, and rendering its
    row in each list was half the page's time (~60 ms of 1,000 bundles', with the workers of
    `batch` idle)."""
    row = _environment().get_template(ROWS).module.ticket_row  # type: ignore[attr-defined]
    rows = {id_: row(t, customers) for id_, t in refs.items()}
    return {d.anchor: Markup("".join(rows[id_] for id_ in d.ids)) for d in drills}


def _with_metadata(tickets: pl.DataFrame, meta: pl.DataFrame | None) -> tuple[pl.DataFrame, dict]:
    """The tickets with the metadata columns of their ticket, and how well the two matched."""
    if meta is None or meta.is_empty() or "ticket" not in tickets.columns:
        return tickets, {}
    extra = [c for c in meta.columns if c != "ticket" and c not in tickets.columns]
    joined = tickets.join(meta.select("ticket", *extra), on="ticket", how="left")
    known = set(tickets["ticket"].drop_nulls().to_list())
    rows = meta["ticket"].to_list()
    return joined, {
        "columns": extra,
        "matched": sum(1 for t in rows if t in known),
        "unmatched": sum(1 for t in rows if t not in known),
        "bundles_without": joined.height - joined.join(meta.select("ticket"), on="ticket").height,
    }


def _customers(tickets: pl.DataFrame, grid: grids.Grid | None) -> list[dict]:
    """Per customer: its bundles, those with a fault, its commonest categories, first and last
    ticket opened (when the metadata has opened_at)."""
    if grid is None:
        return []
    out = []
    for r in grid.rows:
        mine = tickets.filter(pl.col("customer").fill_null(grids.NO_CUSTOMER) == r.label)
        opened = (
            mine["opened_at"].drop_nulls().sort().to_list() if "opened_at" in mine.columns else []
        )
        top = sorted(
            ((c, col) for c, col in zip(r.cells, grid.columns, strict=True) if c.count),
            key=lambda x: -x[0].count,
        )[:3]
        out.append(
            {
                "label": r.label,
                "total": r.total,
                "faults": mine.filter(pl.col("n_faults") > 0).height,
                "top": top,
                "opened": (opened[0], opened[-1]) if opened else None,
            }
        )
    return out


def render_summary(
    bundles: pl.DataFrame,
    findings: pl.DataFrame,
    unexplained: pl.DataFrame,
    all_rules: list[str],
    meta: pl.DataFrame | None = None,
    warnings: pl.DataFrame | None = None,
) -> str:
    """`warnings`: warnings.parquet (None: a batch without it)."""
    analysed = bundles.filter(pl.col("duplicate_of").is_null())
    tickets, matched = _with_metadata(grids.ticket_frame(bundles), meta)
    by_month = grids.category_grid(tickets, "month", "cm", "Primary category by collection month")
    by_version = grids.category_grid(tickets, "release", "cv", "Primary category by HAMi release")
    by_rule_month = grids.rule_grid(tickets, findings)
    by_customer = grids.customer_grid(tickets)
    rule_anchor = {r.label: r.total.anchor for r in by_rule_month.rows}
    by_rule = (
        findings.join(tickets.select(pl.col("id").alias("bundle_id")), on="bundle_id")
        .group_by("rule_id", "kind", "category")
        .agg(pl.col("bundle_id").n_unique().alias("bundles"))
        .sort(["bundles", "rule_id"], descending=[True, False])
    )
    fired = set(findings["rule_id"].unique().to_list())
    unexplained_bundles = tickets.filter(pl.col("n_faults") == 0).filter(
        pl.col("category") != "healthy"
    )
    ranked = (
        unexplained.group_by("bundle_id")
        .agg(pl.col("count").sum().alias("error_lines"))
        .join(unexplained_bundles.select("id", "category"), left_on="bundle_id", right_on="id")
        .sort(["error_lines", "bundle_id"], descending=[True, False])
        .head(50)
    )
    templates = (
        unexplained.join(
            unexplained_bundles.select(pl.col("id").alias("bundle_id")), on="bundle_id"
        )
        .group_by("template")
        .agg(
            pl.col("count").sum().alias("lines"),
            pl.col("bundle_id").n_unique().alias("bundles"),
            pl.col("example").first(),
            pl.col("bundle_id").alias("ids"),
        )
        .sort(["bundles", "lines", "template"], descending=[True, True, False])
        .head(50)
    )
    template_drills = [
        grids.drill(f"ut-{i}", f"unexplained error line {t}", ids)
        for i, (t, ids) in enumerate(templates.select("template", "ids").iter_rows())
    ]
    errors = (
        bundles.filter(pl.col("error").is_not_null())
        .select("id", "ticket", "error")
        .sort("id")
        .head(200)
    )
    undated = lists.reasons(tickets, "undated_reason", "ud")
    unversioned = lists.reasons(tickets, "unversioned_reason", "uv")
    warned = lists.warned(warnings, tickets) if warnings is not None else ()
    n_warned = (
        warnings.join(tickets.select(pl.col("id").alias("bundle_id")), on="bundle_id")[
            "bundle_id"
        ].n_unique()
        if warnings is not None
        else 0
    )
    grid_list = [by_month, by_version, by_rule_month]
    gaps = grids.missing_months(tickets["month"].to_list())
    customers = _customers(tickets, by_customer)
    refs = _ticket_refs(tickets)
    drills = [
        *(d for g in [*grid_list, by_customer] if g for d in g.drills),
        *(r.drill for r in undated + unversioned),
        *(w.drill for w in warned),
        *template_drills,
    ]
    template = _environment().get_template(TEMPLATE)
    return template.render(
        total=bundles.height,
        analysed=tickets.height,
        duplicates=lists.duplicates(bundles),
        n_duplicates=bundles.height - analysed.height,
        failed=analysed.height - analysed.filter(pl.col("error").is_null()).height,
        with_fault=tickets.filter(pl.col("n_faults") > 0).height,
        undated=undated,
        unversioned=unversioned,
        n_undated=sum(r.drill.total for r in undated),
        n_unversioned=sum(r.drill.total for r in unversioned),
        warned=warned,
        n_warned=n_warned,
        rule_anchor=rule_anchor,
        by_rule=_rows(by_rule),
        never=[r for r in all_rules if r not in fired],
        grids=grid_list,
        plots={g.key: plots.stacked_bars(g) for g in grid_list[:2]},
        trends=[t for t in (trends.trends(by_month), trends.trends(by_rule_month)) if t],
        gaps=gaps,
        meta=matched,
        customers=customers,
        drills=drills,
        refs=refs,
        listed=_listed(drills, refs, bool(customers)),
        ranked=_rows(ranked),
        templates=list(zip(_rows(templates.drop("ids")), template_drills, strict=True)),
        errors=_rows(errors),
        max_category=max((r.total.count for r in by_month.rows), default=1),
    )
