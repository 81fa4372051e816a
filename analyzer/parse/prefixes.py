"""Where each line's kubectl/CRI prefix ends, in a scan process: numpy over a chunk's lines.

`kubectl logs --timestamps` (what `collect` runs) starts every line with an RFC 3339 time and a
space, and a node's container logs (CRI) add the stream and a tag (`2024-11-11T05:16:13.6063Z
stderr F `). The line reader removes them with `LINE_PREFIX_PATTERN` before anything reads a
line; the byte scan removes them the same way from a copy of the chunk (`Stripped`), which it
then scans as a plain log's, and reads the rows it keeps from the chunk itself.

A line's first bytes are read as 64-bit words (one gather for all the lines that may start with
a prefix) and checked eight bytes at a time against the one form a time prefix has: fixed
digits and separators, an optional fraction, `Z` or an offset, a space, then perhaps the stream
and tag. A line the words cannot settle (`[pod/` of `kubectl --prefix`, a fraction of more than
eleven digits, a byte outside ASCII before an ASCII time's end, the chunk's last bytes) is
matched by the pattern with Rust's classes spelt out, as polars reads it; where only polars'
Unicode tables could tell (a digit outside ASCII), the scan gives the log to the line reader
(`PrefixUnsettled`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.bundle.text import LINE_PREFIX_PATTERN
from analyzer.parse.batch import PrefixUnsettled, line_text

STRIP_BLOCK = 1 << 20  # the chunk's lines are stripped a block of about this many bytes at a time
PREFIX_WINDOW = 48  # a line's bytes the words read: a time, an offset, the stream and its tag
_U = np.uint64
_HIGH = _U(0x8080808080808080)
_LOW7 = _U(0x7F7F7F7F7F7F7F7F)
_THREES = _U(0x3030303030303030)
_BELOW_TEN = _U(0x7676767676767676)  # a lane plus this reaches the high bit from 10 on
_STREAMS = np.array(
    [int.from_bytes(f"{s} {t}".encode(), "little") for s in ("stdout", "stderr") for t in "FP"],
    np.uint64,
)
_POD = int.from_bytes(b"[pod/", "little")
_WINDOW = np.dtype((np.void, PREFIX_WINDOW))


def _lanes(text: str) -> tuple[np.uint64, np.uint64, np.uint64]:
    """For a word's form (`d`: a digit, `.`: anything, else that byte): the mask and value of
    its fixed bytes, and the high bits of its digit lanes."""
    mask = value = digits = 0
    for lane, c in enumerate(text):
        if c == "d":
            digits |= 0x80 << (8 * lane)
        elif c != ".":
            mask |= 0xFF << (8 * lane)
            value |= ord(c) << (8 * lane)
    return _U(mask), _U(value), _U(digits)


_FORMS = [_lanes("dddd-dd-"), _lanes("ddTdd:dd"), _lanes(":dd.....")]  # bytes 0-18
_ZULU = _lanes("Z ......")
_OFFSET = _lanes(".dd:dd .")
_FRACTION = _U(0x80808080) << _U(32)  # bytes 20-23: lanes 4-7 of the third word


def _digit_lanes(w: np.ndarray) -> np.ndarray:
    """The high bit of each lane of these words that holds an ASCII digit: a digit's lane is
    0-9 once `0` is taken off (by xor), and below the high bit once 118 is added to it (its
    seven low bits: no lane carries into the next)."""
    x = w ^ _THREES
    return ~(((x & _LOW7) + _BELOW_TEN) | x) & _HIGH


def _is(w: np.ndarray, form: tuple[np.uint64, np.uint64, np.uint64]) -> np.ndarray:
    mask, value, digits = form
    return ((w & mask) == value) & ((_digit_lanes(w) & digits) == digits)


def _first_lane(high: np.ndarray) -> np.ndarray:
    """The lowest lane whose high bit is set (8 where none is): that bit alone is 2 ** (8k + 7),
    a float's exponent 8k + 8 (a quarter of the time of a binary search among the eight)."""
    lowest = high & (~high + _U(1))
    exponent = np.frexp(lowest.astype(np.float64))[1]
    return np.where(lowest == 0, 8, (exponent >> 3) - 1)


def prefix_ends(chunk: Any, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Where the prefix of each line ends (its start where it has none): `starts` and `ends`
    (its newline) are the lines' offsets in `chunk`, whole lines ending with a newline."""
    size = len(chunk)
    at = starts.astype(np.int64)
    out = at.copy()
    inside = np.flatnonzero(at + PREFIX_WINDOW <= size)
    # each line's first bytes at once (one gather), as words
    records = np.ndarray((max(0, size - PREFIX_WINDOW + 1),), _WINDOW, chunk, strides=(1,))
    heads = records[at[inside]].view(np.uint64).reshape(-1, PREFIX_WINDOW // 8)
    first = heads[:, 0] & _U(0xFF)
    # what the words cannot settle, the pattern itself decides: `[pod/` (kubectl --prefix), a
    # fraction running past the words, a byte outside ASCII in a line that starts as a time
    # may but is not one in ASCII (the pattern's digits are Unicode's: past an ASCII time's
    # end, no byte changes it)
    unsure = (heads[:, 0] & _U(0xFFFFFFFFFF)) == _POD
    outside = heads[:, 0] | heads[:, 1] | heads[:, 2] | heads[:, 3] | heads[:, 4] | heads[:, 5]
    risky = ((outside & _HIGH) != 0) & ((first >= 0x80) | ((first - ord("0")) < 10))
    # the lines that start as a time: the rest of the form read on them only
    dated = np.flatnonzero(_is(heads[:, 0], _FORMS[0]) & ~unsure)
    sub = heads if len(dated) == len(heads) else heads[dated]
    w = [sub[:, k] for k in range(PREFIX_WINDOW // 8)]
    timed = _is(w[1], _FORMS[1]) & _is(w[2], _FORMS[2])
    # an optional fraction: a dot (byte 19), then digits up to the first other byte, the zone's
    dotted = (w[2] >> _U(24)) & _U(0xFF) == ord(".")
    early = _first_lane(~_digit_lanes(w[2]) & _FRACTION)  # 4-7, or 8: all four digits
    later = _first_lane(~_digit_lanes(w[3]) & _HIGH)  # bytes 24-31
    zone = np.where(dotted, np.where(early < 8, 16 + early, 24 + later), 19)
    timed &= ~dotted | (zone > 20)
    unsure[dated[dotted & (zone >= 32)]] = True
    zone = np.minimum(zone, 31)
    words = np.ndarray((len(dated), PREFIX_WINDOW - 7), "<u8", sub, strides=(PREFIX_WINDOW, 1))
    rows = np.arange(len(dated))
    at_zone = words[rows, zone]
    zulu, offset = _is(at_zone, _ZULU), _is(at_zone, _OFFSET)
    offset &= ((at_zone & _U(0xFF)) == ord("+")) | ((at_zone & _U(0xFF)) == ord("-"))
    timed &= zulu | offset
    end = zone + np.where(offset, 7, 2)
    # the stream and its tag: the 9 bytes after the time, a word and a byte
    stream = np.isin(words[rows, end], _STREAMS)
    stream &= (words[rows, end + 1] >> _U(56)) == ord(" ")
    end = np.where(stream, end + 9, end)
    out[inside[dated[timed]]] += end[timed]
    risky[dated[timed]] = False
    unsure |= risky
    pending = np.flatnonzero(at + PREFIX_WINDOW > size).tolist() + inside[unsure].tolist()
    for k in pending:
        out[k] = at[k] + _matched(chunk, int(at[k]), int(ends[k]))
    return out


# the pattern with Rust's classes spelt out, as polars reads it (Python's `\s` also takes
# U+001C-U+001F; its `\d` knows the digits of its own Unicode version): `\s` is White_Space;
# `\d` is an ASCII digit, or (`_WIDE`) any character outside ASCII that is not a byte of
# invalid UTF-8: where the two read a line alike, no digit outside ASCII could read it otherwise
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_NARROW = re.compile(LINE_PREFIX_PATTERN.replace("\\s", _SPACE).replace("\\d", "[0-9]"))
_WIDE = re.compile(
    LINE_PREFIX_PATTERN.replace("\\s", _SPACE).replace(
        "\\d", "(?:[0-9]|[^\\x00-\\x7f\\udc80-\\udcff])"
    )
)


def _matched(chunk: Any, start: int, end: int) -> int:
    """How many bytes of the line chunk[start:end] its prefix takes, as polars' pattern reads
    the line's text (a byte of invalid UTF-8 a character no prefix class holds, as in the line
    reader's repaired copy); PrefixUnsettled where a digit outside ASCII could change it."""
    text = bytes(chunk[start:end]).decode("utf-8", errors="surrogateescape")
    narrow = _NARROW.match(text).end()  # type: ignore[union-attr]
    if _WIDE.match(text).end() != narrow:  # type: ignore[union-attr]
        raise PrefixUnsettled(f"a line's prefix holds characters outside ASCII: {text[:60]!r}")
    return len(text[:narrow].encode("utf-8", errors="surrogateescape"))


def _outside(view: np.ndarray, start: int, end: int, begins: Any, cuts: Any) -> bytes:
    """view[start:end] without the bytes of each prefix in it (begins[k]:cuts[k], in order,
    apart): a mask made by repeating "kept" and "left out" over their runs, then one compaction
    (12 ms for the 175,000 prefixed lines of a 16 MiB chunk, against 37 for a slice of each line
    joined)."""
    bounds = np.empty(2 * len(begins) + 2, np.int64)
    bounds[0], bounds[-1] = start, end
    bounds[1:-1:2], bounds[2:-1:2] = begins, cuts
    kept = np.zeros(len(bounds) - 1, bool)
    kept[::2] = True  # the runs between prefixes
    return view[start:end][np.repeat(kept, np.diff(bounds))].tobytes()


@dataclass(frozen=True)
class Stripped:
    """A prefixed log's chunk, its lines from `origin` on without their prefixes (`text`), and
    how to find a line of it in the chunk: the lines that had a prefix (their numbers, from 0)
    and its length."""

    chunk: Any
    origin: int
    text: bytes
    numbers: np.ndarray
    lengths: np.ndarray
    before: np.ndarray  # per prefixed line, the prefix bytes of those before it (and a last: all)

    @classmethod
    def of(cls, chunk: Any, origin: int) -> Stripped:
        """The chunk's lines (whole, the last ending with a newline) a block at a time: only the
        lines that start as a prefix may (a digit, `[`, a byte outside ASCII) are read further,
        and the block's bytes outside the prefixes kept at once (`_outside`); memory is bounded
        by the block and by the prefixed lines, not by the chunk's lines (16 million empty
        ones)."""
        view = np.frombuffer(chunk, np.uint8)
        numbers: list[np.ndarray] = []  # per block
        lengths: list[np.ndarray] = []
        pieces: list[Any] = []  # bytes, or views of the chunk
        line, at = 0, origin  # the lines before the block, and where it starts
        while at < len(view):
            end = min(len(view), at + STRIP_BLOCK)
            ends = np.flatnonzero(view[at:end] == ord("\n")) + at
            if end < len(view):  # the block ends after its last newline
                if not len(ends):  # a line longer than the block: a block of its own
                    ends = np.array([at + int(np.argmax(view[at:] == ord("\n")))])
                end = int(ends[-1]) + 1
            starts = np.concatenate([[at], ends[:-1] + 1])
            first = view[starts]
            maybe = np.flatnonzero(
                ((first - ord("0")) < 10) | (first == ord("[")) | (first >= 0x80)
            )
            if len(maybe):
                cut = prefix_ends(chunk, starts[maybe], ends[maybe])
                had = cut > starts[maybe]
                numbers.append(line + maybe[had])
                lengths.append(cut[had] - starts[maybe][had])
                pieces.append(_outside(view, at, end, starts[maybe][had], cut[had]))
            else:  # a view, copied once by the join (the chunk is held until then)
                pieces.append(view[at:end])
            line += len(ends)
            at = end
        del view  # no view of the chunk is left: a map can be closed
        prefixed = np.concatenate(lengths) if lengths else np.empty(0, np.int64)
        return cls(
            chunk,
            origin,
            b"".join(pieces),
            np.concatenate(numbers) if numbers else np.empty(0, np.int64),
            prefixed,
            np.concatenate([[0], np.cumsum(prefixed)]),
        )

    def _before(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per line number, the prefix bytes of the lines before it, and its own prefix's."""
        k = np.searchsorted(self.numbers, rows)
        own = np.zeros(len(rows), np.int64)
        mine = k < len(self.numbers)
        mine[mine] = self.numbers[k[mine]] == rows[mine]
        own[mine] = self.lengths[k[mine]]
        return self.before[k], own

    def spans(self, rows: list[int], starts: list[int]) -> list[tuple[int, int]]:
        """Where these lines start in the chunk (from its origin) and how long they are, without
        their newlines; given their numbers and their starts in `text`."""
        at = np.array(starts, np.int64)
        ends = np.array([self.text.index(b"\n", s) for s in starts], np.int64)
        before, own = self._before(np.array(rows, np.int64))
        begin = at + before
        return list(zip(begin.tolist(), (ends - at + own).tolist(), strict=True))

    def texts(self, spans: list[tuple[int, int]]) -> list[str]:
        """The lines at these `spans` as the file has them, prefixes and all."""
        o = self.origin
        return [line_text(self.chunk[o + a : o + a + n]) for a, n in spans]
