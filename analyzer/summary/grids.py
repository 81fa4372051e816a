"""Cross-tab grids of the batch (category x month, category x HAMi release, fault rule x month,
customer x category) with the tickets behind every count, so each number in the summary can be
opened to see who it is.

Every ticket stays in a grid: no collection month is the column "undated", no version the column
"unknown". Counts are distinct bundles; shares are of all analysed bundles.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analyzer.versions import LOW, Range

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
    """The analysed bundles (no duplicates, no errors) with their month, version and release."""
    frame = bundles.filter(
        pl.col("duplicate_of").is_null() & pl.col("error").is_null()
    ).with_columns(
        pl.col("collected_at").dt.strftime("%Y-%m").fill_null(UNDATED).alias("month"),
        pl.col("hami_version").fill_null(UNKNOWN).alias("version"),
    )
    return frame.with_columns(
        pl.Series("release", [release_of(v) for v in frame["version"]], dtype=pl.String)
    )


def release_of(version: str) -> str:
    """The HAMi release (minor line) a version range starts at: version clues mostly give a lower
    bound ("the annotation format of v2.10 or later"), so a bundle is counted under the oldest
    release it can be, and every bundle under exactly one release.

    >>> [release_of(v) for v in ("v2.8.1", ">=v2.10.0", ">=v2.5.0,<v2.8.0", "<v2.8.0", "unknown")]
    ['v2.8', 'v2.10', 'v2.5', 'before v2.8', 'unknown']
    """
    try:
        r = Range.parse(version)
    except ValueError:
        return UNKNOWN
    if r.lo == LOW:
        return UNKNOWN if r.hi[0] >= 999 else f"before v{r.hi[0]}.{r.hi[1]}"
    return f"v{r.lo[0]}.{r.lo[1]}"


def release_order(releases: list[str]) -> list[str]:
    """
    >>> release_order(["v2.10", "unknown", "v2.8", "before v2.5"])
    ['before v2.5', 'v2.8', 'v2.10', 'unknown']
    """

    def key(r: str) -> tuple:
        before = r.startswith("before ")
        major, _, minor = r.removeprefix("before ").removeprefix("v").partition(".")
        return (0 if before else 1, int(major), int(minor or 0))

    return sorted((r for r in set(releases) if r != UNKNOWN), key=key) + [UNKNOWN]


def missing_months(months: list[str]) -> list[str]:
    """The months between the first and the last dated one that have no bundle.

    >>> missing_months(["2026-05", "2026-08", "undated"])
    ['2026-06', '2026-07']
    """
    dated = sorted(m for m in set(months) if m != UNDATED)
    if len(dated) < 2:
        return []
    (y, m), end = map(int, dated[0].split("-")), dated[-1]
    out = []
    while f"{y:04d}-{m:02d}" < end:
        if f"{y:04d}-{m:02d}" not in dated:
            out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


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


ORDERS = {"month": month_order, "version": version_order, "release": release_order}


def category_grid(tickets: pl.DataFrame, by: str, key: str, title: str) -> Grid:
    """Primary category x month (by='month'), HAMi release ('release') or version ('version')."""
    pairs = tickets.select(
        "id", pl.col("category").fill_null("none").alias("row"), pl.col(by).alias("col")
    )
    columns = ORDERS[by](pairs["col"].to_list())
    return build_grid(pairs, key, title, "category", columns, tickets.height)


def rule_grid(tickets: pl.DataFrame, findings: pl.DataFrame) -> Grid:
    """Fault rules that fired x month (normal notes and 'link intact' oks are no trend)."""
    pairs = (
        findings.filter(pl.col("kind") == "fault")
        .select(pl.col("bundle_id").alias("id"), pl.col("rule_id").alias("row"))
        .join(tickets.select("id", pl.col("month").alias("col")), on="id")
    )
    columns = month_order(tickets["month"].to_list())
    return build_grid(pairs, "rm", "Faults by collection month", "rule", columns, tickets.height)


def customer_grid(tickets: pl.DataFrame) -> Grid | None:
    """Customer x primary category, from the ticket metadata joined to the bundles (None when
    no customer is known); the columns are the categories, most frequent first."""
    if "customer" not in tickets.columns:
        return None
    pairs = tickets.select(
        "id",
        pl.col("customer").fill_null(NO_CUSTOMER).alias("row"),
        pl.col("category").fill_null("none").alias("col"),
    )
    counts = pairs.group_by("col").len().sort(["len", "col"], descending=[True, False])
    return build_grid(
        pairs,
        "cc",
        "Primary category by customer",
        "customer",
        counts["col"].to_list(),
        tickets.height,
    )


NO_CUSTOMER = "(no ticket metadata)"
