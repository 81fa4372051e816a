"""A Hyperscan pass over a piece's bytes: which lines the prefilters select.

One Hyperscan database of every prefilter (each made a line pattern the way the big-log scan
makes its signatures: `parse.hsdb.line_pattern`) scans a piece without Python's lock, about
twice as fast as polars splitting it into lines and running the alternation over them. Byte mode
reads `\\w`, `\\d`, `\\b` and `(?i)` as ASCII: on a line of ASCII that is what Rust's regex crate
reads, so there the lines found are the lines polars finds (a match that would cross a line's end
only adds a candidate, which is never wrong). Lines holding a byte outside ASCII are reported by
a pattern of their own and checked by polars with the prefilters as written.

A prefilter may come with a kept shape (a redactor's `kept_prefilter`): a match of the prefilter
that ends where one of the shape's matches ends leads only to a value `keep` keeps, so a line
holding no other match of it is not selected. On a Kubernetes log that drops client-go's
`k8s.io/client-go/...go:150:` lines from the registry redactor's selection: its pattern read
each of them, 4,600 a piece on a klog log, to find `k8s.io`, public. The lines outside ASCII
are selected as before (by polars, without the shape)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

import polars as pl

from analyzer.parse.bytescan import line_end, np, thread_scratch
from analyzer.parse.hsdb import Scanner, cached_database, hyperscan, line_pattern
from analyzer.redact.mapped import buffer_of

NON_ASCII = r"[\x80-\xff][^\n]*$"  # one report per line holding a byte outside ASCII
# up to this many lines, `starts_numbers` finds each from its key (a few dozen on a klog piece);
# beyond, a block's newlines at once (client-go's lines once made it 4,600)
SPARSE_KEYS = 512


@dataclass(frozen=True)
class LineHits:
    """Per prefilter, the starts of the lines it selects and their numbers; where the piece's
    newlines are, when they were all found (many lines selected), else None."""

    starts: list[list[int]]
    lines: list[list[int]]
    newlines: Any = None


class LineFilter:
    """The prefilters of one pass as one Hyperscan database (see the module's docstring);
    `shapes`: (prefilter, its bin in the database) of the kept shapes."""

    def __init__(
        self, prefilters: tuple[str, ...], scanner: Scanner, shapes: tuple[tuple[int, int], ...]
    ):
        self.prefilters = prefilters
        self.scanner = scanner
        self.shapes = shapes

    def hits(self, raw: bytes) -> LineHits:
        """The lines of `raw` (valid UTF-8) each prefilter selects."""
        assert np is not None
        n = len(self.prefilters)
        ends: list[list[int]] = [[] for _ in range(n + 1 + len(self.shapes))]
        self.scanner.scan(buffer_of(raw), ends)
        for k, bin_ in self.shapes:
            if ends[k] and ends[bin_]:
                kept = set(ends[bin_])
                ends[k] = [e for e in ends[k] if e not in kept]
        del ends[n + 1 :]
        sizes = [len(bin_) for bin_ in ends]
        flat = np.fromiter(chain.from_iterable(ends), np.int64, sum(sizes))
        newlines = _newlines(raw) if len(flat) > SPARSE_KEYS else None
        starts_of, numbers_of = starts_numbers(raw, flat, newlines)
        bounds = np.cumsum([0, *sizes]).tolist()
        # each bin's lines, by start, each once, and their numbers (arrays: a log with a value
        # on every line selects hundreds of thousands a piece, and a Python step each was most
        # of its first pass)
        picked = [
            _unique(starts_of[bounds[k] : bounds[k + 1]], numbers_of[bounds[k] : bounds[k + 1]])
            for k in range(n + 1)
        ]
        wide, wide_numbers = picked[n]
        if len(wide):
            texts = [raw[s : line_end(raw, s)].decode("utf-8") for s in wide.tolist()]
            series = pl.Series(texts, dtype=pl.String)
            for k, p in enumerate(self.prefilters):
                try:
                    chosen = series.str.contains(p).arg_true().to_numpy()
                except pl.exceptions.PolarsError:
                    chosen = np.arange(len(wide))
                if len(chosen):
                    starts, numbers = picked[k]
                    picked[k] = _unique(
                        np.concatenate((starts, wide[chosen])),
                        np.concatenate((numbers, wide_numbers[chosen])),
                    )
        return LineHits(
            [starts.tolist() for starts, _ in picked[:n]],
            [numbers.tolist() for _, numbers in picked[:n]],
            newlines,
        )


def _unique(starts: Any, numbers: Any) -> tuple[Any, Any]:
    """Lines' starts (an array) each once, in order, with their numbers; faster when they are
    in order already (Hyperscan reports a pattern's matches by their end, so a bin's lines
    mostly come in order)."""
    assert np is not None
    if len(starts) > 1 and bool((starts[1:] >= starts[:-1]).all()):
        first = np.concatenate(([True], starts[1:] != starts[:-1]))
        return starts[first], numbers[first]
    starts, first = np.unique(starts, return_index=True)
    return starts, numbers[first]


def starts_numbers(raw: bytes | bytearray, ends: Any, newlines: Any = None) -> tuple[Any, Any]:
    """The start and number (the newlines before it) of the line each match end (a numpy
    array) ends on, as two arrays in the order of the ends (`bytescan.line_start`, for all ends
    at once): numpy finds the newlines a block at a time in this thread's scratch array,
    without Python's lock (`bytes.count` held it) and without a Python step per match
    (`line_start` was one per match end), nor `LineTable`'s klog work. `newlines`: where they
    are, when already found."""
    assert np is not None
    if not len(ends):
        return ends, ends
    # a match's line is the one its last byte is on (a match is never empty)
    keys = np.maximum(ends - 1, 0)
    if len(keys) <= SPARSE_KEYS:
        keys, where = np.unique(keys, return_inverse=True)
        view = np.frombuffer(buffer_of(raw), np.uint8)
        pairs = np.array(_sparse_starts(raw, view, thread_scratch(), keys.tolist()), np.int64)
        del view
        return pairs[where, 0], pairs[where, 1]
    newlines = _newlines(raw) if newlines is None else newlines
    numbers = np.searchsorted(newlines, keys)  # the newlines before each key
    return np.concatenate(([-1], newlines))[numbers] + 1, numbers


def _newlines(raw: bytes | bytearray) -> Any:
    """Where the newlines of `raw` are (an array), found a block at a time in this thread's
    scratch array (a 16 MiB comparison's own array cost its page faults)."""
    assert np is not None
    view = np.frombuffer(buffer_of(raw), np.uint8)
    scratch = thread_scratch()
    found = []
    for at in range(0, len(raw), len(scratch)):
        newline = scratch[: min(len(scratch), len(raw) - at)]
        np.equal(view[at : at + len(newline)], 10, out=newline)
        found.append(np.flatnonzero(newline) + at)
    del view
    return np.concatenate(found) if found else np.empty(0, np.int64)


def _sparse_starts(
    raw: bytes | bytearray, view: Any, scratch: Any, keys: list[int]
) -> list[tuple[int, int]]:
    """`starts_numbers` of a few keys (sorted): each line's start found back from its key, and the
    newlines before it counted only up to the last one. Finding every newline of a block that
    holds a key (`flatnonzero`) cost 7-8 ms a 16 MiB piece even for a few dozen keys; this costs
    2-3 ms."""
    assert np is not None
    pairs: list[tuple[int, int]] = []
    before = pos = start = last = 0
    for key in keys:
        # the line of a key on a newline ends there; searched back only to the key before, whose
        # line starts no later (a long line holding many keys is read once, not once a key)
        newline = raw.rfind(b"\n", last, key)
        start, last = (newline + 1 if newline >= 0 else start), key
        while pos < start:
            block = scratch[: min(len(scratch), start - pos)]
            np.equal(view[pos : pos + len(block)], 10, out=block)
            before += int(np.count_nonzero(block))
            pos += len(block)
        pairs.append((start, before))
    return pairs


@lru_cache(maxsize=64)
def line_filter(
    prefilters: tuple[str, ...], kept: tuple[str | None, ...] = ()
) -> LineFilter | None:
    """The prefilters' database, or None (Hyperscan missing, or a prefilter byte mode cannot
    read the same way: the caller uses polars). `kept`: each prefilter's kept shape, or None (a
    shape byte mode cannot read is left out: its lines are selected, as without one)."""
    if hyperscan is None or np is None or not prefilters:
        return None
    lines = [line_pattern(p) for p in prefilters]
    if any(x is None for x in lines):
        return None
    extra: list[str] = []
    shapes: list[tuple[int, int]] = []
    for k, shape in enumerate(kept):
        pattern = line_pattern(shape) if shape is not None else None
        if pattern is not None:
            shapes.append((k, len(prefilters) + 1 + len(extra)))
            extra.append(pattern)
    database = _cached_database([*lines, NON_ASCII, *extra])  # type: ignore[list-item]
    if database is None and extra:  # a shape Hyperscan refuses: left out, its lines selected
        return line_filter(prefilters)
    if database is None:
        return None
    return LineFilter(prefilters, Scanner(database), tuple(shapes))


def _cached_database(expressions: list[str]) -> Any:
    """The compiled database, from the cache folder when an earlier run compiled the same
    patterns with this Hyperscan (compiling them costs 0.1-0.2 s a run; `cached_database`)."""
    assert hyperscan is not None
    return cached_database(expressions, [hyperscan.HS_FLAG_MULTILINE] * len(expressions), "redact")
