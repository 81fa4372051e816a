"""Where redacted files go, piece by piece: a folder, or a .tar.gz archive compressed while the
redaction runs.

The archive is a gzip stream of several members (RFC 1952 allows it; gzip, tar and Python read it
as one stream): each file's data is compressed, in a background thread, into its own member as
its pieces arrive, because its tar header (which holds its size) can only be written once the
file is done; the header then goes in a small member before the data. Compression (ISA-L's level
1, `analyzer.deflate`: a log shrinks about fourfold) runs on the other core, so the archive costs
little more than the redaction itself, and memory stays at a few pieces. A folder's files are
written by a background thread too, while the next piece is redacted."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import queue
import shutil
import tarfile
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

from analyzer import deflate

try:
    import fcntl  # Unix's: O_DIRECT is set with it
except ImportError:  # pragma: no cover - Windows, which has no O_DIRECT either
    fcntl = None  # type: ignore[assignment]

# a redacted piece: its parts, written in order, or a function (no arguments) that makes them
# (called by the writer's thread: the last polars pass over a piece runs there, beside the next
# piece's redaction)
Parts = list[bytes] | Callable[[], list[bytes]]
Write = Callable[[Parts], None]
QUEUED = 2  # pieces waiting for the writer (or compressor): bounds memory


class Sink(Protocol):
    def file(self, rel: str, mtime: float | None) -> AbstractContextManager[Write]: ...


class FolderSink:
    """Files under `root` (a private folder: its creator makes it 0700 or renames it later).
    `release`: the copy is for the user, not read back by this run: a big file is written around
    the page cache (see `_Direct`)."""

    def __init__(self, root: Path, release: bool = False):
        self.root = root
        self.release = release

    @contextmanager
    def file(self, rel: str, mtime: float | None) -> Iterator[Write]:
        out = self.root / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as fh:
            # written while the next piece is redacted
            writer = _Writer(fh, compress=False, release=self.release)
            try:
                yield writer.put
            finally:
                writer.finish()
        if mtime is not None:
            os.utime(out, (mtime, mtime))


class ArchiveSink:
    """A .tar.gz written to the open file `out` (see the module's docstring), ended when its
    `with` block ends without error."""

    def __init__(self, out: BinaryIO):
        self.out = out
        self.pad = 0  # zero bytes owed after the previous file's data (a tar block is 512)
        self.scratch = tempfile.TemporaryDirectory(prefix="hami-archive-")

    @contextmanager
    def file(self, rel: str, mtime: float | None) -> Iterator[Write]:
        data = Path(self.scratch.name) / "data.gz"
        with data.open("w+b") as member:
            writer = _Writer(member, compress=True)
            try:
                yield writer.put
            finally:
                size = writer.finish()
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = size, int(mtime or 0), 0o644
            header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
            self.out.write(deflate.compressed(bytes(self.pad) + header))
            member.seek(0)
            shutil.copyfileobj(member, self.out, 1 << 20)
            self.pad = -size % tarfile.BLOCKSIZE

    def __enter__(self) -> ArchiveSink:
        return self

    def __exit__(self, kind, *_) -> None:
        """The end of the archive: two zero blocks (after the last file's padding)."""
        self.scratch.cleanup()
        if kind is None:
            self.out.write(deflate.compressed(bytes(self.pad + 2 * tarfile.BLOCKSIZE)))


class _Writer:
    """A file written by two background threads, as one gzip member when `compress`: one makes
    each piece's parts (the last polars pass over it), the other compresses and writes them
    (compression and writes release the GIL), so both run while the next piece is redacted.
    Apart, because a write copies the piece into the page cache, and on a VM whose free pages go
    back to the host that copy faults every fresh page in: it took as long as making the parts."""

    def __init__(self, out: BinaryIO, compress: bool, release: bool = False):
        self.compress = compress
        self.release = release
        self.size = 0
        self.error: BaseException | None = None
        self._queue: queue.Queue[Parts | None] = queue.Queue(QUEUED)
        self._made: queue.Queue[list[bytes] | None] = queue.Queue(1)
        self.held = 0.0  # seconds the maker waited for the writer (`_Direct`)
        self._threads = [
            threading.Thread(target=self._make, daemon=True),
            threading.Thread(target=self._write, args=(out,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def put(self, piece: Parts) -> None:
        if self.error is not None:
            raise self.error
        self._queue.put(piece)

    def finish(self) -> int:
        self._queue.put(None)
        for thread in self._threads:
            thread.join()
        if self.error is not None:
            raise self.error
        return self.size

    def _make(self) -> None:
        while (piece := self._queue.get()) is not None:
            if self.error is None:
                try:
                    made = parts(piece)
                except Exception as exc:  # raised by `put` or `finish`, in the caller's thread
                    self.error = exc
                    continue
                waited = time.monotonic()
                self._made.put(made)
                self.held += time.monotonic() - waited
        self._made.put(None)

    def _write(self, out: BinaryIO) -> None:
        z = deflate.compressor() if self.compress else None
        sink: BinaryIO | _Direct = out
        if self.release:
            with contextlib.suppress(OSError, ValueError):  # not a file, or not at its start
                sink = _Direct(out, lambda: self.held)
        while (made := self._made.get()) is not None:
            if self.error is None:
                try:
                    self.size += sum(map(len, made))
                    for data in made:
                        sink.write(z.compress(data) if z is not None else data)
                except Exception as exc:
                    self.error = exc
        try:
            if self.error is None and z is not None:
                sink.write(z.flush())
        except Exception as exc:
            self.error = exc
        if isinstance(sink, _Direct):
            try:
                sink.close(write=self.error is None)
            except Exception as exc:
                self.error = self.error or exc


class _Direct:
    """A big output file written around the page cache (`O_DIRECT`): the user's copy, which this
    run never reads back. A write through the cache copies every byte into it, and on a VM whose
    free pages go back to the host that copy faults each page in first: 1 GB cost 0.2-1.8 s of
    the kernel's CPU (up to 9.6 s in the coldest hour), beside the redaction's own two cores; a
    direct write costs ~0.1 s (docs/performance.md, the thirty-second round).

    The parts are held as they come until they fill DIRECT_BUFFER bytes (a smaller file goes
    through the cache whole, never copied); from then on they are copied into one page-aligned
    buffer, written whole when full, and the last bytes (under a block) go through the cache at
    the end. Back to the cache for the rest of the file when the disk refuses direct writes
    (EINVAL: some FUSE, tmpfs before Linux 6.6) or holds the redaction up: when the pieces'
    maker waited for this writer over half the time of the last DIRECT_WINDOW buffers, the
    disk sets the pace, and the cache absorbs what it cannot take yet. Linux only."""

    def __init__(self, out: BinaryIO, held: Callable[[], float]):
        if O_DIRECT is None or fcntl is None:
            raise OSError("no O_DIRECT here")
        out.flush()
        self.fd = out.fileno()
        if os.lseek(self.fd, 0, os.SEEK_CUR) % DIRECT_ALIGN:
            raise OSError("not at a block's start")
        self.held = held  # seconds the maker has waited for this writer so far
        self.pending: list[bytes] = []  # parts held until they fill a buffer
        self.pending_size = 0
        self.buffer: mmap.mmap | None = None
        self.view = memoryview(b"")
        self.fill = 0
        self.flags: int | None = None  # the file's flags before O_DIRECT, while it is set
        self.cached = False  # through the cache for good
        self.flushes: deque[tuple[float, float]] = deque(maxlen=DIRECT_WINDOW + 1)

    def write(self, data: bytes) -> None:
        if self.cached:
            _write_all(self.fd, data)
        elif self.buffer is None:
            self.pending.append(data)
            self.pending_size += len(data)
            if self.pending_size >= DIRECT_BUFFER:
                self._start()
        else:
            self._copy(data)

    def close(self, write: bool = True) -> None:
        """The rest written (`write`; not after an error): the buffer's whole blocks directly,
        its last bytes and a small file's parts through the cache."""
        try:
            if write:
                if self.fill:
                    self._flush()
                self._cache()
        finally:
            self.view.release()
            if self.buffer is not None:
                # a failed write's traceback may still hold a slice of it: freed with that
                with contextlib.suppress(BufferError):
                    self.buffer.close()

    def _start(self) -> None:
        """O_DIRECT set and the held parts copied into the buffer, or the cache's for good."""
        assert O_DIRECT is not None and fcntl is not None
        try:
            flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
            fcntl.fcntl(self.fd, fcntl.F_SETFL, flags | O_DIRECT)
        except OSError:  # refused
            self._cache()
            return
        self.flags = flags
        self.buffer = mmap.mmap(-1, DIRECT_BUFFER)  # page-aligned, as direct writes need
        self.view = memoryview(self.buffer)
        pending, self.pending, self.pending_size = self.pending, [], 0
        for data in pending:
            self._copy(data)

    def _copy(self, data: bytes) -> None:
        """`data` into the buffer, written whenever it is full."""
        data_view = memoryview(data)
        pos = 0
        while pos < len(data_view) and not self.cached:
            n = min(DIRECT_BUFFER - self.fill, len(data_view) - pos)
            self.view[self.fill : self.fill + n] = data_view[pos : pos + n]
            self.fill, pos = self.fill + n, pos + n
            if self.fill == DIRECT_BUFFER:
                self._flush()
        if pos < len(data_view):  # back to the cache meanwhile
            _write_all(self.fd, data_view[pos:])

    def _flush(self) -> None:
        """The buffer's whole blocks written directly (its last, partial, block kept)."""
        whole = self.fill - self.fill % DIRECT_ALIGN
        written = 0
        try:
            while written < whole:
                written += os.write(self.fd, self.view[written:whole])
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            self._cache(written)  # refused: the rest through the cache
            return
        self.view[: self.fill - whole] = self.view[whole : self.fill]
        self.fill -= whole
        now, held = time.monotonic(), self.held()
        self.flushes.append((now, held))
        then, held_then = self.flushes[0]
        if len(self.flushes) > DIRECT_WINDOW and held - held_then > (now - then) / 2:
            self._cache()  # the disk holds the redaction up

    def _cache(self, written: int = 0) -> None:
        """From here on through the cache: the flag off, then what waits written (the parts
        held, or the buffer from `written` on)."""
        if self.flags is not None:
            fcntl.fcntl(self.fd, fcntl.F_SETFL, self.flags)
            self.flags = None
        self.cached = True
        for data in self.pending:
            _write_all(self.fd, data)
        self.pending, self.pending_size = [], 0
        _write_all(self.fd, self.view[written : self.fill])
        self.fill = 0


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """All of `data` written (a write may take less than it is given)."""
    view = memoryview(data)
    while len(view):
        view = view[os.write(fd, view) :]


O_DIRECT: int | None = getattr(os, "O_DIRECT", None)
DIRECT_ALIGN = 4096  # a direct write's offset and length are whole blocks (4 KiB covers 512 B)
DIRECT_BUFFER = 16 << 20  # bytes written at once: a piece
DIRECT_WINDOW = 4  # buffers over which the maker's waiting is judged


def parts(piece: Parts) -> list[bytes]:
    """A piece's parts, made when the redaction left that to the writer."""
    return piece() if callable(piece) else piece
