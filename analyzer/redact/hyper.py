"""A Hyperscan pass over a piece's bytes: which lines the prefilters select.

One Hyperscan database of every prefilter (each made a line pattern the way the big-log scan
makes its signatures: `parse.bytescan.line_pattern`) scans a piece without Python's lock, about
twice as fast as polars splitting it into lines and running the alternation over them. Byte mode
reads `\\w`, `\\d`, `\\b` and `(?i)` as ASCII: on a line of ASCII that is what Rust's regex crate
reads, so there the lines found are the lines polars finds (a match that would cross a line's end
only adds a candidate, which is never wrong). Lines holding a byte outside ASCII are reported by
a pattern of their own and checked by polars with the prefilters as written."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from analyzer.parse.bytescan import compile_database, hyperscan, line_pattern

NON_ASCII = r"[\x80-\xff][^\n]*$"  # one report per line holding a byte outside ASCII


class _Scanner:
    """A compiled database and each thread's scratch space (one scan at a time may use one)."""

    def __init__(self, database: Any):
        self.database = database
        self._local = threading.local()

    def ends(self, raw: bytes, n_patterns: int) -> list[list[int]]:
        """The end offsets of each pattern's matches, in order."""
        assert hyperscan is not None
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self.database)
        found: list[list[int]] = [[] for _ in range(n_patterns)]

        def on_match(pattern: int, _start: int, end: int, _flags: int, _context: object) -> None:
            found[pattern].append(end)

        self.database.scan(raw, match_event_handler=on_match, scratch=scratch)
        return found


def line_start(raw: bytes, end: int) -> int:
    """The start of the line a match ending at `end` ends on (a match is never empty)."""
    return raw.rfind(b"\n", 0, max(end - 1, 0)) + 1


def number(raw: bytes, starts: list[int]) -> dict[int, int]:
    """line start -> line number (0 = the piece's first), for sorted line starts."""
    out: dict[int, int] = {}
    n, at = 0, 0
    for start in starts:
        n += raw.count(b"\n", at, start)
        at = start
        out[start] = n
    return out


@dataclass(frozen=True)
class LineHits:
    """Per prefilter, the starts of the lines it selects, and line start -> line number."""

    starts: list[list[int]]
    numbers: dict[int, int]


class LineFilter:
    """The prefilters of one pass as one Hyperscan database (see the module's docstring)."""

    def __init__(self, prefilters: tuple[str, ...], scanner: _Scanner):
        self.prefilters = prefilters
        self.scanner = scanner

    def hits(self, raw: bytes) -> LineHits:
        """The lines of `raw` (valid UTF-8) each prefilter selects."""
        n = len(self.prefilters)
        ends = self.scanner.ends(raw, n + 1)
        starts = [sorted({line_start(raw, e) for e in found}) for found in ends[:n]]
        wide = [line_start(raw, e) for e in ends[n]]
        if wide:
            texts = [raw[s : _end(raw, s)].decode("utf-8") for s in wide]
            series = pl.Series(texts, dtype=pl.String)
            for k, p in enumerate(self.prefilters):
                try:
                    picked = series.str.contains(p).arg_true().to_list()
                except pl.exceptions.PolarsError:
                    picked = list(range(len(wide)))
                if picked:
                    starts[k] = sorted({*starts[k], *(wide[i] for i in picked)})
        every = sorted({s for found in starts for s in found})
        return LineHits(starts, number(raw, every))


def _end(raw: bytes, start: int) -> int:
    end = raw.find(b"\n", start)
    return len(raw) if end < 0 else end


@lru_cache(maxsize=64)
def line_filter(prefilters: tuple[str, ...]) -> LineFilter | None:
    """The prefilters' database, or None (Hyperscan missing, or a prefilter byte mode cannot
    read the same way: the caller uses polars)."""
    if hyperscan is None or not prefilters:
        return None
    lines = [line_pattern(p) for p in prefilters]
    if any(x is None for x in lines):
        return None
    multiline = hyperscan.HS_FLAG_MULTILINE
    database = compile_database([*lines, NON_ASCII], [multiline] * (len(lines) + 1))  # type: ignore[list-item]
    return LineFilter(prefilters, _Scanner(database)) if database is not None else None
