"""A big log's byte scan from the parent's side: which patterns (`hsdb.ScanPlan`), checked
with Hyperscan here; the file cut into chunks, scanned by the scan processes (analyzer/parse/
bytescan.py: numpy and Hyperscan, never imported here); what they find merged, in the file's
order, into batches of polars frames for analyzer/parse/logs.py (a prefixed log's rows with
their raw line and their text without its prefix, as the line reader's)."""

from __future__ import annotations

import functools
import importlib.util
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator

import polars as pl

from analyzer.bundle.text import LINE_PREFIX_PATTERN
from analyzer.parse.batch import (
    CHUNK_BYTES,
    ERROR_EXAMINED,
    ERROR_LINE_CAP,
    SIG_HEAD_CAP,
    SIG_TAIL_CAP,
    Batch,
    ChunkFound,
    line_text,
)
from analyzer.parse.hsdb import SHORT_ALONE, ScanPlan
from analyzer.parse.scanstart import SCAN_CHUNK, scan_workers
from analyzer.parse.workers import Workers

LINE_CAP = 64 << 20  # a line longer than this is read as several (memory stays bounded)
HANDED_BYTES = 2 << 20  # candidate lines' text kept before they are handed on in a batch
# a chunk whose candidates are this share of its lines (and at least REPLAN_MIN) asks for a plan
# with more hot signatures, at most REPLANS times a file (the bench's logs: ~0.2 %, never)
REPLAN_SHARE = 0.02
REPLAN_MIN = 1_000
REPLANS = 3


@functools.cache
def numpy_found() -> bool:
    """numpy is there for the scan processes (which import it: this process does not)."""
    return importlib.util.find_spec("numpy") is not None


# (the plan's hot signatures, a chunk's candidate texts, its number of lines and of bytes, the
# plan, with its literals as the scan processes cut them) -> a better scan, or None
Replan = Callable[[list[str], list[str], int, int, ScanPlan], "ByteScan | None"]


class ByteScan:
    """One matcher's plan for the scan of a big log, checked, and its pass over a file."""

    def __init__(self, plan: ScanPlan):
        self.plan = plan

    @property
    def reported(self) -> list[str]:
        """The hot signatures whose lines Hyperscan reports (the tallied ones in a chunk that
        does not repeat itself)."""
        return [sid for sid, _ in (*self.plan.reported, *self.plan.tallied)]

    @property
    def counted(self) -> list[tuple[str, str]]:
        """(hot signature, its plain text): counted by `bytes.count`."""
        return list(self.plan.counted)

    @property
    def hot(self) -> list[str]:
        return self.reported + [sid for sid, _ in self.plan.counted]

    @property
    def short(self) -> bool:
        """Literals shorter than SHORT_ALONE: looked for by a database of their own."""
        return any(
            len(x.encode()) < SHORT_ALONE for x in (*self.plan.literals, *self.plan.caseless)
        )

    @classmethod
    def checked(cls, plan: ScanPlan) -> ByteScan | None:
        """The scan of this plan, or None where numpy is missing or Hyperscan refuses a pattern:
        it compiles the plan with its literals as written (a scan process cuts them to their
        rarest ending in the plan's sample, which cannot make a pattern it refuses; the
        database is kept in the cache folder)."""
        if not numpy_found():
            return None
        databases = plan.databases(sorted(set(plan.literals)))
        return cls(plan) if databases is not None else None

    def batches(
        self, path, workers: int | None = None, replan: Replan | None = None
    ) -> Iterator[Batch]:
        """The file's batches in order, one per chunk, scanned `workers` at a time. Each worker
        maps (else reads) its own chunks (`_ranges` finds where they start and end).

        The plan was made from the file's first lines: where a chunk's candidates are many
        (REPLAN_SHARE of its lines), `replan` may give a better scan (more hot signatures, or
        some literals looked for whole), which the chunks not yet handed out get (a log quiet
        at first and then in a loop of one error would otherwise send every line of the loop
        to be attributed one by one). Each batch says which hot signatures its plan counted
        (`Batch.hot_ids`); the candidates of a plan are handed on before the first batch of
        the next."""
        workers = workers or scan_workers()
        scan = self
        replans = 0
        seen = dict.fromkeys(self.hot, 0)
        # each hot signature's last lines, kept here and handed over once, in a last batch, read
        # from the file then: a chunk's would be ~1,000 texts made, sent and dropped, and a frame
        tails = {sid: _LastLines() for sid in self.hot}
        prefixed = self.plan.prefixed  # the texts are raw lines: the parent removes prefixes
        candidates = _Candidates(prefixed)
        pooled_by = self  # the scan whose candidates `candidates` holds
        errors = 0  # loose E/F lines kept
        examined = 0  # E/F lines before the next chunk to merge
        base = 0
        pending: deque = deque()

        def done() -> Iterator[Batch]:
            nonlocal errors, examined, base, pooled_by
            by, size, args, future = pending.popleft()
            found = pool.result(args, future)
            if found.cut is not None and by.plan.cut is None:  # sent lighter from now on
                by.plan = by.plan.lightened(found.cut)
            lines, texts, ranks = found.candidates
            if by is scan and len(lines) >= max(REPLAN_MIN, REPLAN_SHARE * found.lines):
                if replanned(texts, found.lines, size):
                    # this chunk and those under way are scanned again by the new plan:
                    # attributing a chunk's candidates costs several times its scan
                    pending.appendleft((by, size, args, future))
                    for k, (_by, size_k, args_k, future_k) in enumerate(pending):
                        future_k.cancel()
                        args_k = (scan.plan, *args_k[1:4], heads_now(), *args_k[5:])
                        pending[k] = (scan, size_k, args_k, pool.submit(*args_k))
                    return
            if by is not pooled_by:  # the chunks of the plan before are all merged
                yield _handed(candidates.frame(), pooled_by)
                pooled_by = by
            start = args[2]
            for sid, _head, tail, n in found.hot:
                seen[sid] += n
                tails[sid].add(base, start, tail)
            # an E/F line's rank among the chunk's: is it among the file's first examined?
            examinable = [0 <= rank < ERROR_EXAMINED - examined for rank in ranks]
            candidates.add([base + n for n in lines], texts, examinable)
            loose = [(n, t) for rank, n, t in found.loose if rank < ERROR_EXAMINED - examined]
            errors += len(loose)
            examined += found.severities["E"] + found.severities["F"]
            handed = candidates.frame() if candidates.size >= HANDED_BYTES else None
            yield _batch(found, loose, handed, base, size, by)
            base += found.lines

        def replanned(texts: list[str], lines: int, size: int) -> bool:
            """Whether a chunk's candidates gave a better plan (more hot signatures, or some
            literals looked for whole where their cut starts were what the candidates held)."""
            nonlocal scan, replans
            if replan is None or replans >= REPLANS:
                return False
            replans += 1
            better = replan(scan.hot, texts, lines, size, scan.plan)
            if better is None:
                return False
            scan = better
            for sid in better.hot:
                seen.setdefault(sid, 0)
                tails.setdefault(sid, _LastLines())
            return True

        def heads_now() -> dict[str, int]:
            return {sid: max(0, SIG_HEAD_CAP - seen[sid]) for sid in scan.hot}

        pool: Workers[ChunkFound] = Workers(SCAN_CHUNK, workers)
        try:
            for start, end in _ranges(path):
                wanted = (ERROR_LINE_CAP - errors, ERROR_EXAMINED - examined)
                args = (scan.plan, str(path), start, end, heads_now(), *wanted)
                pending.append((scan, end - start, args, pool.submit(*args)))
                while len(pending) > workers or (pending and pending[0][3].done()):
                    yield from done()
            while pending:
                yield from done()
        finally:
            pool.close()
        last: list[tuple[str, pl.DataFrame | None, int]] = [
            (sid, _rows_frame(_lines_at(path, rows.rows()), 0, prefixed), 0)
            for sid, rows in tails.items()
            if rows.parts
        ]
        yield Batch(0, 0, 0, {}, last, None, candidates.frame(), tuple(pooled_by.hot))


def _handed(candidates: pl.DataFrame | None, by: ByteScan) -> Batch:
    """A batch of no lines that hands on the candidates a plan left."""
    return Batch(0, 0, 0, {}, [], None, candidates, tuple(by.hot))


class _Candidates:
    """The candidate lines of the chunks merged so far, handed on together: a frame per chunk
    (~160 lines) cost the parent ~0.6 ms of the CPU its workers scan with."""

    def __init__(self, prefixed: bool) -> None:
        self.prefixed = prefixed  # raw lines of a prefixed log (`_frame`)
        self.lines: list[int] = []  # in the file, from 0
        self.texts: list[str] = []
        self.examinable: list[bool] = []  # a loose line if no signature takes it
        self.size = 0  # characters of text

    def add(self, lines: list[int], texts: list[str], examinable: list[bool]) -> None:
        self.lines += lines
        self.texts += texts
        self.examinable += examinable
        self.size += sum(map(len, texts))

    def frame(self) -> pl.DataFrame | None:
        """The lines not yet handed (None: there are none), with an `_err` column."""
        if not self.lines:
            return None
        frame = _frame(self.lines, self.texts, 0, self.prefixed, _err=self.examinable)
        self.lines, self.texts, self.examinable, self.size = [], [], [], 0
        return frame


class _LastLines:
    """A hot signature's last SIG_TAIL_CAP lines in the chunks merged so far, kept as the chunks
    handed them (number and offset in the chunk, length) and put together once, at the end: a
    line at a time, the parent spent ~25 ms of the own log's scan on the 58,000 it dropped."""

    def __init__(self) -> None:
        self.parts: deque[tuple[int, int, list[tuple[int, int, int]]]] = deque()
        self.size = 0  # lines in `parts`

    def add(self, base: int, start: int, lines: list[tuple[int, int, int]]) -> None:
        """A chunk's last lines; `base`: its first line's number in the file, `start`: its
        offset. The oldest chunk's lines go once the newer ones are SIG_TAIL_CAP."""
        if not lines:
            return
        self.parts.append((base, start, lines))
        self.size += len(lines)
        while self.size - len(self.parts[0][2]) >= SIG_TAIL_CAP:
            self.size -= len(self.parts.popleft()[2])

    def rows(self) -> list[tuple[int, int, int]]:
        """The last lines as (number, offset in the file, length), in order."""
        lines = [(base + k, start + at, n) for base, start, part in self.parts for k, at, n in part]
        return lines[-SIG_TAIL_CAP:]


def _lines_at(path, rows: Iterable[tuple[int, int, int]]) -> list[tuple[int, str]]:
    """(number, text) of the lines given as (number, offset in the file, length)."""
    with open(path, "rb", buffering=0) as fh:
        return [(n, line_text(os.pread(fh.fileno(), length, at))) for n, at, length in rows]


def _rows_frame(rows: Iterable[tuple[int, str]], base: int, prefixed: bool) -> pl.DataFrame:
    """A frame of (line, text) pairs, lines counted from `base`."""
    pairs = list(rows)
    return _frame([n for n, _ in pairs], [t for _, t in pairs], base, prefixed)


def _frame(
    lines: list[int], texts: list[str], base: int, prefixed: bool, **extra: list
) -> pl.DataFrame:
    """Lines and their texts as the line reader's frames hold them: a prefixed log's (`raw`) with
    its prefixes removed as the line reader removes them (`text`)."""
    frame = pl.DataFrame(
        {"line": [base + n + 1 for n in lines], "text": texts, **extra},
        schema={"line": pl.Int64, "text": pl.String, **{k: pl.Boolean for k in extra}},
    )
    if not prefixed:
        return frame
    text = pl.col("text")
    return frame.select(
        "line", text.alias("raw"), text.str.replace(LINE_PREFIX_PATTERN, ""), *extra
    )


def _batch(
    found: ChunkFound,
    loose: list[tuple[int, str]],
    candidates: pl.DataFrame | None,
    base: int,
    size: int,
    by: ByteScan,
) -> Batch:
    """The chunk's batch (scanned `by` that plan), with the candidates of it and of the chunks
    before not yet handed."""
    return Batch(
        lines=found.lines,
        bytes=size,
        klog_lines=found.klog_lines,
        severities=found.severities,
        hot=[
            (sid, _rows_frame(head, base, by.plan.prefixed) if head else None, n)
            for sid, head, _tail, n in found.hot
            if n
        ],
        loose=_rows_frame(loose, base, by.plan.prefixed) if loose else None,
        candidates=candidates,
        hot_ids=tuple(by.hot),
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
