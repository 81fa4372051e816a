"""The first pass over a bundle: the names to replace everywhere and the tokens already taken.

Node names come from where Kubernetes states them: the analyzer's own parsers (Node objects in
any form, `kubectl describe node`, a pod's node) and the `find` patterns of the redactors
(`kubernetes.io/hostname`, `nodeName`, `Node:` of describe pod, log keys, journald host columns,
kubelet messages). A token map loaded with `--map` adds the values of earlier runs, so a file
redacted alone still loses a node name learnt from another file."""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar, cast

from analyzer.bundle.model import BundleFile
from analyzer.bundle.text import looks_binary
from analyzer.parse.bytescan import read_into, thread_buffer, warm_up
from analyzer.parse.workers import Workers
from analyzer.progress import Progress
from analyzer.redact.engine import MIN_EVERYWHERE, Learner, Lesson, Plan
from analyzer.redact.hyper import line_filter
from analyzer.redact.lineends import only_crlf
from analyzer.redact.lines import HYPERSCAN_MIN
from analyzer.redact.mapped import MappedPiece
from analyzer.redact.redactors import Redactor
from analyzer.redact.tokens import TokenMap

T = TypeVar("T")
CHUNK = 16 << 20  # bytes of a big file redacted at once, cut at a line end
PEM_BEGIN, PEM_END = b"-----BEGIN ", b"-----END "
LONG_LINE = 4  # pieces a line may grow to before it is cut anyway: memory stays bounded
PEM_MAX = 1 << 20  # bytes from a piece's end searched for a PEM block it cuts (a key is ~3 KB)
SPAN_TAIL = 64 << 10  # bytes beyond PEM_MAX that `spans` reads of a block's end to find its cut
# base64 of `-----BEGIN` at its three alignments (base64-private-key's prefilter), and a line of
# such a blob wrapped over lines (its pattern's continuation)
_B64_PEM = re.compile(rb"LS0tLS1CRUdJT|LS0tQkVHSU4|LS0tLUJFR0lO")
_B64_LINE = re.compile(rb"[A-Za-z0-9+/]{60,}={0,2}\r?")  # a CRLF file's too
# a line that starts a YAML or JSON object (after its newline: a document's `---`, a list item,
# a bracket alone on its line), its indentation, and whether it is a document's
_OBJECT_START = re.compile(rb"\n([ \t]*)(?:(---)(?=[ \t\r\n])|- |[{\[][ \t\r]*(?=\n))")
_INDENT = re.compile(rb"[ \t]*")
SCANS = 2  # pieces the first pass studies at once (worker processes, else threads)
FORK_MIN = 4 * CHUNK  # bytes from which a file's first pass runs in worker processes
_WARM = [False]  # whether this worker process is ready to map its pieces (`bytescan.warm_up`)


@dataclass(frozen=True)
class SourceFile:
    """A bundle file to redact: its name inside the bundle, where it is, its time."""

    name: str
    path: Path
    mtime: float | None = None


@dataclass(frozen=True)
class Found:
    names: dict[str, str]  # value -> token prefix
    reserved: frozenset[str]  # token-shaped words of the original
    # per text file, per piece: what the second pass needs (None: it plans that piece itself)
    plans: dict[Path, list[Plan | None]]


def is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return looks_binary(fh.read(8192))


def chunks(path: Path, size: int | None = None) -> Iterator[bytes]:
    """The file in pieces of about `size` bytes (CHUNK) ending at a newline, never inside a PEM
    block shorter than a piece (a key cut in two would match no pattern). A line longer than a
    piece makes its piece grow, up to LONG_LINE pieces, and is only then cut (after a blank, a
    comma or a brace, where no value is); the last piece is the rest of the file. What follows a
    cut is read again with the next piece (a seek back): a piece is copied at most once."""
    size = size or CHUNK
    with path.open("rb") as fh:
        block = fh.read(size)
        while block:
            if not fh.peek(1):
                yield block
                return
            cut = _cut(block, whole_lines=len(block) < LONG_LINE * size)
            if cut:
                yield block if cut == len(block) else block[:cut]
            fh.seek(cut - len(block), os.SEEK_CUR)
            block = fh.read(len(block) - cut + size)  # the rest and `size` more, as before


def spans(path: Path, size: int | None = None) -> Iterator[tuple[int, int]]:
    """Where `chunks` cuts the file, as (start, end) offsets, so that a worker process reads and
    studies each piece itself: the same cuts, told by the last bytes of each block (its last
    line end, a PEM block it opens there), read into one buffer; a block whose last bytes do
    not tell is read whole (a long line, a PEM block near the end)."""
    size = size or CHUNK
    buffer = bytearray()
    with path.open("rb", buffering=0) as fh:
        stop = os.fstat(fh.fileno()).st_size
        pos, want = 0, size
        while pos < stop:
            n = min(want, stop - pos)
            if pos + n >= stop:  # the last piece
                yield pos, stop
                return
            whole_lines = n < LONG_LINE * size
            tail = min(n, PEM_MAX + SPAN_TAIL)
            if read_into(fh, pos + n - tail, tail, buffer) < tail:
                return  # the file was cut short meanwhile
            cut = _cut_from_tail(buffer, n - tail)
            if cut is None:
                if read_into(fh, pos, n, buffer) < n:
                    return
                cut = _cut(buffer, whole_lines)
            if cut:
                yield pos, pos + cut
            pos, want = pos + cut, n - cut + size  # the rest and `size` more, as `chunks`


def pieces(path: Path, size: int | None = None) -> Iterator[bytes]:
    """The file's pieces as `chunks` cuts them; a regular file of more than one piece is read a
    piece at a time at the offsets `spans` finds, one copy from the page cache each: `chunks`
    copied each piece once more to cut it and read what follows the cut again, ~1.1 s of CPU
    per GB in the thread that prepares the second pass's pieces."""
    size = size or CHUNK
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_size <= size:
        yield from chunks(path, size)
        return
    with path.open("rb", buffering=0) as fh:
        for start, end in spans(path, size):
            piece = os.pread(fh.fileno(), end - start, start)
            if piece:
                yield piece
            if len(piece) < end - start:
                return  # the file was cut short meanwhile


def _cut_from_tail(tail: bytearray, offset: int) -> int | None:
    """`_cut` of a block from its last bytes (`tail`, at `offset` in it), or None when they do
    not tell: no line end in them, or not far enough in for the PEM search, or a PEM block whose
    line starts before them."""
    if offset == 0:
        return None
    cut = tail.rfind(b"\n") + 1
    if cut < PEM_MAX:
        return None
    begin = tail.rfind(PEM_BEGIN, cut - PEM_MAX, cut)
    if begin >= 0 and tail.find(PEM_END, begin, cut) < 0:
        line = tail.rfind(b"\n", 0, begin) + 1
        return offset + line if line > 0 else None
    return offset + _whole_blocks(tail, cut, cut - PEM_MAX)


def prepared(
    path: Path, prepare: Callable[[int, bytes], T], workers: int = 1
) -> Iterator[tuple[int, T]]:
    """`prepare(n, piece)` of each piece of the file, in order, read and prepared ahead by
    `workers` background threads (each reads the next piece in turn, then prepares it): the
    reading and the scans (Hyperscan and polars release the GIL) run while the caller's Python
    work on the piece before does. At most `workers` pieces are in flight and as many wait:
    memory stays flat."""
    numbered = enumerate(pieces(path))
    lock = threading.Lock()

    def task() -> tuple[int, T] | None:
        with lock:
            got = next(numbered, None)
        return None if got is None else (got[0], prepare(*got))

    ready: dict[int, T] = {}
    want = 0
    with ThreadPoolExecutor(workers, thread_name_prefix="hami-redact") as pool:
        running = {pool.submit(task) for _ in range(workers)}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                got = future.result()
                if got is not None:
                    ready[got[0]] = got[1]
                    running.add(pool.submit(task))
            while want in ready:
                yield want, ready.pop(want)
                want += 1


def _cut(block: bytes | bytearray, whole_lines: bool = True) -> int:
    """Where a piece ends: after its last newline (0: none, wait for more when `whole_lines`,
    else after the last blank, comma or brace), or before the line of a PEM block it opens near
    its end and does not close (unless that block started the piece: a "key" as big as a piece
    is no key).

    >>> _cut(b"a\\nb\\nc"), _cut(b"x=1 ip"), _cut(b'{"a": 1,"b"', False), _cut(b"a\\n-----BEGIN RSA KEY")
    (4, 0, 8, 2)
    """
    cut = block.rfind(b"\n") + 1
    if not cut and not whole_lines:
        cut = max(block.rfind(c) for c in (b" ", b"\t", b",", b"}")) + 1 or len(block)
    begin = block.rfind(PEM_BEGIN, max(0, cut - PEM_MAX), cut)
    if begin > 0 and block.find(PEM_END, begin, cut) < 0:
        line = block.rfind(b"\n", 0, begin) + 1
        if line > 0:
            return line
    return _whole_blocks(block, cut, max(0, cut - PEM_MAX))


def _whole_blocks(data: bytes | bytearray, cut: int, floor: int) -> int:
    """The cut (after a newline) moved back so that what a whole-text redactor reads across
    lines stays in one piece: before the line a base64 PEM blob wrapped over lines starts on,
    and before the last object that starts at the shallowest indentation any object starts at
    before the cut (a List's item, not a list nested in it; a document): a Secret's `data:` and
    its `kind` may be either side of a cut in it, and no piece then held both. Looked for back
    to `floor` (PEM_MAX before the cut, or the piece's start), on lines that start after it (the
    same lines whether the piece or only its last bytes are read: `spans` cuts where `chunks`
    does); where neither is found there, the cut stays (a block as big is no block)."""
    return min(_blob_start(data, cut, floor), _object_start(data, cut, floor))


def _object_start(data: bytes | bytearray, cut: int, floor: int) -> int:
    """The start of the outermost object the line after the cut is in: a document, or an
    object that starts less indented than that line (its members are more indented than it);
    the cut where none is (the line after it starts the next object, or is no member)."""
    shown = _INDENT.match(data, cut)  # the next line's indentation, if a character shows
    after = shown.end() if shown else cut
    deep = after - cut if after < len(data) else None
    best, depth = cut, -1  # one C search from `floor`'s newline on: ~1 ms a MiB of klog
    for m in _OBJECT_START.finditer(data, floor, cut):
        indent = len(m.group(1))
        if m.group(2) is None and deep is not None and indent >= deep:
            continue  # an object that ended before the line after the cut
        if depth < 0 or indent <= depth:
            best, depth = m.start() + 1, indent
    return best


def _blob_start(data: bytes | bytearray, cut: int, floor: int) -> int:
    prev = _line_before(data, cut)  # the last whole line before the cut
    if cut <= 0 or prev <= floor:
        return cut
    line = bytes(data[prev : cut - 1])
    if not (_B64_PEM.search(line) or _B64_LINE.fullmatch(line)):
        return cut
    head = prev  # back over the blob's wrapped lines, then to the line of its start
    while (before := _line_before(data, head)) > floor and _B64_LINE.fullmatch(
        data, before, head - 1
    ):
        head = before
    if not _B64_PEM.search(data, head, cut) and (before := _line_before(data, head)) > floor:
        head = before  # the blob's start and more on one line (`tls.key: LS0t...`)
    return head if head > floor and _B64_PEM.search(data, head, cut) else cut


def _line_before(data: bytes | bytearray, start: int) -> int:
    """Where the line before the one starting at `start` starts."""
    return data.rfind(b"\n", 0, max(start - 1, 0)) + 1


def text_sources(sources: list[SourceFile]) -> list[SourceFile]:
    return [s for s in sources if not is_binary(s.path)]


def discover(
    sources: list[SourceFile], redactors: list[Redactor], known: TokenMap | None = None
) -> Found:
    texts = text_sources(sources)
    learner = Learner(redactors)
    plans: dict[Path, list[Plan | None]] = {}
    parsed = [r for r in redactors if r.mode == "find" and r.parsed_nodes]
    parsed_names: Future[set[str]] | None = None
    progress = Progress("finding names", sum(s.path.stat().st_size for s in texts), "bytes")
    try:
        with ExitStack() as stack:
            teacher = _Teacher(learner)
            workers: Workers[Lesson | None] | None = None
            if any(s.path.stat().st_size >= FORK_MIN for s in texts):
                line_filter(teacher.prefilters, teacher.kept)  # compiled once, before the fork
                workers = stack.enter_context(Workers(teacher, SCANS))
                if parsed and workers.processes is not None:
                    # the analyzer's parsers read the small files meanwhile: this process only
                    # waits for its workers' lessons (started once they are forked: a thread
                    # running at a fork may hold a lock the child then waits for)
                    background = stack.enter_context(ThreadPoolExecutor(1))
                    parsed_names = background.submit(parsed_node_names, texts)
            for s in texts:
                pieces = plans[s.path] = []
                if workers is not None and s.path.stat().st_size >= FORK_MIN:
                    lessons = _taught(s, workers, learner)
                else:
                    study = partial(_study, learner, s.name)
                    lessons = (lesson for _, lesson in prepared(s.path, study, SCANS))
                for lesson in lessons:
                    pieces.append(learner.take(lesson))
                    progress.advance(lesson.size)
            found_nodes = parsed_names.result() if parsed_names is not None else None
    finally:
        progress.close()
    names = dict(learner.names)
    if parsed:
        if found_nodes is None:
            found_nodes = parsed_node_names(texts)
        for value in sorted(found_nodes):
            if not parsed[0].kept(value):
                names.setdefault(value, parsed[0].token)
    for value, prefix in (known.known() if known else {}).items():
        if len(value) >= _shortest(prefix, redactors):
            names.setdefault(value, prefix)
    return Found(names, frozenset(learner.reserved), plans)


def _study(learner: Learner, where: str, _n: int, raw: bytes) -> Lesson:
    return learner.prepare(raw, where)


class _Teacher:
    """A worker's first pass over one piece of a big file: read into the worker's own buffer,
    scanned by Hyperscan and studied (`Learner.lesson`), handing back only what it taught. None
    for a piece that is not plain ASCII in lines (or too small for Hyperscan): there polars
    selects lines, and a forked process must not run polars (see `parse.workers`); the caller
    studies such a piece itself."""

    def __init__(self, learner: Learner):
        self.learner = learner
        self.prefilters = tuple(learner.prefilters)
        self.kept = learner.kept
        self.parent = os.getpid()  # threads, where processes cannot be forked, may run polars

    def __call__(self, path: str, start: int, end: int, where: str) -> Lesson | None:
        forked = os.getpid() != self.parent
        if forked:  # a worker process maps its piece (`mapped.py`), the command reads it
            if not _WARM[0]:
                warm_up()  # a file cut short under the map kills this process quietly
                _WARM[0] = True
            piece = MappedPiece.of(path, start, end)
            if piece is not None:
                try:
                    if b"\r" not in piece:  # else read: its line ends are taken out of a copy
                        return self._study(piece, where, forked, crlf_checked=True)
                finally:
                    piece.close()
        buffer = thread_buffer(end - start)
        with open(path, "rb", buffering=0) as fh:
            if read_into(fh, start, end - start, buffer) != end - start:
                return None  # the file changed meanwhile: the caller reads what is there
        return self._study(buffer, where, forked)

    def _study(
        self, piece: bytearray | MappedPiece, where: str, forked: bool, crlf_checked: bool = False
    ) -> Lesson | None:
        """`crlf_checked`: the piece holds no carriage return (a search of it saved)."""
        if line_filter(self.prefilters, self.kept) is None:  # no Hyperscan (or numpy) here
            return None
        # read as bytes: the pass over plain lines only finds, slices and decodes the piece,
        # which a bytearray and a mapped piece do as bytes do, and Hyperscan and numpy read
        # either's memory (a copy would cost its page faults)
        raw = cast(bytes, piece)
        # a carriage return only before a newline is taken out (`Learner.prepare`): still plain
        if len(raw) < HYPERSCAN_MIN or not raw.isascii():
            return None
        if not crlf_checked and not only_crlf(raw):
            return None
        return self.learner.prepare(raw, where, plain=True, forked=forked)


def _taught(s: SourceFile, workers: Workers[Lesson | None], learner: Learner) -> Iterator[Lesson]:
    """The lessons of a big file's pieces, in order, each studied by a worker (`_Teacher`); a
    piece a worker hands back is studied here."""
    pending: deque[tuple[tuple, object]] = deque()

    def done() -> Lesson:
        args, future = pending.popleft()
        lesson = workers.result(args, future)  # type: ignore[arg-type]
        if lesson is None or lesson.deferred:
            _path, start, end, where = args
            with s.path.open("rb", buffering=0) as fh:
                raw = bytearray()
                read_into(fh, start, end - start, raw)
            if lesson is None:
                return learner.prepare(bytes(raw), where)
            return learner.complete(lesson, bytes(raw), where)
        return lesson

    for start, end in spans(s.path):
        args = (str(s.path), start, end, s.name)
        pending.append((args, workers.submit(*args)))
        while len(pending) > 2 * workers.workers:
            yield done()
    while pending:
        yield done()


def _shortest(prefix: str, redactors: list[Redactor]) -> float:
    """How long a value of an earlier run's map must be to be replaced everywhere in this one:
    a name (find) always; a value of an `everywhere` redactor as when it is found; the others
    (addresses, MACs) are matched where they are anyway."""
    modes = {r.mode for r in redactors if r.token == prefix and r.everywhere}
    return 1 if "find" in modes else MIN_EVERYWHERE if modes else float("inf")


def parsed_node_names(sources: list[SourceFile]) -> set[str]:
    """Node names as the analysis itself reads them (so every node it reports gets a token)."""
    from analyzer.bundle.recognise import SMALL_FILE, recognise
    from analyzer.catalogue.kinds import load_catalogue
    from analyzer.parse.registry import parse_artefact
    from analyzer.redact.redactors import builtin_file

    files = [BundleFile(s.name, s.path, s.path.stat().st_size, s.mtime) for s in sources]
    files = [f for f in files if f.size <= SMALL_FILE]  # a bigger one is only sniffed, as a log
    if not files:
        return set()
    catalogue = load_catalogue(builtin_file().with_name("kinds.yaml"))
    out: set[str] = set()
    artefacts, _warnings = recognise(files, catalogue)
    for a in artefacts:
        kind = catalogue.get(a.kind)
        if kind is None:
            continue
        for parser, parsed in parse_artefact(a, kind, only=("node", "pod")):
            attr = "name" if parser.into == "nodes" else "node"  # a node's name, a pod's node
            out.update(v for item in parsed.items if (v := getattr(item, attr)))
    return out
