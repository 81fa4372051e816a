"""Polars queries across the versions the package takes (pyproject: polars>=1.20)."""

from __future__ import annotations

import re

import polars as pl


def _in_memory_engine(version: str) -> str:
    """The in-memory engine's name in this polars. Polars 2 runs `LazyFrame.collect()` on its
    streaming engine, whose first query starts threads of its own that a few hundred rows do not
    need; the in-memory engine is "in-memory" from 1.25, "cpu" before.

    >>> _in_memory_engine("2.1.0"), _in_memory_engine("1.25.2"), _in_memory_engine("1.20.0")
    ('in-memory', 'in-memory', 'cpu')
    """
    m = re.match(r"(\d+)\.(\d+)", version)
    major_minor = (int(m[1]), int(m[2])) if m else (0, 0)
    return "in-memory" if major_minor >= (1, 25) else "cpu"


IN_MEMORY = _in_memory_engine(pl.__version__)


def collect(query: pl.LazyFrame) -> pl.DataFrame:
    """`query` run by the in-memory engine (`IN_MEMORY`)."""
    return query.collect(engine=IN_MEMORY)  # type: ignore[call-overload]  # a name of either era
