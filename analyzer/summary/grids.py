"""Cross-tab grids of the batch (category x month, category x version, rule x month) with the
tickets behind every count, so each number in the summary can be opened to see who it is.

Every ticket stays in a grid: no collection month is the column "undated", no version the column
"unknown". Counts are distinct bundles; shares are of all analysed bundles.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analyzer.versions import Range

UNDATED, UNKNOWN = "undated", "unknown"
DRILL_CAP = 200  # tickets listed under one count; the rest are counted, and are in bundles.parquet


@dataclass(frozen=True)
class Drill:
    """The tickets behind one count: an anchor in the page and the bundle ids (capped)."""

    anchor: str
    title: str
    ids: tuple[str, ...]
    total: int


def drill(anchor: str, title: str, ids: list[str]) -> Drill:
    """The sorted distinct ids behind a count, at most DRILL_CAP of them listed."""
    ids = sorted(set(ids))
    return Drill(anchor, title, tuple(ids[:DRILL_CAP]), len(ids))


@dataclass(frozen=True)
class Cell:
    count: int
    share: float  # of all analysed bundles
    anchor: str | None  # where its tickets are listed; None for an empty cell


@dataclass(frozen=True)
class Row:
    label: str
    cells: tuple[Cell, ...]
    total: Cell


@dataclass(frozen=True)
class Grid:
    key: str
    title: str
    row_name: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    totals: tuple[Cell, ...]  # per column
    total: Cell
    drills: tuple[Drill, ...]


def ticket_frame(bundles: pl.DataFrame) -> pl.DataFrame:
    """The analysed bundles (no duplicates, no errors) with their month and version columns."""
    return bundles.filter(
        pl.col("duplicate_of").is_null() & pl.col("error").is_null()
    ).with_columns(
        pl.col("collected_at").dt.strftime("%Y-%m").fill_null(UNDATED).alias("month"),
        pl.col("hami_version").fill_null(UNKNOWN).alias("version"),
    )


def month_order(months: list[str]) -> list[str]:
    """
    >>> month_order(["undated", "2026-09", "2026-08"])
    ['2026-08', '2026-09', 'undated']
    """
    return sorted(m for m in set(months) if m != UNDATED) + ([UNDATED] if UNDATED in months else [])


def version_order(versions: list[str]) -> list[str]:
    """Ranges by their lower then upper bound; 'unknown' last, and always a column.

    >>> version_order(["v2.8.1", "unknown", ">=v2.5.0,<v2.8.0", "v2.10.0"])
    ['>=v2.5.0,<v2.8.0', 'v2.8.1', 'v2.10.0', 'unknown']
    """

    def key(v: str) -> tuple:
        try:
            r = Range.parse(v)
        except ValueError:
            return (1, (0, 0, 0), (0, 0, 0), v)
        return (0, r.lo, r.hi, v)

    return sorted((v for v in set(versions) if v != UNKNOWN), key=key) + [UNKNOWN]


def build_grid(
    pairs: pl.DataFrame, key: str, title: str, row_name: str, columns: list[str], base: int
) -> Grid:
    """`pairs` holds one row per (id, row, col); counts are distinct ids."""
    pairs = pairs.unique(["id", "row", "col"])
    drills: list[Drill] = []

    def cell(ids: list[str], anchor: str, what: str) -> Cell:
        if not ids:
            return Cell(0, 0.0, None)
        drills.append(drill(anchor, what, ids))
        return Cell(drills[-1].total, drills[-1].total / max(base, 1), anchor)

    by_cell = {(r, c): ids for r, c, ids in pairs.group_by("row", "col").agg("id").iter_rows()}
    by_row = {r: ids for r, ids in pairs.group_by("row").agg("id").iter_rows()}
    by_col = {c: ids for c, ids in pairs.group_by("col").agg("id").iter_rows()}
    labels = sorted(by_row, key=lambda r: (-len(set(by_row[r])), r))
    rows = []
    for i, r in enumerate(labels):
        cells = tuple(
            cell(by_cell.get((r, c), []), f"{key}-{i}-{j}", f"{row_name} {r}, {c}")
            for j, c in enumerate(columns)
        )
        rows.append(Row(r, cells, cell(by_row[r], f"{key}-{i}", f"{row_name} {r}")))
    totals = tuple(
        cell(by_col.get(c, []), f"{key}-c{j}", f"{title}: {c}") for j, c in enumerate(columns)
    )
    total = cell(pairs["id"].to_list(), f"{key}-all", title)
    return Grid(key, title, row_name, tuple(columns), tuple(rows), totals, total, tuple(drills))


def category_grid(tickets: pl.DataFrame, by: str, key: str, title: str) -> Grid:
    """Primary category x month (by='month') or x HAMi version (by='version')."""
    pairs = tickets.select(
        "id", pl.col("category").fill_null("none").alias("row"), pl.col(by).alias("col")
    )
    order = month_order if by == "month" else version_order
    return build_grid(pairs, key, title, "category", order(pairs["col"].to_list()), tickets.height)


def rule_grid(tickets: pl.DataFrame, findings: pl.DataFrame) -> Grid:
    """Rules that fired (faults and normal notes; not the 'link intact' oks) x month."""
    pairs = (
        findings.filter(pl.col("kind") != "ok")
        .select(pl.col("bundle_id").alias("id"), pl.col("rule_id").alias("row"))
        .join(tickets.select("id", pl.col("month").alias("col")), on="id")
    )
    columns = month_order(tickets["month"].to_list())
    return build_grid(pairs, "rm", "Rules by collection month", "rule", columns, tickets.height)
