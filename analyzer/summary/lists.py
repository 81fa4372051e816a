"""The tickets a grid column alone would not explain: undated and unversioned bundles grouped by
the clue they lacked, and duplicates with the copy they repeat."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analyzer.summary.grids import DRILL_CAP, Drill, drill


@dataclass(frozen=True)
class Reason:
    reason: str
    drill: Drill


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
