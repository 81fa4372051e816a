"""What grew: each fault row of a month grid, the latest dated month against the one before it
that has bundles, saying which months in between had none."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.summary.grids import UNDATED, Grid, missing_months

NOT_FAULTS = frozenset({"healthy", "inconclusive", "none"})  # categories that are no fault


@dataclass(frozen=True)
class Trend:
    label: str
    before: int
    after: int
    before_share: float  # of that month's bundles
    after_share: float
    anchor: str | None  # the latest month's tickets of this row


@dataclass(frozen=True)
class Trends:
    what: str  # the grid's row name: category, rule
    before: str
    after: str
    rows: tuple[Trend, ...]  # grown first, by how much
    empty: tuple[str, ...] = ()  # months between `before` and `after` without any bundle


def trends(grid: Grid) -> Trends | None:
    """None when fewer than two dated months exist (nothing to compare). Rows that are no fault
    (healthy, inconclusive) are left out: a trend is of faults."""
    dated = [j for j, c in enumerate(grid.columns) if c != UNDATED]
    if len(dated) < 2:
        return None
    b, a = dated[-2], dated[-1]
    nb, na = max(grid.totals[b].count, 1), max(grid.totals[a].count, 1)
    rows = [
        Trend(
            r.label,
            r.cells[b].count,
            r.cells[a].count,
            r.cells[b].count / nb,
            r.cells[a].count / na,
            r.cells[a].anchor,
        )
        for r in grid.rows
        if (r.cells[a].count or r.cells[b].count) and r.label not in NOT_FAULTS
    ]
    rows.sort(key=lambda t: (-(t.after - t.before), -(t.after_share - t.before_share), t.label))
    empty = tuple(missing_months([grid.columns[b], grid.columns[a]]))
    return Trends(grid.row_name, grid.columns[b], grid.columns[a], tuple(rows), empty)
