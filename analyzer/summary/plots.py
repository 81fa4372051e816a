"""Stacked bars of a grid (one bar per column, one segment per row), laid out here and drawn as
inline SVG by the template, like the report's timeline chart. Each segment links to its tickets."""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.summary.grids import Grid

# distinguishable in light and dark themes; rows past the palette are summed as "other"
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
)
OTHER = "#9c9c9c"
WIDTH, HEIGHT, LEFT, TOP, BOTTOM = 960, 280, 44, 12, 56


@dataclass(frozen=True)
class Segment:
    y: float
    height: float
    colour: str
    title: str
    anchor: str | None


@dataclass(frozen=True)
class Bar:
    label: str
    x: float
    width: float
    total: int
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class Plot:
    width: int
    height: int
    left: int
    base: float  # y of the axis
    ticks: tuple[tuple[float, int], ...]  # (y, value)
    bars: tuple[Bar, ...]
    legend: tuple[tuple[str, str], ...]  # (label, colour)


def stacked_bars(grid: Grid) -> Plot | None:
    """None when the grid is empty."""
    top = max((t.count for t in grid.totals), default=0)
    if not grid.rows or top == 0:
        return None
    shown = grid.rows[: len(PALETTE)]
    rest = grid.rows[len(PALETTE) :]
    colour = {r.label: PALETTE[i] for i, r in enumerate(shown)}
    base = HEIGHT - BOTTOM
    scale = (base - TOP) / top
    slot = (WIDTH - LEFT - 8) / len(grid.columns)
    bars = []
    for j, col in enumerate(grid.columns):
        y: float = base
        segments = []
        for r in shown:
            c = r.cells[j]
            if c.count:
                h = c.count * scale
                y -= h
                segments.append(
                    Segment(
                        round(y, 1),
                        round(h, 1),
                        colour[r.label],
                        f"{r.label}, {col}: {c.count}",
                        c.anchor,
                    )
                )
        other = sum(r.cells[j].count for r in rest)
        if other:
            h = other * scale
            y -= h
            segments.append(
                Segment(round(y, 1), round(h, 1), OTHER, f"other, {col}: {other}", None)
            )
        width = min(slot * 0.7, 60)
        x = LEFT + slot * j + (slot - width) / 2
        bars.append(Bar(col, round(x, 1), round(width, 1), grid.totals[j].count, tuple(segments)))
    step = max(1, -(-top // 4))
    ticks = tuple((round(base - v * scale, 1), v) for v in range(0, top + 1, step))
    legend = tuple((r.label, colour[r.label]) for r in shown) + (
        (("other", OTHER),) if rest else ()
    )
    return Plot(WIDTH, HEIGHT, LEFT, base, ticks, tuple(bars), legend)
