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
"""

from __future__ import annotations

import mmap
from collections import Counter
from dataclasses import dataclass

from analyzer.parse.hsdb import Scanner

BLIND = bytes.maketrans(b"0123456789", b"0" * 10)
PROBE_BYTES = 256 << 10  # a chunk's first bytes that tell whether it repeats itself
# a chunk is tallied when its distinct digit-blind lines are at most this share of its lines
DISTINCT_SHARE = 1 / 8
# ... and the tallied signatures are on this share of its first lines (PROBE_BYTES): else a chunk
# of another loop would pay the tally for nothing (82 against 26 ms reported)
CHUNK_SHARE = 1 / 4
INDEXED_KEYS = 32  # distinct lines whose first lines are looked for one by one (more: one pass)


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
    scanner: Scanner, chunk: bytes | bytearray, heads: list[int], tail: int
) -> Tallied | None:
    """The tallied signatures' lines in a chunk (whole lines, ending with a newline), their
    counters in `scanner`; `heads`: how many first lines of each to give, `tail`: last ones.
    None where tallying would not pay: the chunk's first PROBE_BYTES do not repeat themselves,
    or the tallied signatures are on less than CHUNK_SHARE of their lines (a loop of other
    lines), or the whole chunk does not repeat itself."""
    if not chunk.endswith(b"\n"):  # not whole lines: the starts below would be off
        return None
    probe = chunk.rfind(b"\n", 0, PROBE_BYTES) + 1
    sample = distinct_lines(bytes(chunk[:probe])) if probe else None
    if sample is None:
        return None
    on = matched(scanner, len(heads), list(sample))
    if sum(n for line, n in sample.items() if line in on) < CHUNK_SHARE * sample.total():
        return None
    lines = bytes(chunk).translate(BLIND).split(b"\n")
    lines.pop()  # after the last newline: nothing
    counts = Counter(lines)
    if len(counts) > DISTINCT_SHARE * len(lines):
        return None
    sigs_of = matched(scanner, len(heads), list(counts))
    n = [0] * len(heads)
    for line, sigs in sigs_of.items():
        for i in sigs:
            n[i] += counts[line]
    firsts, lasts = _located(lines, counts, sigs_of, heads, tail)
    return Tallied(n, firsts, lasts, frozenset(sigs_of))


def _located(
    lines: list[bytes],
    counts: Counter[bytes],
    sigs_of: dict[bytes, list[int]],
    heads: list[int],
    tail: int,
) -> tuple[list[list[int]], list[list[int]]]:
    """The starts of each signature's first `heads` and last `tail` lines. A distinct line
    needed whole (as many times as it is there) is found in one pass over the lines, in C
    but for the few found; the others from either end by `list.index` (in C, each from where
    it was last found), or by one pass in Python when they are many."""
    first_want = {
        line: min(max(heads[i] for i in sigs), counts[line]) for line, sigs in sigs_of.items()
    }
    last_want = {line: min(tail, counts[line]) for line in sigs_of}
    rare = {line for line in sigs_of if counts[line] <= max(first_want[line], last_want[line])}
    firsts_at: dict[bytes, list[int]] = {}
    lasts_at: dict[bytes, list[int]] = {}
    if rare:
        every: dict[bytes, list[int]] = {line: [] for line in rare}
        for k in [k for k, line in enumerate(lines) if line in rare]:
            every[lines[k]].append(k)
        for line, seen in every.items():
            firsts_at[line] = seen[: first_want[line]]
            lasts_at[line] = seen[len(seen) - last_want[line] :]
    frequent = [line for line in sigs_of if line not in rare]
    if frequent:
        last = len(lines) - 1
        backwards = lines[::-1]
        found_first = _indexes(lines, {line: first_want[line] for line in frequent})
        found_last = _indexes(backwards, {line: last_want[line] for line in frequent})
        for line in frequent:
            firsts_at[line] = found_first[line]
            lasts_at[line] = [last - k for k in reversed(found_last[line])]
    firsts: list[list[int]] = []
    lasts: list[list[int]] = []
    for i, head in enumerate(heads):
        mine = [line for line, sigs in sigs_of.items() if i in sigs]
        firsts.append(sorted(k for line in mine for k in firsts_at[line])[:head])
        ends = sorted(k for line in mine for k in lasts_at[line])
        lasts.append(ends[max(0, len(ends) - tail) :])
    at = _offsets(lines, sorted({k for ks in (*firsts, *lasts) for k in ks}))
    return [[at[k] for k in ks] for ks in firsts], [[at[k] for k in ks] for ks in lasts]


def _offsets(lines: list[bytes], indexes: list[int]) -> dict[int, int]:
    """Where each of these lines (sorted indexes) starts: the lengths before it, a newline
    each, summed in C from one to the next."""
    out: dict[int, int] = {}
    at = done = 0
    for k in indexes:
        at += sum(map(len, lines[done:k])) + k - done
        out[k] = at
        done = k
    return out


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
