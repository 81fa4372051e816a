"""A piece of text as lines: which lines prefilters select, and the lines a redaction replaced.

A big piece read from a file stays bytes: Hyperscan finds the lines the prefilters select
(`hyper.py`) and where they start, only those become Python strings, and the output is the input
with the changed ones spliced in by their offsets, so a big log costs one scan and no Python work
per line. Elsewhere selection is polars' (Rust's regex crate over a column of lines, split from
the piece when asked): one pass with the alternation of all the prefilters finds the candidate
lines, then each prefilter runs on those few."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import polars as pl
import regex

from analyzer.parse.bytescan import line_end, np
from analyzer.redact.hyper import line_filter

ENCODING = ("utf-8", "surrogateescape")  # undecodable bytes survive the round trip
PARALLEL_ROWS = 20_000  # lines from which a scan is split across polars' threads
SMALL = 8 << 10  # below this many bytes the prefilters are searched in Python (polars costs more)
# from this many bytes a piece's prefilters are searched by Hyperscan: compiling them costs ~0.2 s
# once, what it saves on ~40 MB (a big file's 16 MiB pieces)
HYPERSCAN_MIN = 8 << 20


def _contains(series: pl.Series, pattern: str) -> pl.Series:
    """`series.str.contains(pattern)`, a big column's slices scanned in parallel (one polars
    expression runs on one thread)."""
    n, k = len(series), pl.thread_pool_size()
    if n < PARALLEL_ROWS or k < 2:
        return series.str.contains(pattern)
    size = -(-n // k)
    parts = [
        pl.LazyFrame({"t": series.slice(i * size, size)}).select(pl.col("t").str.contains(pattern))
        for i in range(k)
    ]
    return pl.concat(parts).collect().to_series()


@lru_cache(maxsize=256)
def _python(prefilter: str) -> regex.Pattern | None:
    try:
        return regex.compile(prefilter, regex.MULTILINE)
    except (regex.error, ValueError, OverflowError):
        return None


def _may_match(prefilter: str, text: str) -> bool:
    """A small text's gate, in Python (its regex module reads the prefilters' syntax): whether
    any line may hold a match (when unsure, yes)."""
    pattern = _python(prefilter)
    try:
        return pattern is None or pattern.search(text, timeout=1.0) is not None
    except TimeoutError:
        return True


class Lines:
    """The lines of a text (`Lines(text)`: any content, as Python strings) or of a piece of a
    file (`Lines.of_bytes(raw)`: split by polars, kept as bytes)."""

    def __init__(self, text: str):
        self._text: str | None = text
        self._raw: bytes | None = None
        self._list: list[str] | None = text.split("\n")
        self._series: pl.Series | None = None
        self._new: dict[int, str] = {}
        self._hits: dict[tuple[tuple[str, ...], tuple[str | None, ...]], list[list[int]]] = {}
        self._starts: dict[int, int] = {}  # line number -> offset in `_raw`, where known
        # where all of `_raw`'s newlines are, when Hyperscan's pass found them (`joined`)
        self._newlines: Any = None
        self.exact = True  # `series` holds the lines as they are (no U+FFFD for stray bytes)
        self.small = len(text) < SMALL
        self.size = len(text)  # bytes of the piece it was read from (characters of a text)

    @classmethod
    def of_bytes(cls, raw: bytes, plain: bool = False) -> Lines:
        """The lines of a piece of a file: kept as bytes when it is big, valid UTF-8 and free of
        carriage returns (which polars' line reader drops; polars splits it only when asked),
        else as decoded text. `plain`: the caller has just found it ASCII without carriage
        returns (each check reads the whole piece)."""
        if len(raw) < SMALL or (not plain and (b"\r" in raw or not _utf8(raw))):
            lines = cls(raw.decode(*ENCODING))
        else:
            lines = cls.__new__(cls)
            lines._text, lines._raw, lines._list = None, raw, None
            lines._series, lines._new, lines._hits = None, {}, {}
            lines._starts, lines._newlines = {}, None
            lines.exact, lines.small = True, False
        lines.size = len(raw)
        return lines

    @property
    def raw(self) -> bytes | None:
        """The piece's bytes, when it is kept as bytes (valid UTF-8)."""
        return self._raw

    def know(self, starts: dict[int, int]) -> None:
        """Where some lines start (line number -> offset in the piece's bytes)."""
        self._starts.update(starts)

    def starts(self, idx: list[int]) -> dict[int, int]:
        """line number -> offset of those of `idx` whose start is known."""
        return {i: self._starts[i] for i in idx if i in self._starts}

    @property
    def series(self) -> pl.Series:
        """The lines as a polars column (as they were before any `put`); undecodable bytes,
        kept as surrogates which polars refuses, read as U+FFFD there, line for line."""
        if self._series is None and self._raw is not None:
            self._series = pl.scan_lines(self._raw, name="t").collect().get_column("t")
        if self._series is None:
            assert self._list is not None and self._text is not None
            try:
                self._series = pl.Series(self._list, dtype=pl.String)
            except UnicodeEncodeError:
                clean = self._text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
                self._series = pl.Series(clean.split("\n"), dtype=pl.String)
                self.exact = False
        return self._series

    def hits(self, prefilters: list[str], kept: tuple[str | None, ...] = ()) -> list[list[int]]:
        """For each prefilter, the indices of the lines it matches (as they were before any
        `put`; remembered, so a background thread can ask first). A prefilter polars cannot run
        makes every line a candidate (slower, never wrong). `kept`: each prefilter's kept shape
        (`hyper.py`; Hyperscan only: elsewhere the lines are selected as without one)."""
        key = (tuple(prefilters), kept)
        if key not in self._hits:
            self._hits[key] = self._find(prefilters, kept)
        return self._hits[key]

    def _find(self, prefilters: list[str], kept: tuple[str | None, ...]) -> list[list[int]]:
        if not prefilters:
            return []
        if self._raw is not None and self._series is None and self.size >= HYPERSCAN_MIN:
            fast = line_filter(tuple(prefilters), kept)
            if fast is not None:
                seen = fast.hits(self._raw)
                for starts, numbers in zip(seen.starts, seen.lines, strict=True):
                    self._starts.update(zip(numbers, starts, strict=True))
                if seen.newlines is not None:
                    self._newlines = seen.newlines
                return seen.lines
        if self.small and self._list is not None:
            every = list(range(len(self._list)))
            return [every if _may_match(p, str(self._text)) else [] for p in prefilters]
        try:
            union = "|".join(f"(?:{p})" for p in prefilters)
            idx = _contains(self.series, union).arg_true()
            if len(prefilters) == 1 or idx.len() == 0:
                return [idx.to_list()] * len(prefilters)
            found = pl.DataFrame({"t": self.series.gather(idx)}).select(
                pl.col("t").str.contains(p).arg_true().implode().alias(f"p{i}")
                for i, p in enumerate(prefilters)
            )
            return [
                idx.gather(found.get_column(f"p{i}")[0]).to_list() for i in range(len(prefilters))
            ]
        except pl.exceptions.PolarsError:
            return [list(range(len(self.series)))] * len(prefilters)

    def get(self, idx: list[int]) -> list[str]:
        """The current text of the lines `idx`."""
        if self._list is not None:
            return [self._list[i] for i in idx]
        if self._raw is not None and self._series is None and all(i in self._starts for i in idx):
            raw = self._raw
            return [
                self._new[i] if i in self._new else raw[s : line_end(raw, s)].decode(*ENCODING)
                for i, s in ((i, self._starts[i]) for i in idx)
            ]
        old = self.series.gather(idx).to_list() if idx else []
        return [self._new.get(i, line) for i, line in zip(idx, old, strict=True)]

    def joined(self, idx: list[int]) -> str:
        """`"\n".join(self.get(idx))` (`idx` sorted, each once, as `hits` gives them). Of a piece
        kept as bytes, as it is, whose lines' starts are known (Hyperscan's): a slice of the
        piece per run of consecutive lines, decoded at once, not a line at a time (a journal's
        host column selects every line of it, a loop's node name every other: the decode of
        each line was most of a worker's time on such a piece after the scan)."""
        raw, starts = self._raw, self._starts
        if not idx:
            return ""
        if raw is None or self._new or not starts:
            return "\n".join(self.get(idx))
        firsts, lasts = _runs(idx)
        bounds: Iterable[tuple[int, int]]
        if self._newlines is not None:  # every line's bounds known: found at once
            assert np is not None
            ends = np.concatenate((self._newlines, [len(raw)]))  # line n ends at newline n
            begins = np.where(firsts > 0, ends[np.maximum(firsts - 1, 0)] + 1, 0)
            bounds = zip(begins.tolist(), ends[lasts].tolist(), strict=True)
        else:
            try:
                pairs = zip(firsts.tolist(), lasts.tolist(), strict=True)
                bounds = [(starts[f], line_end(raw, starts[n])) for f, n in pairs]
            except KeyError:  # a run's first or last line not located: read them one by one
                return "\n".join(self.get(idx))
        return b"\n".join([raw[b:e] for b, e in bounds]).decode(*ENCODING)

    def put(self, idx: list[int], values: list[str]) -> None:
        for i, value in zip(idx, values, strict=True):
            if self._list is not None:
                self._list[i] = value
            self._new[i] = value

    def text(self) -> str:
        if self._list is not None:
            return "\n".join(self._list) if self._new else str(self._text)
        return self.bytes().decode(*ENCODING)

    def bytes(self) -> bytes:
        if self._raw is None:
            return self.text().encode(*ENCODING)
        if not self._new:
            return self._raw
        if self._series is None and all(i in self._starts for i in self._new):
            return splice(self._raw, {self._starts[i]: v for i, v in self._new.items()})
        order = sorted(self._new)
        series = self.series.clone()
        series.scatter(order, [self._new[i] for i in order])
        end = "\n" if self._raw.endswith(b"\n") else ""
        return (series.str.join("\n").item() + end).encode(*ENCODING)


def _runs(idx: list[int]) -> tuple[Any, Any]:
    """The first and last line of each run of consecutive numbers in `idx` (sorted, not empty),
    as arrays, found at once (a handshake loop selects 50,000 runs a piece)."""
    assert np is not None  # lines' starts are known only from Hyperscan's pass, which needs it
    at = np.array(idx, np.int64)
    breaks = np.flatnonzero(np.diff(at) != 1)
    return at[np.concatenate(([0], breaks + 1))], at[np.concatenate((breaks, [len(at) - 1]))]


def splice(raw: bytes, lines: dict[int, str]) -> bytes:
    """`raw` with the lines starting at the keys of `lines` replaced by their values."""
    out: list[bytes] = []
    pos = 0
    for start in sorted(lines):
        out += (raw[pos:start], lines[start].encode(*ENCODING))
        pos = line_end(raw, start)
    out.append(raw[pos:])
    return b"".join(out)


def _utf8(raw: bytes) -> bool:
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
