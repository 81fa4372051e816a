"""A big log's chunk scanned as bytes, in a scan process: one Hyperscan pass finds every line
worth a look, numpy counts the lines. Imports numpy, Hyperscan and StringZilla, never polars (a
forked process may not use polars' thread pool, and the scan processes forked before the
analysis's modules were imported import only this).

The patterns of one Hyperscan database (`hsdb.ScanPlan`) find, in a chunk of the file, the lines
holding a signature's literal (candidates, attributed later with the signatures' own regexes) and
the lines of each frequent ("hot") signature; numpy counts the chunk's lines and which are klog
lines of which severity (`LineTable`). The chunks are scanned on every core, each by a process
that maps it itself (threads where processes cannot be forked: analyzer/parse/workers.py; they
read it), a block of lines at a time while it is in the core's cache; Python works per found
line, never per line of the file. The parent's side, which chunks go where and what comes back, is
analyzer/parse/bigscan.py. A log whose lines start with kubectl/CRI time prefixes is scanned
without them (`_scan_stripped`, analyzer/parse/prefixes.py), its rows kept as the file has them.

Hyperscan matches bytes: where a frequent signature's count is concerned, `\\d`, `\\w`, `\\b` and
case-insensitivity are ASCII and a character class or `.` reads one byte of a multi-byte
character (every row kept from the scan is checked again with the signature's own regex). A
pattern that byte mode cannot read the same way (non-ASCII, Unicode classes, look-arounds...) is
not hot: its lines are candidates like any other signature's.
"""

from __future__ import annotations

import bisect
import contextlib
import faulthandler
import mmap
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

from analyzer.parse.batch import KLOG_HEADER, SIG_TAIL_CAP, ChunkFound, line_text
from analyzer.parse.hsdb import NO_BYTE, Databases, Scanner, ScanPlan
from analyzer.parse.literals import MIN_LITERAL
from analyzer.parse.tally import Tallied, tally

if TYPE_CHECKING:
    from analyzer.parse.prefixes import Stripped

Chunk = bytes | bytearray | mmap.mmap  # a chunk read, or mapped (`mapped_range`)
NEWLINE = 10
np: ModuleType | None
# numpy's OpenBLAS starts a thread per further core when it is imported (~50-100 ms of CPU), a
# thread that the scan's forked workers would not have; nothing here multiplies matrices. A value
# the user set stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:  # a binary wheel on the usual platforms; without it the line reader scans every log
    import numpy as np
except ImportError:  # pragma: no cover - exercised on platforms without a wheel
    np = None
try:  # SIMD substring search (a binary wheel on the usual platforms); else `bytes.count`
    import stringzilla
except ImportError:  # pragma: no cover - exercised on platforms without a wheel
    stringzilla = None  # type: ignore[assignment]

SCAN_BLOCK = 1 << 20  # a chunk is scanned a block of lines at a time (in the core's cache)
LINE_BLOCK = 512 << 10  # bytes whose newlines numpy looks for at once
# Hyperscan's literal matcher confirms a literal where its last bytes are: a literal ending in
# bytes most lines hold ("tion", " device ") is checked all over the log. Each literal is cut
# after RARE_END bytes that at most RARE_SHARE of the log's first lines hold (never shorter
# than MIN_LITERAL): 590 literals on 16 MiB, 18.7 -> 12.4 ms, the same candidate lines. A share,
# not the fewest: the cuts, and so the compiled database, stay the same from one slice of a log
# to another (the fewest changed 26-74 of 585 cuts between two slices of one log)
RARE_END = 4
RARE_SHARE = 0.01
# a block's lines that are not klog lines are copied together for the prefilters no klog line
# matches while they are at most this share of its lines (else the whole block is scanned)
ASIDE_SHARE = 1 / 16
_KLOG_LINE = re.compile("".join(KLOG_HEADER).encode())


def _header_pairs() -> list[Any]:
    """Per two bytes of a klog header (parse.batch), read as one little-endian 16-bit number: a
    table of the numbers that may stand there (three lookups per line instead of six)."""
    assert np is not None
    per_byte = [
        np.array([re.fullmatch(p.encode(), bytes([b])) is not None for b in range(256)])
        for p in KLOG_HEADER
    ]
    if len(per_byte) % 2:
        per_byte.append(np.ones(256, bool))
    return [
        np.logical_and.outer(per_byte[k + 1], per_byte[k]).ravel()
        for k in range(0, len(per_byte), 2)
    ]


_HEADER_PAIRS = _header_pairs() if np is not None else []


def rare_endings(literals: list[str], sample: bytes) -> list[str]:
    """Each literal, or its longest start (at least MIN_LITERAL bytes, cut between characters)
    whose last RARE_END bytes occur in `sample` at most RARE_SHARE times its number of lines
    (once in a hundred lines), else the longest of those it holds least, unless `sample` holds
    that start itself more often than that and than the literal: a line holding the start is
    a candidate, which costs a thousand times what Hyperscan's check of an ending does. A line
    that holds a literal holds its start: the candidates are a superset, each checked later
    against the whole literal and its signature's regex.

    >>> rare_endings(["device plugin registered"], b"registered\\n" * 10 + b"plugin\\n" * 300)
    ['device plugin reg']
    """
    assert np is not None
    encoded = [x.encode() for x in literals]
    if len(sample) < RARE_END or not encoded:
        return list(literals)
    grams = np.sort(np.ndarray((len(sample) - RARE_END + 1,), "<u4", sample, strides=(1,)))
    joined = b"".join(encoded)
    data = np.frombuffer(joined, np.uint8)
    sizes = np.array([len(b) for b in encoded], np.int64)
    firsts = np.cumsum(sizes) - sizes  # where each literal starts in `joined`
    owner = np.repeat(np.arange(len(encoded)), sizes)
    # a cut is after a character (the next byte is not a continuation byte), or at the end
    after = np.arange(1, len(joined) + 1)
    at_end = after == (firsts + sizes)[owner]
    between = np.zeros(len(joined), bool)
    between[:-1] = (data[1:] & 0xC0) != 0x80
    length = after - firsts[owner]
    cuts = np.flatnonzero((at_end | between) & (length >= MIN_LITERAL))
    if not len(cuts):
        return list(literals)
    padded = joined + bytes(RARE_END)
    words = np.ndarray((len(joined),), "<u4", padded, strides=(1,))
    keys = words[cuts + 1 - RARE_END]  # the RARE_END bytes ending at each cut
    # looked up in sorted order: half the time of the cuts' own order (the sample's cache lines)
    by_key = np.argsort(keys)
    ordered = keys[by_key]
    held = np.empty(len(keys), np.int64)
    held[by_key] = np.searchsorted(grams, ordered, "right") - np.searchsorted(
        grams, ordered, "left"
    )
    common = RARE_SHARE * (sample.count(b"\n") + 1)
    held[held <= common] = 0  # rare enough: as good as absent
    # per literal, the cut held least, the longest of those: first in (owner, held, -length)
    order = np.lexsort((-length[cuts], held, owner[cuts]))
    ranked = owner[cuts][order]
    first = order[np.flatnonzero(np.diff(ranked, prepend=-1))]
    out = list(literals)
    times: dict[bytes, int] = {}  # a text's occurrences in the sample, counted once

    def seen(text: bytes) -> int:
        if text not in times:
            times[text] = count(sample, text, 0, len(sample))
        return times[text]

    ends = (owner[cuts][first].tolist(), length[cuts][first].tolist(), held[first].tolist())
    for k, n, ending in zip(*ends, strict=True):
        start = encoded[k][:n]
        # a start is held at most as often as its ending: only a common ending's may be common
        if ending and n < len(encoded[k]) and seen(start) > max(common, seen(encoded[k])):
            continue  # a common start (`fail` of `failed to ...`): whole, fewer candidates
        out[k] = start.decode()
    return out


def line_start(data: Chunk, end: int) -> int:
    """The start of the line a match ending at `end` ends on (a match is never empty)."""
    return data.rfind(b"\n", 0, max(end - 1, 0)) + 1


def line_end(data: Chunk, start: int) -> int:
    """Where the line starting at `start` ends (its newline, or the end of `data`)."""
    end = data.find(b"\n", start)
    return len(data) if end < 0 else end


_THREAD = threading.local()


def thread_scratch() -> Any:
    """This thread's boolean array for LineTable's newline search."""
    assert np is not None
    scratch = getattr(_THREAD, "scratch", None)
    if scratch is None:
        scratch = _THREAD.scratch = np.empty(LINE_BLOCK, bool)
    return scratch


_MAPS: list[bool] = [False]  # whether this process maps its chunks (`warm_up`: a scan process's)


def thread_buffer(size: int) -> bytearray:
    """This thread's buffer for the piece of a file it reads (`read_into` reuses its pages),
    made `size` bytes (the first piece's) at once: grown from empty by `read_into`, its pages
    were touched twice, by a zeroed copy and by the buffer (8,200 page faults for a 16 MiB
    chunk instead of 4,100, ~10 ms of a worker's first chunk)."""
    buffer = getattr(_THREAD, "buffer", None)
    if buffer is None:
        buffer = _THREAD.buffer = bytearray(size)
    return buffer


def warm_up() -> None:
    """A scan process starts (`parse.workers`): it maps the chunks it scans (`mapped_range`).
    Only a scan process: a file cut short under a map kills the process that reads the lost
    pages (SIGBUS), and a scan process's death leaves its chunk to the command's threads, which
    read. It dies quietly, as the command handles it: no stack from a fault handler the user
    enabled (PYTHONFAULTHANDLER), no core file in the user's folder (`ulimit -c`)."""
    import resource  # Unix's: scan processes are forked on Linux only

    faulthandler.disable()
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    _MAPS[0] = True


class LineTable:
    """Where one chunk's lines start and which are klog lines of which severity, found with
    numpy: it compares every byte in SIMD without holding Python's lock, where `bytes.count`
    holds it and is several times slower (a log's lines are counted, never reported one by one).
    The lines are added a block at a time, while the block is in the core's cache."""

    def __init__(self, chunk: Chunk, scratch: Any = None):
        """`scratch`: a boolean array at least the size of a block's newline search; by default
        this thread's (a new one per chunk would cost page faults)."""
        self.chunk = chunk
        self.scratch = thread_scratch() if scratch is None else scratch
        self.lines = 0
        self.klog_lines = 0
        self.severities = dict.fromkeys("EWF", 0)
        # per block of lines added: where it starts, its first line's number, its lines' ends
        # (32 bits: a chunk of empty lines holds 16 million)
        self._blocks: list[tuple[int, int, Any]] = []
        self._errors: list[Any] = []  # per block, the starts of its E/F klog lines

    def add(self, start: int, end: int) -> tuple[Any, Any]:
        """The lines of chunk[start:end] (whole lines, after those added before); where its
        lines that are not klog lines start, and where their newlines are."""
        assert np is not None
        chunk, scratch = self.chunk, self.scratch
        view = np.frombuffer(chunk, np.uint8)
        found = []
        for at in range(start, end, len(scratch)):
            block = view[at : min(end, at + len(scratch))]
            newline = scratch[: len(block)]
            np.equal(block, NEWLINE, out=newline)
            ends = np.flatnonzero(newline).astype(np.uint32)
            ends += at
            found.append(ends)
        ends = found[0] if len(found) == 1 else np.concatenate(found)
        starts = np.empty_like(ends)
        starts[:1] = start
        np.add(ends[:-1], 1, out=starts[1:])
        # each line's first 8 bytes, gathered as one word: a line shorter than a header holds
        # its newline there, which no header byte may be
        inside = starts[starts <= len(view) - 8]
        words = np.ndarray((max(0, len(view) - 7),), "<u8", chunk, strides=(1,))[inside]
        heads = words.view(np.uint8).reshape(-1, 8)
        pairs = words.view("<u2").reshape(-1, 4)
        klog = np.zeros(len(starts), bool)
        klog[: len(inside)] = _HEADER_PAIRS[0][pairs[:, 0]]
        for k, table in enumerate(_HEADER_PAIRS[1:], 1):
            klog[: len(inside)] &= table[pairs[:, k]]
        firsts = np.zeros(len(starts), np.uint8)
        firsts[: len(inside)] = heads[:, 0]
        for i in range(len(inside), len(starts)):  # the few lines in the chunk's last 8 bytes
            head = _KLOG_LINE.match(chunk, int(starts[i]))
            klog[i], firsts[i] = head is not None, chunk[starts[i]]
        self._blocks.append((start, self.lines, ends))
        self.lines += len(starts)
        self.klog_lines += int(np.count_nonzero(klog))
        for x in "EWF":
            self.severities[x] += int(np.count_nonzero(klog & (firsts == ord(x))))
        self._errors.append(starts[klog & ((firsts == ord("E")) | (firsts == ord("F")))])
        del view, words, heads, pairs
        others = ~klog
        return starts[others], ends[others]

    def starts(self, numbers: list[int]) -> list[int]:
        """Where each of these lines starts (0: the first line added)."""
        assert np is not None
        ends = np.concatenate([ends for _, _, ends in self._blocks]).astype(np.int64)
        at = np.array(numbers, np.int64)
        return np.where(at > 0, ends[np.maximum(at - 1, 0)] + 1, self._blocks[0][0]).tolist()

    def error_starts(self, n: int) -> list[int]:
        """The starts of the chunk's first `n` E/F klog lines."""
        out: list[int] = []
        for errors in self._errors:
            if len(out) >= n:
                break
            out.extend(errors[: n - len(out)].tolist())
        return out

    def error_ranks(self, starts: list[int]) -> list[int]:
        """Each line start's rank among the chunk's E/F klog lines (-1: another line)."""
        assert np is not None
        errors = np.concatenate(self._errors) if self._errors else np.empty(0, np.uint32)
        if not len(errors) or not starts:
            return [-1] * len(starts)
        keys = np.array(starts, np.int64)
        at = np.searchsorted(errors, keys)
        held = errors[np.minimum(at, len(errors) - 1)] == keys
        return np.where(held, at, -1).tolist()

    def numbers(self, starts: Iterable[int]) -> dict[int, int]:
        """Each line start's line number (0 = the chunk's first line)."""
        assert np is not None
        keys = sorted(starts)
        out: dict[int, int] = {}
        firsts = [start for start, _, _ in self._blocks]
        for i, (start, first_line, ends) in enumerate(self._blocks):
            end = firsts[i + 1] if i + 1 < len(firsts) else len(self.chunk)
            lo, hi = bisect.bisect_left(keys, start), bisect.bisect_left(keys, end)
            if lo < hi:
                found = np.searchsorted(ends, np.array(keys[lo:hi], dtype=np.uint32))
                out.update(zip(keys[lo:hi], (found + first_line).tolist(), strict=True))
        return out


def past_newlines(data: Chunk, ends: list[int]) -> list[int]:
    """The match ends just past a newline: a counter through an end anchor also ends mid-line
    where the regex matches another way, which its other branch reports past the newline."""
    assert np is not None
    if not ends:
        return ends
    at = np.array(ends, np.int64)
    return at[np.frombuffer(data, np.uint8)[at - 1] == NEWLINE].tolist()


def line_blocks(data: Chunk, size: int, at: int = 0) -> Iterator[tuple[int, int]]:
    """`data` (whole lines) from `at` in blocks of whole lines of about `size` bytes (a longer
    line is a block of its own)."""
    while at < len(data):
        end = data.rfind(b"\n", at, at + size) + 1
        if end <= at:  # no newline in reach: the line under way ends the block
            end = line_end(data, at + size) + 1
        end = min(end, len(data))
        yield at, end
        at = end


class ChunkScanner:
    """A plan's databases, scanning chunks: built once per process (`scanner_for`)."""

    def __init__(self, plan: ScanPlan, databases: Databases, cut: tuple[str, ...]):
        """`cut`: the literals as the databases hold them."""
        self.cut = cut
        self.scanner = Scanner(databases.main)
        self.size = databases.size  # its patterns
        # the prefilters no klog line matches, and how many: run on the other lines only
        self.aside = (Scanner(databases.aside[0]), databases.aside[1]) if databases.aside else None
        # the literals shorter than SHORT_ALONE, how many (a database of their own), and
        # whether each holds a byte outside ASCII (as the characters folding to ASCII letters do)
        self.short = (
            (Scanner(databases.short[0]), *databases.short[1:]) if databases.short else None
        )
        self.reported = [sid for sid, _ in plan.reported]  # hot signatures Hyperscan reports
        # those whose counter also ends mid-line (through an end anchor: `hsdb.line_counter`)
        self.anchored = [i for i, (_, counter) in enumerate(plan.reported) if NO_BYTE in counter]
        self.counted = list(plan.counted)  # (hot signature, its plain text): `bytes.count`
        # hot signatures counted by the chunk's distinct lines where it repeats itself (`tally`)
        self.tallied = [sid for sid, _ in plan.tallied]
        self.tally = Scanner(databases.tally) if databases.tally is not None else None
        self.tally_anchored = [
            i for i, (_, counter) in enumerate(plan.tallied) if NO_BYTE in counter
        ]

    def scan(
        self,
        chunk: Chunk,
        heads: dict[str, int],
        errors: int,
        examine: int,
        origin: int = 0,
        raw: Stripped | None = None,
    ) -> ChunkFound:
        """One chunk (whole lines, the last one ending with a newline), its lines from `origin`
        on (a mapped chunk starts at a page, a newline before them): `heads`, how many first
        rows each hot signature still wants; at most `errors` loose E/F lines among its first
        `examine` E/F lines (bounds: the chunks before may not be merged yet). `raw`: the
        lines as the file has them, where `chunk` is a copy without their prefixes: the rows
        kept are theirs."""
        assert np is not None
        n_reported, n_counted = len(self.reported), len(self.counted)
        n_bins = n_reported + n_counted
        candidate_ends: list[int] = []
        bins: list[list[int]] = [[] for _ in range(n_bins)]
        bins += [candidate_ends] * (self.size - n_bins)
        short_bins = [candidate_ends] * self.short[1] if self.short is not None else []
        table = LineTable(chunk)
        needles = [text.encode() for _, text in self.counted]
        occurrences = [0] * len(needles)
        view = memoryview(chunk)
        # where the short literals are all outside ASCII, a block of ASCII cannot hold one:
        # numpy's max says so in a quarter of the time Hyperscan takes to look
        short = self.short
        high = np.frombuffer(chunk, np.uint8) if short is not None and short[2] else None
        # block by block, each pass over a block while it is in the core's cache: two workers
        # passing over whole chunks wait on memory (a third more CPU per chunk)
        for start, end in line_blocks(chunk, SCAN_BLOCK, origin):
            self.scanner.scan_lines(view, start, end, bins)
            if short is not None and (high is None or high[start:end].max() >= 0x80):
                short[0].scan(view[start:end], short_bins, start)
            before = table.lines
            others = table.add(start, end)
            if self.aside is not None and len(others[0]):
                block_lines = table.lines - before
                self._scan_aside(chunk, view[start:end], start, others, block_lines, candidate_ends)
            for j, needle in enumerate(needles):
                occurrences[j] += count(chunk, needle, start, end)
        # nothing may hold the chunk: its buffer is resized for the next one, its map closed
        del high
        reported, reported_ends = list(self.reported), bins[:n_reported]
        anchored = list(self.anchored)
        tallied = None
        if self.tally is not None:
            wanted_heads = [heads[sid] for sid in self.tallied]
            tallied = tally(self.tally, chunk, wanted_heads, SIG_TAIL_CAP, origin, table)
            if tallied is None:  # a chunk that does not repeat itself: its lines reported
                anchored += [n_reported + i for i in self.tally_anchored]
                reported += self.tallied
                reported_ends += [[] for _ in self.tallied]
                self.tally.scan_lines(view, origin, len(chunk), reported_ends[n_reported:])
        view.release()
        seconds = bins[n_reported:n_bins]
        for i in anchored:
            reported_ends[i] = past_newlines(chunk, reported_ends[i])
        lines_of = _Lines(chunk, reported_ends, [x for _, x in self.counted], tallied, origin)

        starts = sorted({line_start(chunk, e) for e in candidate_ends})
        wanted = set(starts)  # the starts of the lines whose number and text are kept
        hot_picks = []  # (signature, starts of its first lines, of its last lines, count)
        for sid, ends in zip(reported, reported_ends, strict=True):
            firsts, lasts = ends[: heads[sid]], ends[-SIG_TAIL_CAP:]
            hot_picks.append(
                (
                    sid,
                    [line_start(chunk, e) for e in firsts],
                    [line_start(chunk, e) for e in lasts],
                    len(ends),
                )
            )
        if tallied is not None:
            hot_picks += zip(
                self.tallied, tallied.firsts, tallied.lasts, tallied.counts, strict=True
            )
        for (sid, _plain), needle, n, repeats in zip(
            self.counted, needles, occurrences, seconds, strict=True
        ):
            firsts, lasts = lines_of.holding(needle, heads[sid], SIG_TAIL_CAP)
            hot_picks.append((sid, firsts, lasts, n - lines_of.extra(needle, repeats)))
        for _sid, firsts, lasts, _n in hot_picks:
            wanted.update(firsts, lasts)
        loose: list[tuple[int, int]] = []  # (rank among the E/F lines, line start)
        if errors > 0 and examine > 0:
            taken = set(starts)
            for rank, s in lines_of.cold(table.error_starts(examine)):
                if s not in taken:
                    loose.append((rank, s))
                    if len(loose) == errors:
                        break
            wanted.update(s for _, s in loose)
        rows = table.numbers(wanted)
        # per candidate, its rank among the chunk's E/F lines if it is one that no hot signature
        # matches (if no other signature does either, it is a loose line), else -1
        cold = {s for _, s in lines_of.cold(starts)}
        ranks = [
            r if s in cold else -1 for s, r in zip(starts, table.error_ranks(starts), strict=True)
        ]
        numbers = [rows[s] for s in starts]
        text: Callable[[int], str]
        span: Callable[[int], tuple[int, int]]
        if raw is None:
            text, span = partial(_text, chunk), partial(_span, chunk, origin)
            texts = [_text(chunk, s) for s in starts]
        else:  # the lines as the file has them, found at once
            kept = sorted(wanted)
            spans = dict(zip(kept, raw.spans([rows[s] for s in kept], kept), strict=True))
            read = sorted(
                {*starts, *(s for _, s in loose), *(s for _, f, _, _ in hot_picks for s in f)}
            )
            text = dict(zip(read, raw.texts([spans[s] for s in read]), strict=True)).__getitem__
            span = spans.__getitem__
            texts = [text(s) for s in starts]
        return ChunkFound(
            lines=table.lines,
            klog_lines=table.klog_lines,
            severities=table.severities,
            hot=[
                (
                    sid,
                    [(rows[s], text(s)) for s in firsts],
                    [(rows[s], *span(s)) for s in lasts],
                    n,
                )
                for sid, firsts, lasts, n in hot_picks
            ],
            loose=[(rank, rows[s], text(s)) for rank, s in loose],
            candidates=(numbers, texts, ranks),
        )

    def _scan_aside(
        self, chunk: Chunk, block: memoryview, start: int, others, lines: int, found: list
    ) -> None:
        """The prefilters no klog line matches, on a block's other lines (`others`: their starts
        and newlines): copied together where they are few, else the whole block; each match's
        line end (past its newline) added to `found`."""
        assert self.aside is not None and np is not None
        scanner, size = self.aside
        starts, newlines = others
        if len(starts) > ASIDE_SHARE * lines:
            scanner.scan(block, [found] * size, start)
            return
        copied = [chunk[s : n + 1] for s, n in zip(starts.tolist(), newlines.tolist(), strict=True)]
        hits: list[int] = []
        scanner.scan(b"".join(copied), [hits] * size)
        if hits:
            ends = np.cumsum([len(line) for line in copied])  # each copied line's end in them
            found.extend((newlines[np.searchsorted(ends, hits)] + 1).tolist())


_SCANNERS: dict[str, ChunkScanner] = {}  # this process's, by plan


def scanner_for(plan: ScanPlan) -> ChunkScanner:
    """The plan's scanner, built at this process's first chunk of it: the literals cut at their
    ending rarest in the log's head (as written where Hyperscan refused the cut ones, which the
    parent's check of the whole literals makes a case that should not happen)."""
    scanner = _SCANNERS.get(plan.key)
    if scanner is None:
        if plan.cut is not None:  # cut by a process before, which built its databases of them
            cut, databases = list(plan.cut), plan.databases(list(plan.cut))
        else:
            cut = sorted(set(rare_endings(list(plan.literals), plan.sample)))
            databases = plan.databases(cut)
            if databases is None:
                cut = sorted(set(plan.literals))
                databases = plan.databases(cut)
        assert databases is not None, "the parent checked that Hyperscan takes the plan"
        if len(_SCANNERS) > 4:
            _SCANNERS.clear()
        scanner = _SCANNERS[plan.key] = ChunkScanner(plan, databases, tuple(cut))
    return scanner


def scan_chunk(
    plan: ScanPlan,
    path: str,
    start: int,
    end: int,
    heads: dict[str, int],
    errors: int,
    examine: int,
) -> ChunkFound:
    """A scan process's task: the chunk file[start:end] mapped (`mapped_range`), else read into
    this thread's buffer, and scanned (`ChunkScanner.scan`); with the literals as cut where the
    plan came without them (the parent sends them instead of the sample from then on)."""
    scanner = scanner_for(plan)
    scan = _scan_stripped if plan.prefixed else ChunkScanner.scan
    mapped = mapped_range(path, start, end) if _MAPS[0] else None
    if mapped is not None:
        chunk, origin = mapped
        try:
            found = scan(scanner, chunk, heads, errors, examine, origin)
        finally:  # an error's traceback may still hold a view of the map: it goes with them
            with contextlib.suppress(BufferError):
                chunk.close()
    else:
        buffer = thread_buffer(end - start)
        _read_range(path, start, end, buffer)
        found = scan(scanner, buffer, heads, errors, examine)
    return found if plan.cut is not None else replace(found, cut=scanner.cut)


def _scan_stripped(
    scanner: ChunkScanner,
    chunk: Chunk,
    heads: dict[str, int],
    errors: int,
    examine: int,
    origin: int = 0,
) -> ChunkFound:
    """A chunk of a prefixed log: its lines scanned without their prefixes (a copy), the rows
    it keeps read from the chunk, prefixes and all, as the line reader keeps them (the parent
    removes them from its text the line reader's way)."""
    from analyzer.parse.prefixes import Stripped  # numpy's, as this module's scan

    stripped = Stripped.of(chunk, origin)
    return scanner.scan(stripped.text, heads, errors, examine, raw=stripped)


def mapped_range(path: str, start: int, end: int) -> tuple[mmap.mmap, int] | None:
    """file[start:end] mapped from the page before `start` (a map starts at a page), its pages
    populated, and where `start` is in the map: the scan reads the page cache where it is, not
    a copy (reading a 16 MiB chunk cost a worker 4-14 ms of copying, mapping it ~1.5). None
    where the map would not hold whole lines (the range does not end with a newline or start
    after one: the last line of a file without one, a line cut at LINE_CAP), the file is
    shorter than `end` (pages past its end kill the process that reads them) or the range cannot
    be mapped."""
    base = start - start % mmap.ALLOCATIONGRANULARITY
    try:
        with open(path, "rb", buffering=0) as fh:
            if end <= start or os.fstat(fh.fileno()).st_size < end:
                return None
            chunk = mmap.mmap(
                fh.fileno(),
                end - base,
                flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                prot=mmap.PROT_READ,
                offset=base,
            )
    except (OSError, ValueError):  # a file that cannot be mapped (a FIFO, a special file)
        return None
    origin = start - base
    if chunk[-1] != NEWLINE or (origin and chunk[origin - 1] != NEWLINE):
        chunk.close()
        return None
    return chunk, origin


class _Lines:
    """Questions about one chunk's lines, answered from the bytes around a line start."""

    def __init__(
        self,
        chunk: Chunk,
        matched_ends: list[list[int]],
        literals: list[str],
        tallied: Tallied | None = None,
        origin: int = 0,
    ):
        self.chunk = chunk
        self.origin = origin
        # the ends (past the newline) of the lines of the hot signatures Hyperscan reports
        self.reported = set().union(*matched_ends)
        self.needles = [x.encode() for x in literals]
        self.tallied = tallied

    def end(self, start: int) -> int:
        return line_end(self.chunk, start) + 1

    def cold(self, starts: Iterable[int]) -> Iterator[tuple[int, int]]:
        """(rank, start) of the lines of `starts` that hold no hot signature's match, in order
        (a loop of its own: the first chunks ask it of up to ERROR_EXAMINED lines each, and a
        call per line cost as much as the rest of the chunk's scan)."""
        chunk, size, needles, reported = self.chunk, len(self.chunk), self.needles, self.reported
        tallied = self.tallied
        find = chunk.find
        for rank, start in enumerate(starts):
            end = find(b"\n", start)
            end = (size if end < 0 else end) + 1
            if end in reported or (tallied is not None and tallied.holds(chunk, start, end - 1)):
                continue
            for needle in needles:
                if find(needle, start, end) >= 0:
                    break
            else:
                yield rank, start

    def extra(self, needle: bytes, seconds: list[int]) -> int:
        """How many more times than once `bytes.count` counted `needle` in the lines where a
        match of its second-occurrence superset ends at one of `seconds` (0 for a line that
        holds it once)."""
        starts = {line_start(self.chunk, e) for e in seconds}
        return sum(count(self.chunk, needle, s, self.end(s)) - 1 for s in starts)

    def holding(self, needle: bytes, head: int, tail: int) -> tuple[list[int], list[int]]:
        """The starts of the first `head` and of the last `tail` lines holding `needle`."""
        chunk, out = self.chunk, list[int]()
        at = self.origin
        while len(out) < head and (i := chunk.find(needle, at)) >= 0:
            out.append(chunk.rfind(b"\n", 0, i) + 1)
            at = self.end(i)
        last: list[int] = []
        at = len(chunk)
        while len(last) < tail and (i := chunk.rfind(needle, self.origin, at)) >= 0:
            at = chunk.rfind(b"\n", 0, i) + 1
            last.append(at)
        return out, last[::-1]


def count(chunk: Chunk, needle: bytes, start: int, end: int) -> int:
    """`needle` in chunk[start:end], as `bytes.count` counts it (no overlaps), by StringZilla's
    SIMD search where the chunk is (map or buffer): `bytes.count`'s two-way search was a seventh
    of a chunk's scan on a log with one hot text on every other line (4.7 ms a 16 MiB chunk,
    against 1.9). Without it, in a copy of the slice: a map has no `count`, and `count`'s own
    start and end cost more than the copy (9.8 against 5.3 ms a chunk, a 1 MiB block at a
    time). The search holds no view of the chunk once it returns (a map is then closed)."""
    if stringzilla is None:
        return chunk[start:end].count(needle)
    with memoryview(chunk) as view:
        return stringzilla.Str(view).count(needle, start, end)


def _text(chunk: Chunk, start: int) -> str:
    return line_text(chunk[start : line_end(chunk, start)])


def _span(chunk: Chunk, origin: int, start: int) -> tuple[int, int]:
    return start - origin, line_end(chunk, start) - start


def _read_range(path: str, start: int, end: int, buffer: bytearray) -> None:
    """file[start:end] into `buffer` (`read_into`), ending with a newline even where the file's
    last line or an overlong line does not. A file cut short meanwhile gives what is left."""
    with open(path, "rb", buffering=0) as fh:
        read_into(fh, start, end - start, buffer)
    if not buffer.endswith(b"\n"):
        buffer += b"\n"


def read_into(fh: BinaryIO, start: int, n: int, buffer: bytearray) -> int:
    """Up to `n` bytes of the open file from `start` into `buffer`, resized in place (a new
    buffer costs a page fault per 4 KiB, as much as reading into it); how many were read."""
    if len(buffer) > n:
        del buffer[n:]
    elif len(buffer) < n:
        buffer.extend(bytes(n - len(buffer)))
    got = 0
    with memoryview(buffer) as view:
        while got < n and (k := os.preadv(fh.fileno(), [view[got:]], start + got)):
            got += k
    del buffer[got:]
    return got
