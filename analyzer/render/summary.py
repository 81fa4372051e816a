"""summary.html for a batch: what fails, how often, across versions and time, and what no rule
explains yet (normalised error templates: candidates for new rules)."""

from __future__ import annotations

import polars as pl
from jinja2 import Environment, PackageLoader, select_autoescape


def _rows(frame: pl.DataFrame) -> list[dict]:
    return frame.to_dicts()


def render_summary(
    bundles: pl.DataFrame, findings: pl.DataFrame, unexplained: pl.DataFrame, all_rules: list[str]
) -> str:
    analysed = bundles.filter(pl.col("duplicate_of").is_null())
    ok = analysed.filter(pl.col("error").is_null())
    by_category = ok.group_by("category").len().sort(["len", "category"], descending=[True, False])
    faults = findings.filter(pl.col("kind") == "fault")
    by_rule = (
        findings.group_by("rule_id", "kind", "category")
        .agg(pl.col("bundle_id").n_unique().alias("bundles"))
        .sort(["bundles", "rule_id"], descending=[True, False])
    )
    fired = set(findings["rule_id"].unique().to_list())
    never = [r for r in all_rules if r not in fired]
    by_version = (
        ok.with_columns(pl.col("hami_version").fill_null("unknown"))
        .group_by("hami_version", "category")
        .len()
        .sort(["hami_version", "len"], descending=[False, True])
    )
    by_month = (
        ok.filter(pl.col("collected_at").is_not_null())
        .with_columns(pl.col("collected_at").dt.strftime("%Y-%m").alias("month"))
        .group_by("month", "category")
        .len()
        .sort(["month", "len"], descending=[False, True])
    )
    unexplained_bundles = ok.filter(pl.col("n_faults") == 0).filter(pl.col("category") != "healthy")
    ranked = (
        unexplained.group_by("bundle_id")
        .agg(pl.col("count").sum().alias("error_lines"))
        .join(
            unexplained_bundles.select("id", "path", "category"), left_on="bundle_id", right_on="id"
        )
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
        )
        .sort(["bundles", "lines", "template"], descending=[True, True, False])
        .head(50)
    )
    errors = (
        bundles.filter(pl.col("error").is_not_null()).select("id", "error").sort("id").head(200)
    )
    env = Environment(
        loader=PackageLoader("analyzer", "render/templates"),
        autoescape=select_autoescape(default=True),
    )
    return env.get_template("summary.html.j2").render(
        total=bundles.height,
        analysed=analysed.height,
        duplicates=bundles.height - analysed.height,
        failed=analysed.height - ok.height,
        with_fault=ok.filter(pl.col("n_faults") > 0).height,
        by_category=_rows(by_category),
        by_rule=_rows(by_rule),
        fault_findings=faults.height,
        never=never,
        by_version=_rows(by_version),
        by_month=_rows(by_month),
        ranked=_rows(ranked),
        templates=_rows(templates),
        errors=_rows(errors),
        max_category=max((r["len"] for r in _rows(by_category)), default=1),
    )
