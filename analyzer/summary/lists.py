"""The tickets a grid column alone would not explain: undated and unversioned bundles grouped by
the clue they lacked, bundles whose inputs were not all used (input warnings by source), and
duplicates with the copy they repeat."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analyzer.summary.grids import DRILL_CAP, Drill, drill


@dataclass(frozen=True)
class Reason:
    reason: str
    drill: Drill


@dataclass(frozen=True)
class Warned:
    source: str
    what: str
    warnings: int
    example: str
    drill: Drill


# what each `source` of warnings.parquet means, in the order the summary lists them
WARNING_TITLES = {
    "attribution": "a per-node log of none of the bundle's nodes: evidence for no node",
    "read": "files or archive members not read whole (corrupt, skipped, lines cut)",
    "parse": "files a parser could read only in part (YAML errors, cut sections)",
    "recognise": "files that could not be decoded cleanly",
    "nodes": "Node objects left out (more nodes than are analysed)",
    "select": "older pastes of an issue thread replaced by newer ones",
    "unrecognised": "files no kind matched (scanned for known log lines only, or not read)",
}


def warned(warnings: pl.DataFrame, tickets: pl.DataFrame) -> tuple[Warned, ...]:
    """Analysed bundles with input warnings, grouped by the stage that raised them, the
    sources that cost evidence first."""
    order = {s: i for i, s in enumerate(WARNING_TITLES)}
    groups = (
        warnings.join(tickets.select(pl.col("id").alias("bundle_id")), on="bundle_id")
        .group_by("source")
        .agg(pl.len().alias("n"), pl.col("message").min().alias("example"), "bundle_id")
        .sort(pl.col("source").replace_strict(order, default=len(order)), "source")
    )
    return tuple(
        Warned(
            source,
            WARNING_TITLES.get(source, source),
            n,
            example,
            drill(f"iw-{i}", f"input warnings: {source}", ids),
        )
        for i, (source, n, example, ids) in enumerate(groups.iter_rows())
    )


@dataclass(frozen=True)
class Duplicate:
    ticket: str
    original: str  # bundle id of the analysed copy
    how: str


def reasons(tickets: pl.DataFrame, column: str, key: str) -> tuple[Reason, ...]:
    """Bundles with a reason in `column`, grouped by it, most frequent first."""
    groups = (
        tickets.filter(pl.col(column).is_not_null())
        .group_by(column)
        .agg("id")
        .with_columns(pl.col("id").list.len().alias("n"))
        .sort(["n", column], descending=[True, False])
    )
    return tuple(
        Reason(why, drill(f"{key}-{i}", why, ids))
        for i, (why, ids, _n) in enumerate(groups.iter_rows())
    )


def duplicates(bundles: pl.DataFrame) -> tuple[Duplicate, ...]:
    """Byte-identical copies were skipped before analysis; same-content copies after it."""
    dups = bundles.filter(pl.col("duplicate_of").is_not_null()).join(
        bundles.select(pl.col("id").alias("duplicate_of"), pl.col("digest").alias("_od")),
        on="duplicate_of",
        how="left",
    )
    return tuple(
        Duplicate(
            r["ticket"] or r["id"],
            r["duplicate_of"],
            "identical bytes"
            if r["digest"] == r["_od"]
            else "same files under another name or packing",
        )
        for r in dups.sort("id").head(DRILL_CAP * 5).iter_rows(named=True)
    )
