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

from collections import Counter
from dataclasses import dataclass

from analyzer.parse.hsdb import Scanner

BLIND = bytes.maketrans(b"0123456789", b"0" * 10)
PROBE_BYTES = 256 << 10  # a chunk's first bytes that tell whether it repeats itself
# a chunk is tallied when its distinct digit-blind lines are at most this share of its lines
DISTINCT_SHARE = 1 / 8
INDEXED_KEYS = 32  # distinct lines whose first lines are looked for one by one (more: one pass)


@dataclass(frozen=True)
class Tallied:
    """Per tallied signature: how many lines of the chunk it matches, and the starts of its
    first and last ones (as many as asked); which digit-blind lines any of them matches."""

    counts: list[int]
    firsts: list[list[int]]
    lasts: list[list[int]]
    matching: frozenset[bytes]

    def holds(self, chunk: bytes | bytearray, start: int, end: int) -> bool:
        """Whether the line chunk[start:end] (without its newline) is one of a tallied
        signature."""
        return bool(self.matching) and bytes(chunk[start:end]).translate(BLIND) in self.matching


def repeats_itself(lines: list[bytes]) -> bool:
    """Whether these digit-blind lines are few enough distinct ones to tally."""
    return len(set(lines)) <= DISTINCT_SHARE * len(lines)


def tally(
    scanner: Scanner, chunk: bytes | bytearray, heads: list[int], tail: int
) -> Tallied | None:
    """The tallied signatures' lines in a chunk (whole lines, ending with a newline), their
    counters in `scanner`; `heads`: how many first lines of each to give, `tail`: last ones.
    None when the chunk does not repeat itself."""
    if not chunk.endswith(b"\n"):  # not whole lines: the starts below would be off
        return None
    probe = chunk.rfind(b"\n", 0, PROBE_BYTES) + 1
    if probe and not repeats_itself(bytes(chunk[:probe]).translate(BLIND).split(b"\n")[:-1]):
        return None
    lines = bytes(chunk).translate(BLIND).split(b"\n")
    lines.pop()  # after the last newline: nothing
    counts = Counter(lines)
    if len(counts) > DISTINCT_SHARE * len(lines):
        return None
    keys = list(counts)
    joined = b"\n".join(keys) + b"\n"
    # each distinct line's end (past its newline) in `joined`: a counter through an end anchor
    # also ends mid-line (`hsdb.line_counter`), at no such end
    key_at: dict[int, bytes] = {}
    at = 0
    for key in keys:
        at += len(key) + 1
        key_at[at] = key
    bins: list[list[int]] = [[] for _ in heads]
    scanner.scan_lines(memoryview(joined), 0, len(joined), bins)
    sigs_of: dict[bytes, list[int]] = {}  # distinct line -> the tallied signatures it is one of
    for i, ends in enumerate(bins):
        for end in ends:
            line = key_at.get(end)
            if line is not None:
                sigs = sigs_of.setdefault(line, [])
                if not sigs or sigs[-1] != i:
                    sigs.append(i)
    n = [0] * len(heads)
    for key, sigs in sigs_of.items():
        for i in sigs:
            n[i] += counts[key]
    firsts = _starts(lines, sigs_of, [min(h, k) for h, k in zip(heads, n, strict=True)])
    lasts = _starts(lines, sigs_of, [min(tail, k) for k in n], len(chunk))
    return Tallied(n, firsts, lasts, frozenset(sigs_of))


def _starts(
    lines: list[bytes], sigs_of: dict[bytes, list[int]], want: list[int], size: int = 0
) -> list[list[int]]:
    """The starts of each signature's first `want` lines, in order (its last ones, given the
    chunk's `size`). Each of a few distinct lines is looked for by `list.index` (in C, from
    where it was last found: a signature on few lines far apart costs no Python step per line
    in between); more, by one pass over the lines."""
    out: list[list[int]] = [[] for _ in want]
    if not any(want):
        return out
    from_end = size > 0
    seq = lines[::-1] if from_end else lines
    wanted: dict[bytes, int] = {}  # distinct line -> how many of its first lines are needed
    for key, sigs in sigs_of.items():
        need = max(want[i] for i in sigs)
        if need:
            wanted[key] = need
    if len(wanted) <= INDEXED_KEYS:
        found = {key: _first_indexes(seq, key, need) for key, need in wanted.items()}
    else:
        found = _first_indexes_in_one_pass(seq, wanted)
    for i, need in enumerate(want):
        if need:
            keys = [key for key, sigs in sigs_of.items() if i in sigs]
            out[i] = sorted(k for key in keys for k in found.get(key, ()))[:need]
    # a line's start: the lengths of the lines before it (after it, from the end), a newline
    # each, summed in C from one line found to the next: the first and last lines are near
    at = _offsets(seq, sorted({k for ks in out for k in ks}))
    if from_end:
        return [sorted(size - at[k] - len(seq[k]) - 1 for k in ks) for ks in out]
    return [[at[k] for k in ks] for ks in out]


def _offsets(seq: list[bytes], indexes: list[int]) -> dict[int, int]:
    """Where each of these lines (sorted indexes) starts, counted from the start of `seq`."""
    out: dict[int, int] = {}
    at = done = 0
    for k in indexes:
        at += sum(map(len, seq[done:k])) + k - done
        out[k] = at
        done = k
    return out


def _first_indexes(seq: list[bytes], key: bytes, need: int) -> list[int]:
    out: list[int] = []
    at = 0
    try:
        while len(out) < need:
            at = seq.index(key, at)
            out.append(at)
            at += 1
    except ValueError:
        pass
    return out


def _first_indexes_in_one_pass(
    seq: list[bytes], wanted: dict[bytes, int]
) -> dict[bytes, list[int]]:
    out: dict[bytes, list[int]] = {key: [] for key in wanted}
    left = sum(wanted.values())
    for k, key in enumerate(seq):
        got = out.get(key)
        if got is not None and len(got) < wanted[key]:
            got.append(k)
            left -= 1
            if not left:
                break
    return out
