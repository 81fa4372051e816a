"""A big plain log scanned as bytes: one Hyperscan pass per chunk finds every line worth a look.

The patterns of one Hyperscan database find, in a chunk of the file, the lines holding a
signature's literal (candidates, attributed later with the signatures' own regexes) and the lines
of each frequent ("hot") signature; numpy counts the chunk's lines and which are klog lines of
which severity (`LineTable`). The chunks are scanned on every core, each by a worker process
that reads it itself (threads where processes cannot be forked), a block of lines at a time
while it is in the core's cache; Python works per found line, never per line of the file.

Hyperscan matches bytes: where a frequent signature's count is concerned, `\\d`, `\\w`, `\\b` and
case-insensitivity are ASCII and a character class or `.` reads one byte of a multi-byte
character (every row kept from the scan is checked again with the signature's own regex). A
pattern that byte mode cannot read the same way (non-ASCII, Unicode classes, look-arounds...) is
not hot: its lines are candidates like any other signature's.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import os
import platform
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, BinaryIO

import polars as pl

from analyzer.cache import cache_dir, kept
from analyzer.parse.batch import (
    ERROR_EXAMINED,
    ERROR_LINE_CAP,
    KLOG_HEADER,
    SIG_HEAD_CAP,
    SIG_TAIL_CAP,
    Batch,
)
from analyzer.parse.literals import MIN_LITERAL, leading_superset, misses_lines_starting
from analyzer.parse.workers import Workers

hyperscan: ModuleType | None
np: ModuleType | None
# numpy's OpenBLAS starts a thread per further core when it is imported (~50-100 ms of CPU), a
# thread that the scan's forked workers would not have; nothing here multiplies matrices. A value
# the user set stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:  # binary wheels on the usual platforms; without them the line reader scans every log
    import hyperscan
    import numpy as np
except ImportError:  # pragma: no cover - exercised on platforms without a wheel
    hyperscan = np = None

CHUNK_BYTES = 16 << 20  # per scanned chunk (each worker reads one at a time into its buffer)
LINE_CAP = 64 << 20  # a line longer than this is read as several (memory stays bounded)
SCAN_BLOCK = 1 << 20  # a chunk is scanned a block of lines at a time (in the core's cache)
LINE_BLOCK = 512 << 10  # bytes whose newlines numpy looks for at once
# a literal of fewer bytes than this is looked for by a database of its own: one two-byte literal
# (a character outside ASCII that ignoring case matches to a letter, such as LONG S) in the main
# database doubled what every one of its ~590 literals costs (Hyperscan's literal matcher on
# 16 MiB: 24 -> 51 ms; alone, the short ones cost ~4 ms)
SHORT_ALONE = 3
# Hyperscan's literal matcher confirms a literal where its last bytes are: a literal ending in
# bytes most lines hold ("tion", " device ") is checked all over the log. Each literal is cut
# after RARE_END bytes that at most RARE_SHARE of the log's first lines hold (never shorter
# than MIN_LITERAL): 590 literals on 16 MiB, 18.7 -> 12.4 ms, the same candidate lines. A share,
# not the fewest: the cuts, and so the compiled database, stay the same from one slice of a log
# to another (the fewest changed 26-74 of 585 cuts between two slices of one log)
RARE_END = 4
RARE_SHARE = 0.01
SECOND_TAIL = 16  # characters of a counted text's end that stand for its second occurrence
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


SPACE = r"\t\x0b\x0c\r "  # \s without the newline
_UNSUPPORTED_ESCAPES = set("pPXRhHvVKkgGQEzZAN0123456789xuUc")
_COMPILED: dict[tuple, Any] = {}  # Hyperscan databases (None: refused)


def line_pattern(pattern: str) -> str | None:
    """A signature's regex for Hyperscan's byte mode, where nothing may cross a line's end:
    negated classes and `\\s` leave the newline out. None when the byte mode cannot read it the
    same way: non-ASCII characters, Unicode classes, back-references, dot-all or verbose mode, or
    a set inside a set.

    >>> line_pattern(r'"Scheduling pod" podName="(?P<pod>[^"]+)" \\S+\\s+x')
    '"Scheduling pod" podName="(?:[^\\\\n"]+)" \\\\S+[\\\\t\\\\x0b\\\\x0c\\\\r ]+x'
    >>> line_pattern(r"GPU\\p{L}") is None
    True
    """
    if not pattern.isascii():
        return None
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or nxt in _UNSUPPORTED_ESCAPES:
                return None
            if nxt == "s":
                out.append(SPACE if in_class else f"[{SPACE}]")
            elif nxt in "DW" and not in_class:
                out.append(rf"[^\n\{nxt.lower()}]")
            elif nxt in "SDW" and in_class:
                return None  # the class would take the newline
            else:
                out.append(c + nxt)
            i += 2
            continue
        if in_class:
            if c == "[":
                return None
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            negated = pattern.startswith("[^", i)
            out.append(r"[^\n" if negated else "[")
            i += 2 if negated else 1
            if pattern.startswith("]", i):  # a leading ] is a member
                out.append(r"\]")
                i += 1
            in_class = True
            continue
        if pattern.startswith("(?", i):
            rest = pattern[i + 2 :]
            if rest.startswith(("P<", "<")) and not rest.startswith(("<=", "<!")):
                i = pattern.index(">", i) + 1
                out.append("(?:")
                continue
            flags = rest.split(")", 1)[0].split(":", 1)[0]
            if rest.startswith("P=") or "s" in flags or "x" in flags:
                return None
        out.append(c)
        i += 1
    return None if in_class else "".join(out)


def line_counter(pattern: str) -> str | None:
    """A pattern with one match per line that a signature's regex matches (at the line's end),
    or None when Hyperscan's byte mode cannot read the regex the same way. Whether Hyperscan
    compiles it (a look-behind it refuses) is `accepted`'s question."""
    line = line_pattern(pattern)
    if hyperscan is None or line is None:
        return None
    return f"(?:{line})[^\\n]*\\n"


@functools.lru_cache(maxsize=256)
def accepted(counter: str) -> bool:
    """Hyperscan compiles this multi-line pattern on its own: asked only when a scan's database
    does not compile (a compile per hot signature would cost every big log 10 ms; the answer is
    not kept in the cache folder, where a file per signature would push the databases out)."""
    assert hyperscan is not None
    return compile_database([counter], [hyperscan.HS_FLAG_MULTILINE]) is not None


_BYTE_ESCAPES = [
    chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\x{b:02x}" for b in range(256)
]


def _bytes_literal(text: str) -> str:
    """A literal as a Hyperscan pattern: every byte that is not a letter or digit as \\xHH."""
    return "".join(map(_BYTE_ESCAPES.__getitem__, text.encode("utf-8")))


@dataclass(frozen=True)
class _Found:
    """One chunk's findings, with line numbers counted from the chunk's start (0 = its first)."""

    lines: int
    klog_lines: int
    severities: dict[str, int]
    # per hot signature: (id, its first lines the sample still wants as (number, text), its
    # last lines as (number, start, length): made text only if they are the file's last, count)
    hot: list[tuple[str, list[tuple[int, str]], list[tuple[int, int, int]], int]]
    # unmatched E/F lines: (their rank among the chunk's E/F lines, line, text)
    loose: list[tuple[int, int, str]]
    # candidate lines: (line, text, rank among the chunk's E/F lines of an E/F line that no hot
    # signature matches, else -1): one no signature takes is a loose line, if among the file's
    # first ERROR_EXAMINED E/F lines, as the loose lines are
    candidates: tuple[list[int], list[str], list[int]]


class Scanner:
    """A compiled database and each thread's scratch space (one scan at a time may use one)."""

    def __init__(self, database: Any):
        self.database = database
        self._local = threading.local()

    def scan(
        self, data: bytes | bytearray | memoryview, bins: list[list[int]], base: int = 0
    ) -> None:
        """Append each match's end offset (plus `base`) to its pattern's bin (patterns may share
        a bin), in the order of the ends."""
        assert hyperscan is not None
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self.database)

        def on_match(pattern: int, _start: int, end: int, _flags: int, _context: object) -> None:
            bins[pattern].append(base + end)

        self.database.scan(data, match_event_handler=on_match, scratch=scratch)


def rare_endings(literals: list[str], sample: bytes) -> list[str]:
    """Each literal, or its longest start (at least MIN_LITERAL bytes, cut between characters)
    whose last RARE_END bytes occur in `sample` at most RARE_SHARE times its number of lines
    (once in a hundred lines), else the longest of those it holds least. A line that holds a
    literal holds its start: the candidates are a superset, each checked later against the
    whole literal and its signature's regex.

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
    held = np.searchsorted(grams, keys, "right") - np.searchsorted(grams, keys, "left")
    held[held <= RARE_SHARE * (sample.count(b"\n") + 1)] = 0  # rare enough: as good as absent
    # per literal, the cut held least, the longest of those: first in (owner, held, -length)
    order = np.lexsort((-length[cuts], held, owner[cuts]))
    ranked = owner[cuts][order]
    first = order[np.flatnonzero(np.diff(ranked, prepend=-1))]
    out = list(literals)
    for k, n in zip(owner[cuts][first].tolist(), length[cuts][first].tolist(), strict=True):
        out[k] = encoded[k][:n].decode()
    return out


def line_start(data: bytes | bytearray, end: int) -> int:
    """The start of the line a match ending at `end` ends on (a match is never empty)."""
    return data.rfind(b"\n", 0, max(end - 1, 0)) + 1


def line_end(data: bytes | bytearray, start: int) -> int:
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


def thread_buffer() -> bytearray:
    """This thread's buffer for the piece of a file it reads (`read_into` reuses its pages),
    made the size of a chunk at once: grown from empty by `read_into`, its pages were touched
    twice, by a zeroed copy and by the buffer (8,200 page faults for a chunk instead of 4,100,
    ~10 ms of a worker's first chunk)."""
    buffer = getattr(_THREAD, "buffer", None)
    if buffer is None:
        buffer = _THREAD.buffer = bytearray(CHUNK_BYTES)
    return buffer


class LineTable:
    """Where one chunk's lines start and which are klog lines of which severity, found with
    numpy: it compares every byte in SIMD without holding Python's lock, where `bytes.count`
    holds it and is several times slower (a log's lines are counted, never reported one by one).
    The lines are added a block at a time, while the block is in the core's cache."""

    def __init__(self, chunk: bytes | bytearray, scratch: Any = None):
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
            np.equal(block, 10, out=newline)
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


def line_blocks(data: bytes | bytearray, size: int) -> Iterator[tuple[int, int]]:
    """`data` (whole lines) in blocks of whole lines of about `size` bytes (a longer line is a
    block of its own)."""
    at = 0
    while at < len(data):
        end = data.rfind(b"\n", at, at + size) + 1
        if end <= at:  # no newline in reach: the line under way ends the block
            end = line_end(data, at + size) + 1
        end = min(end, len(data))
        yield at, end
        at = end


class ByteScan:
    """The Hyperscan database of one matcher's scan of a big log, and its pass over a file."""

    def __init__(
        self,
        database: Any,
        size: int,
        reported: list[str],
        counted: list[tuple[str, str]],
        aside: tuple[Any, int] | None = None,
        short: tuple[Any, int] | None = None,
    ):
        self.scanner = Scanner(database)
        self.size = size  # its patterns
        # the prefilters no klog line matches, and how many: run on the other lines only
        self.aside = (Scanner(aside[0]), aside[1]) if aside is not None else None
        # the literals shorter than SHORT_ALONE, and how many: a database of their own
        self.short = (Scanner(short[0]), short[1]) if short is not None else None
        self.reported = reported  # hot signatures whose lines Hyperscan reports
        self.counted = counted  # (hot signature, its plain text) counted by `bytes.count`
        self.hot = reported + [sid for sid, _ in counted]

    @classmethod
    def build(
        cls,
        reported: list[tuple[str, str]],
        counted: list[tuple[str, str]],
        literals: list[str],
        caseless: list[str],
        prefilters: list[str],
        sample: bytes = b"",
    ) -> ByteScan | None:
        """The hot signatures: `reported`, (signature, `line_counter`) whose lines Hyperscan
        reports, and `counted`, (signature, text) of plain ones that `bytes.count` counts (a
        line reported costs a call into Python, a quarter of a microsecond: a periodic line is
        a third of some logs). `literals` and `caseless` (ASCII case ignored): what makes a line
        a candidate, with `prefilters`, the regexes of signatures without a literal (found by a
        superset of their matches). `sample`, the log's first lines: the literals are cut at
        their ending rarest there (`rare_endings`). None when a pattern cannot be taken or
        Hyperscan is missing."""
        if hyperscan is None or np is None:
            return None
        literals = sorted(set(rare_endings(literals, sample)))
        # a superset of each one's lines: Hyperscan anchors a regex on a literal inside it, which
        # can be on most lines (".go:" of a stack frame's path is in every klog line's header)
        supersets = [leading_superset(p) or p for p in prefilters]
        prefilter_lines = [line_pattern(x) for x in supersets]
        if any(p is None for p in prefilter_lines):
            return None
        # one that no klog line can match (a stack frame's `^[\w.~-]+/`) would run at the start
        # of every line: it is looked for in the other lines, a few where klog lines are most
        off_klog = [misses_lines_starting(x, KLOG_HEADER) for x in supersets]
        aside = [p for p, off in zip(prefilter_lines, off_klog, strict=True) if p and off]
        inline = [p for p, off in zip(prefilter_lines, off_klog, strict=True) if p and not off]
        multiline = hyperscan.HS_FLAG_MULTILINE
        expressions = [p for _, p in reported]
        # lines where `bytes.count` may have counted a text twice: the text, then its last
        # bytes further on in the line (a superset of a second occurrence: `_Lines.extra`
        # counts each such line again), which Hyperscan finds for half of what the text twice
        # costs (its whole length stays active through each line the text is on)
        expressions += [
            f"{_bytes_literal(x)}[^\\n]*{_bytes_literal(x[-SECOND_TAIL:])}" for _, x in counted
        ]
        flags = [multiline] * len(expressions)
        short: list[tuple[str, int]] = []  # (literal, flag): those shorter than SHORT_ALONE
        for texts, flag in ((literals, 0), (caseless, hyperscan.HS_FLAG_CASELESS)):
            for x in texts:
                if len(x.encode()) < SHORT_ALONE:
                    short.append((x, flag))
                else:
                    expressions.append(_bytes_literal(x))
                    flags.append(flag)
        prefilter = multiline | hyperscan.HS_FLAG_PREFILTER
        expressions += inline
        flags += [prefilter] * len(inline)
        database = _database(expressions, flags)
        aside_database = _database(aside, [prefilter] * len(aside)) if aside else None
        short_database = (
            _database([_bytes_literal(x) for x, _ in short], [f for _, f in short])
            if short
            else None
        )
        if database is None or (aside and aside_database is None):
            return None
        if short and short_database is None:
            return None
        sids = [sid for sid, _ in reported]
        found_aside = (aside_database, len(aside)) if aside else None
        found_short = (short_database, len(short)) if short else None
        return cls(database, len(expressions), sids, counted, found_aside, found_short)

    def batches(self, path, workers: int | None = None) -> Iterator[Batch]:
        """The file's batches in order, one per chunk, scanned `workers` at a time. Each worker
        reads its own chunks (`_ranges` finds where they start and end)."""
        workers = workers or max(1, min(4, os.cpu_count() or 1))
        seen = dict.fromkeys(self.hot, 0)
        # each hot signature's last lines (number, offset in the file, length), kept here and
        # handed over once, in a last batch, read from the file then: a chunk's would be ~1,000
        # texts made, sent and dropped, and a frame built
        tails = {sid: deque[tuple[int, int, int]](maxlen=SIG_TAIL_CAP) for sid in self.hot}
        errors = 0  # loose E/F lines kept
        examined = 0  # E/F lines before the next chunk to merge
        base = 0
        pending: deque = deque()

        def done() -> Batch:
            nonlocal errors, examined, base
            size, args, future = pending.popleft()
            found = pool.result(args, future)
            start = args[1]
            for sid, _head, tail, n in found.hot:
                seen[sid] += n
                tails[sid].extend((base + k, start + at, length) for k, at, length in tail)
            # an E/F line's rank among the chunk's: is it among the file's first examined?
            examinable = [0 <= rank < ERROR_EXAMINED - examined for rank in found.candidates[2]]
            loose = [(n, t) for rank, n, t in found.loose if rank < ERROR_EXAMINED - examined]
            errors += len(loose)
            examined += found.severities["E"] + found.severities["F"]
            batch = _batch(found, loose, examinable, base, size)
            base += found.lines
            return batch

        pool = Workers(self.scan_range, workers)
        try:
            for start, end in _ranges(path):
                heads = {sid: max(0, SIG_HEAD_CAP - n) for sid, n in seen.items()}
                wanted = (ERROR_LINE_CAP - errors, ERROR_EXAMINED - examined)
                args = (str(path), start, end, heads, *wanted)
                pending.append((end - start, args, pool.submit(*args)))
                while len(pending) > workers or (pending and pending[0][2].done()):
                    yield done()
            while pending:
                yield done()
        finally:
            pool.close()
        last: list[tuple[str, pl.DataFrame | None, int]] = [
            (sid, _rows_frame(_lines_at(path, rows), 0), 0) for sid, rows in tails.items() if rows
        ]
        yield Batch(0, 0, 0, {}, hot=last, loose=None, candidates=None)

    def scan_range(
        self, path: str, start: int, end: int, heads: dict[str, int], errors: int, examine: int
    ) -> _Found:
        """The chunk file[start:end] read into this worker's buffer and scanned (`_scan`)."""
        buffer = thread_buffer()
        _read_range(path, start, end, buffer)
        return self._scan(buffer, heads, errors, examine)

    def _scan(self, chunk: bytearray, heads: dict[str, int], errors: int, examine: int) -> _Found:
        """One chunk (whole lines, the last one ending with a newline): `heads`, how many first
        rows each hot signature still wants; at most `errors` loose E/F lines among its first
        `examine` E/F lines (bounds: the chunks before may not be merged yet)."""
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
        # block by block, each pass over a block while it is in the core's cache: two workers
        # passing over whole chunks wait on memory (a third more CPU per chunk)
        for start, end in line_blocks(chunk, SCAN_BLOCK):
            self.scanner.scan(view[start:end], bins, start)
            if self.short is not None:
                self.short[0].scan(view[start:end], short_bins, start)
            before = table.lines
            others = table.add(start, end)
            if self.aside is not None and len(others[0]):
                block_lines = table.lines - before
                self._scan_aside(chunk, view[start:end], start, others, block_lines, candidate_ends)
            for j, needle in enumerate(needles):
                occurrences[j] += chunk.count(needle, start, end)
        view.release()
        reported_ends, seconds = bins[:n_reported], bins[n_reported:n_bins]
        lines_of = _Lines(chunk, reported_ends, [x for _, x in self.counted])

        starts = sorted({line_start(chunk, e) for e in candidate_ends})
        wanted = set(starts)  # the starts of the lines whose number and text are kept
        hot_picks = []  # (signature, starts of its first lines, of its last lines, count)
        for sid, ends in zip(self.reported, reported_ends, strict=True):
            firsts, lasts = ends[: heads[sid]], ends[-SIG_TAIL_CAP:]
            hot_picks.append(
                (
                    sid,
                    [line_start(chunk, e) for e in firsts],
                    [line_start(chunk, e) for e in lasts],
                    len(ends),
                )
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
        return _Found(
            lines=table.lines,
            klog_lines=table.klog_lines,
            severities=table.severities,
            hot=[
                (
                    sid,
                    [(rows[s], _text(chunk, s)) for s in firsts],
                    [(rows[s], s, line_end(chunk, s) - s) for s in lasts],
                    n,
                )
                for sid, firsts, lasts, n in hot_picks
            ],
            loose=[(rank, rows[s], _text(chunk, s)) for rank, s in loose],
            candidates=(
                [rows[s] for s in starts],
                [_text(chunk, s) for s in starts],
                ranks,
            ),
        )

    def _scan_aside(
        self, chunk: bytearray, block: memoryview, start: int, others, lines: int, found: list
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


class _Lines:
    """Questions about one chunk's lines, answered from the bytes around a line start."""

    def __init__(self, chunk: bytearray, matched_ends: list[list[int]], literals: list[str]):
        self.chunk = chunk
        # the ends (past the newline) of the lines of the hot signatures Hyperscan reports
        self.reported = set().union(*matched_ends)
        self.needles = [x.encode() for x in literals]

    def end(self, start: int) -> int:
        return line_end(self.chunk, start) + 1

    def cold(self, starts: Iterable[int]) -> Iterator[tuple[int, int]]:
        """(rank, start) of the lines of `starts` that hold no hot signature's match, in order
        (a loop of its own: the first chunks ask it of up to ERROR_EXAMINED lines each, and a
        call per line cost as much as the rest of the chunk's scan)."""
        chunk, size, needles, reported = self.chunk, len(self.chunk), self.needles, self.reported
        find = chunk.find
        for rank, start in enumerate(starts):
            end = find(b"\n", start)
            end = (size if end < 0 else end) + 1
            if end in reported:
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
        return sum(self.chunk.count(needle, s, self.end(s)) - 1 for s in starts)

    def holding(self, needle: bytes, head: int, tail: int) -> tuple[list[int], list[int]]:
        """The starts of the first `head` and of the last `tail` lines holding `needle`."""
        chunk, out = self.chunk, list[int]()
        at = 0
        while len(out) < head and (i := chunk.find(needle, at)) >= 0:
            out.append(chunk.rfind(b"\n", 0, i) + 1)
            at = self.end(i)
        last: list[int] = []
        at = len(chunk)
        while len(last) < tail and (i := chunk.rfind(needle, 0, at)) >= 0:
            at = chunk.rfind(b"\n", 0, i) + 1
            last.append(at)
        return out, last[::-1]


def _text(chunk: bytearray, start: int) -> str:
    return _decoded(chunk[start : line_end(chunk, start)])


def _lines_at(path, rows: Iterable[tuple[int, int, int]]) -> list[tuple[int, str]]:
    """(number, text) of the lines given as (number, offset in the file, length)."""
    with open(path, "rb", buffering=0) as fh:
        return [(n, _decoded(os.pread(fh.fileno(), length, at))) for n, at, length in rows]


def _decoded(line: bytes | bytearray) -> str:
    if line.endswith(b"\r"):
        line = line[:-1]
    return line.decode("utf-8", errors="replace")


def _rows_frame(rows: Iterable[tuple[int, str]], base: int) -> pl.DataFrame:
    """A frame of (line, text) pairs, lines counted from `base`."""
    pairs = list(rows)
    return _frame([n for n, _ in pairs], [t for _, t in pairs], base)


def _frame(lines: list[int], texts: list[str], base: int, **extra: list) -> pl.DataFrame:
    return pl.DataFrame(
        {"line": [base + n + 1 for n in lines], "text": texts, **extra},
        schema={"line": pl.Int64, "text": pl.String, **{k: pl.Boolean for k in extra}},
    )


def _batch(
    found: _Found, loose: list[tuple[int, str]], examinable: list[bool], base: int, size: int
) -> Batch:
    """The chunk's batch; `examinable`: per candidate, whether it is a loose line if no
    signature takes it."""
    lines, texts, _ranks = found.candidates
    return Batch(
        lines=found.lines,
        bytes=size,
        klog_lines=found.klog_lines,
        severities=found.severities,
        hot=[
            (sid, _rows_frame(head, base) if head else None, n)
            for sid, head, _tail, n in found.hot
            if n
        ],
        loose=_rows_frame(loose, base) if loose else None,
        candidates=_frame(lines, texts, base, _err=examinable) if lines else None,
    )


def _ranges(path) -> Iterator[tuple[int, int]]:
    """The file's chunks of whole lines, as (start, end) offsets, about CHUNK_BYTES each: the
    line under way at a chunk's end is taken to its end, up to LINE_CAP bytes (a longer one is
    read as several lines). Only the bytes at each chunk's end are read here."""
    with open(path, "rb") as fh:
        start = 0
        while True:
            fh.seek(start + CHUNK_BYTES - 1)
            last = fh.read(1)
            if not last:  # the file ends within this chunk
                end = fh.seek(0, os.SEEK_END)
                if end > start:
                    yield start, end
                return
            end = start + CHUNK_BYTES
            if last != b"\n":
                end += len(fh.readline(LINE_CAP))
            yield start, end
            start = end


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


def _database(expressions: list[str], flags: list[int]) -> Any:
    """The compiled block-mode database, or None when Hyperscan refuses a pattern (kept per
    pattern set: a batch worker scans many big logs with one catalogue; and between runs in the
    cache folder, since compiling takes as long as scanning 100 MB)."""
    key = (tuple(expressions), tuple(flags))
    if key not in _COMPILED:
        if len(_COMPILED) > 32:
            _COMPILED.clear()
        _COMPILED[key] = cached_database(expressions, flags, "scan")
    return _COMPILED[key]


CACHED_DATABASES = 16  # kept in the cache folder


def cached_database(expressions: list[str], flags: list[int], use: str) -> Any:
    """The database from the cache folder (checksummed: a damaged file is compiled again), or
    compiled and saved there; `use` names the files of one user of the folder."""
    assert hyperscan is not None
    key = repr((hyperscan.__version__, platform.machine(), expressions, flags)).encode()

    def read(data: bytes) -> Any:  # a damaged file, or one for another CPU, is compiled again
        if hashlib.sha256(data[32:]).digest() != data[:32]:
            return None
        return hyperscan.loadb(data[32:], hyperscan.HS_MODE_BLOCK)

    def write(database: Any) -> bytes | None:
        if database is None:
            return None
        payload = hyperscan.dumpb(database)
        return hashlib.sha256(payload).digest() + payload

    return kept(
        cache_dir("hyperscan"),
        f"{use}-{hashlib.sha256(key).hexdigest()[:32]}.db",
        (f"{use}-*.db", CACHED_DATABASES),
        read,
        lambda: compile_database(expressions, flags),
        write,
    )


def compile_database(expressions: list[str], flags: list[int]) -> Any:
    """A block-mode Hyperscan database of these patterns (ids: their positions), or None when
    Hyperscan refuses one."""
    assert hyperscan is not None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(
            expressions=[x.encode() for x in expressions],
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=flags,
        )
    except hyperscan.error:  # CompilerError and the like
        return None
    return database
