"""Hot signatures counted by a chunk's distinct lines, in a scan process.

A log that loops (a validator waiting for its driver, a scheduler's handshake retried every few
seconds) repeats a handful of lines, the same but for their numbers. Reporting each line of a
hot signature costs a call into Python (~0.5 us: most lines of such a log are one) and keeps
Hyperscan's counter active through every line; a 16 MiB chunk of the validator loop spent ~180
of its ~250 ms there (~80 in the counters, ~100 in the calls), and takes ~190 ms tallied.

Here the chunk's lines are made blind to digits (each ASCII digit made `0`, the offsets
unchanged), counted by `collections.Counter` in C, and each distinct line is scanned once by the
tallied signatures' counters: a signature's lines are the lines whose digit-blind text it
matches. Exact for a signature whose regex cannot tell digits apart (`literals.digit_blind`); a
chunk that does not repeat itself is not tallied (`tally` is None: its lines are reported).

StringZilla does the byte work where its wheel is: it makes the chunk blind where it is (map or
buffer, no copy: 2.4 ms a 16 MiB chunk, against 11 for a copy and `bytes.translate`), and where
the chunk's head holds a few distinct lines and they are all of its lines (a loop), it counts
each between two newlines and finds the first and last of each from either end (4.4 ms a chunk
of five distinct lines, against 26 for splitting the chunk into 113,000 lines and counting them).
Elsewhere the lines are split and counted, and located by the scan's line table. A chunk of the
scheduler's handshake loop: 79 -> 26 ms.
"""

from __future__ import annotations

import mmap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from analyzer.parse.hsdb import Scanner

try:  # SIMD translation (a binary wheel on the usual platforms); else `bytes.translate`
    import stringzilla
except ImportError:  # pragma: no cover - exercised on platforms without a wheel
    stringzilla = None  # type: ignore[assignment]

BLIND = bytes.maketrans(b"0123456789", b"0" * 10)
PROBE_BYTES = 256 << 10  # a chunk's first bytes that tell whether it repeats itself
# a chunk is tallied when its distinct digit-blind lines are at most this share of its lines
DISTINCT_SHARE = 1 / 8
# ... and the tallied signatures are on this share of its first lines (PROBE_BYTES): else a chunk
# of another loop would pay the tally for nothing (82 against 26 ms reported)
CHUNK_SHARE = 1 / 4
INDEXED_KEYS = 32  # distinct lines whose first lines are looked for one by one (more: one pass)
# a chunk whose head holds at most this many distinct lines is first counted by them (`_whole`)
WHOLE_LINES = 8


class LineStarts(Protocol):
    """The chunk's lines as the scan found them (`bytescan.LineTable`)."""

    lines: int  # how many

    def starts(self, numbers: list[int]) -> list[int]:
        """Where each of these lines (0: the first line, at the scan's origin) starts."""
        ...


@dataclass(frozen=True)
class Tallied:
    """Per tallied signature: how many lines of the chunk it matches, and the starts of its
    first and last ones (as many as asked); which digit-blind lines any of them matches."""

    counts: list[int]
    firsts: list[list[int]]
    lasts: list[list[int]]
    matching: frozenset[bytes]

    def holds(self, chunk: bytes | bytearray | mmap.mmap, start: int, end: int) -> bool:
        """Whether the line chunk[start:end] (without its newline) is one of a tallied
        signature."""
        return bool(self.matching) and bytes(chunk[start:end]).translate(BLIND) in self.matching


def distinct_lines(text: bytes) -> Counter[bytes] | None:
    """The digit-blind lines of whole lines of text and how many times each is there; None
    when they do not repeat themselves (more distinct lines than DISTINCT_SHARE of them)."""
    lines = text.translate(BLIND).split(b"\n")
    lines.pop()  # after the last newline: nothing
    counts = Counter(lines)
    return counts if len(counts) <= DISTINCT_SHARE * len(lines) else None


def matched(scanner: Scanner, counters: int, lines: list[bytes]) -> dict[bytes, list[int]]:
    """Per line of these (distinct, without newlines) that one of the `counters` in `scanner`
    matches, their numbers, scanned at once (joined by newlines)."""
    joined = b"\n".join(lines) + b"\n"
    # each line's end (past its newline) in `joined`: a counter through an end anchor also ends
    # mid-line (`hsdb.line_counter`), at no such end
    line_at: dict[int, bytes] = {}
    at = 0
    for line in lines:
        at += len(line) + 1
        line_at[at] = line
    bins: list[list[int]] = [[] for _ in range(counters)]
    scanner.scan_lines(memoryview(joined), 0, len(joined), bins)
    sigs_of: dict[bytes, list[int]] = {}
    for i, ends in enumerate(bins):
        for end in ends:
            found = line_at.get(end)
            if found is not None:
                sigs = sigs_of.setdefault(found, [])
                if not sigs or sigs[-1] != i:
                    sigs.append(i)
    return sigs_of


def tally(
    scanner: Scanner,
    chunk: bytes | bytearray | mmap.mmap,
    heads: list[int],
    tail: int,
    origin: int,
    lines_at: LineStarts,
) -> Tallied | None:
    """The tallied signatures' lines in a chunk's lines from `origin` on (whole lines, ending
    with a newline; `lines_at` has found them), their counters in `scanner`; `heads`: how many
    first lines of each to give, `tail`: last ones. None where tallying would not pay: the
    chunk's first PROBE_BYTES do not repeat themselves, or the tallied signatures are on less
    than CHUNK_SHARE of their lines (a loop of other lines), or the whole chunk does not repeat
    itself."""
    if chunk[-1:] != b"\n":  # not whole lines: the lines would not be the table's
        return None
    probe = chunk.rfind(b"\n", origin, origin + PROBE_BYTES) + 1
    sample = distinct_lines(bytes(chunk[origin:probe])) if probe > origin else None
    if sample is None:
        return None
    on = matched(scanner, len(heads), list(sample))
    if sum(n for line, n in sample.items() if line in on) < CHUNK_SHARE * sample.total():
        return None
    blind = _blind(chunk, origin)
    searched = stringzilla.Str(blind) if stringzilla is not None else None
    first = blind[: blind.find(b"\n")]
    counts = _whole(searched, first, sample, lines_at.lines)
    if counts is not None:  # every line is one of the head's: counted and found in the text
        sigs_of = on
        found = _found(searched, first, len(blind), _wanted(sigs_of, counts, heads, tail))
        firsts_at, lasts_at = (_moved(ats, lambda k: origin + k) for ats in found)
    else:
        lines = blind.split(b"\n")
        lines.pop()  # after the last newline: nothing
        counts = Counter(lines)
        if len(counts) > DISTINCT_SHARE * len(lines):
            return None
        sigs_of = matched(scanner, len(heads), list(counts))
        firsts_at, lasts_at = _located(lines, counts, _wanted(sigs_of, counts, heads, tail))
        numbers = sorted({k for ks in (*firsts_at.values(), *lasts_at.values()) for k in ks})
        at = dict(zip(numbers, lines_at.starts(numbers), strict=True))
        firsts_at, lasts_at = (_moved(ats, at.__getitem__) for ats in (firsts_at, lasts_at))
    n = [0] * len(heads)
    for line, sigs in sigs_of.items():
        for i in sigs:
            n[i] += counts[line]
    firsts: list[list[int]] = []
    lasts: list[list[int]] = []
    for i, head in enumerate(heads):
        mine = [line for line, sigs in sigs_of.items() if i in sigs]
        firsts.append(sorted(at for line in mine for at in firsts_at[line])[:head])
        ends = sorted(at for line in mine for at in lasts_at[line])
        lasts.append(ends[max(0, len(ends) - tail) :])
    return Tallied(n, firsts, lasts, frozenset(sigs_of))


def _blind(chunk: bytes | bytearray | mmap.mmap, origin: int) -> bytes:
    """chunk[origin:] with each ASCII digit made `0`."""
    if stringzilla is None:
        return bytes(chunk[origin:]).translate(BLIND)
    with memoryview(chunk) as view, view[origin:] as text:
        return stringzilla.translate(text, BLIND)


Wanted = dict[bytes, tuple[int, int]]  # per distinct line: how many of its first, of its last


def _wanted(
    sigs_of: dict[bytes, list[int]], counts: Counter[bytes], heads: list[int], tail: int
) -> Wanted:
    """How many of each matched distinct line's first and last lines its signatures may keep."""
    return {
        line: (min(max(heads[i] for i in sigs), counts[line]), min(tail, counts[line]))
        for line, sigs in sigs_of.items()
    }


def _moved(at: dict[bytes, list[int]], where: Callable[[int], int]) -> dict[bytes, list[int]]:
    """Each line's places, each put `where` it is in the chunk."""
    return {line: [where(k) for k in ks] for line, ks in at.items()}


def _whole(
    searched: Any, first: bytes, sample: Counter[bytes], lines: int
) -> Counter[bytes] | None:
    """How many of the `lines` lines of the text `searched` (its first line `first`) are each
    line of the sample, where those are all of them: each counted by StringZilla between two
    newlines (a fifth of the time splitting the chunk and counting its lines takes, where the
    head holds at most WHOLE_LINES distinct lines). None where other lines are there too, or
    without StringZilla (`searched` None)."""
    if searched is None or len(sample) > WHOLE_LINES:
        return None
    counts = Counter(
        {
            line: searched.count(b"\n" + line + b"\n", allowoverlap=True) + (line == first)
            for line in sample
        }
    )
    return counts if counts.total() == lines else None


def _found(
    searched: Any, first: bytes, size: int, wanted: Wanted
) -> tuple[dict[bytes, list[int]], dict[bytes, list[int]]]:
    """Where each line's first and last wanted lines start in the text `searched` (`size`
    bytes, whose every line `_whole` counted): found between two newlines by StringZilla from
    either end, the text's first line by itself."""
    firsts_at: dict[bytes, list[int]] = {}
    lasts_at: dict[bytes, list[int]] = {}
    for line, (head, tail) in wanted.items():
        needle = b"\n" + line + b"\n"
        ahead = [0] if line == first else []
        at = 0
        while len(ahead) < head and (found := searched.find(needle, at)) >= 0:
            ahead.append(found + 1)
            at = found + len(needle) - 1  # its last newline may start the next
        behind: list[int] = []
        end = size
        while len(behind) < tail and (found := searched.rfind(needle, 0, end)) >= 0:
            behind.append(found + 1)
            end = found + 1  # its first newline may end the one before
        if len(behind) < tail and line == first:
            behind.append(0)
        firsts_at[line] = ahead[:head]
        lasts_at[line] = behind[::-1]
    return firsts_at, lasts_at


def _located(
    lines: list[bytes], counts: Counter[bytes], wanted: Wanted
) -> tuple[dict[bytes, list[int]], dict[bytes, list[int]]]:
    """The numbers of each line's first and last wanted lines. A distinct line needed whole
    (as many times as it is there) is found in one pass over the lines, in C but for the few
    found; the others from either end by `list.index` (in C, each from where it was last
    found), or by one pass in Python when they are many."""
    rare = {line for line, (head, tail) in wanted.items() if counts[line] <= max(head, tail)}
    firsts_at: dict[bytes, list[int]] = {}
    lasts_at: dict[bytes, list[int]] = {}
    if rare:
        every: dict[bytes, list[int]] = {line: [] for line in rare}
        for k in [k for k, line in enumerate(lines) if line in rare]:
            every[lines[k]].append(k)
        for line, seen in every.items():
            head, tail = wanted[line]
            firsts_at[line] = seen[:head]
            lasts_at[line] = seen[len(seen) - tail :]
    frequent = [line for line in wanted if line not in rare]
    if frequent:
        last = len(lines) - 1
        backwards = lines[::-1]
        found_first = _indexes(lines, {line: wanted[line][0] for line in frequent})
        found_last = _indexes(backwards, {line: wanted[line][1] for line in frequent})
        for line in frequent:
            firsts_at[line] = found_first[line]
            lasts_at[line] = [last - k for k in reversed(found_last[line])]
    return firsts_at, lasts_at


def _indexes(lines: list[bytes], want: dict[bytes, int]) -> dict[bytes, list[int]]:
    """The indexes of the first `want[line]` lines equal to each (each one there more often):
    by `list.index` for a few, else in one pass."""
    if len(want) > INDEXED_KEYS:
        return _indexes_in_one_pass(lines, want)
    out: dict[bytes, list[int]] = {}
    for line, need in want.items():
        found: list[int] = []
        at = 0
        while len(found) < need:
            at = lines.index(line, at)
            found.append(at)
            at += 1
        out[line] = found
    return out


def _indexes_in_one_pass(lines: list[bytes], want: dict[bytes, int]) -> dict[bytes, list[int]]:
    out: dict[bytes, list[int]] = {line: [] for line in want}
    left = sum(want.values())
    for k, line in enumerate(lines):
        if not left:
            break
        got = out.get(line)
        if got is not None and len(got) < want[line]:
            got.append(k)
            left -= 1
    return out
