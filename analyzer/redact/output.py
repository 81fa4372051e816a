"""Where redacted files go, piece by piece: a folder, or a .tar.gz archive compressed while the
redaction runs.

The archive is a gzip stream of several members (RFC 1952 allows it; gzip, tar and Python read it
as one stream): each file's data is compressed, in a background thread, into its own member as
its pieces arrive, because its tar header (which holds its size) can only be written once the
file is done; the header then goes in a small member before the data. Compression (zlib level 1:
a log shrinks about fourfold) runs on the other core, so the archive costs little more than the
redaction itself, and memory stays at a few pieces. A folder's files are written by a
background thread too, while the next piece is redacted."""

from __future__ import annotations

import contextlib
import errno
import gzip
import mmap
import os
import queue
import shutil
import tarfile
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

# a redacted piece: its parts, written in order, or a function (no arguments) that makes them
# (called by the writer's thread: the last polars pass over a piece runs there, beside the next
# piece's redaction)
Parts = list[bytes] | Callable[[], list[bytes]]
Write = Callable[[Parts], None]
LEVEL = 1  # zlib level: 6 is 3.4x slower on a klog log for a fifth less size
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
            self.out.write(gzip.compress(bytes(self.pad) + header, LEVEL, mtime=0))
            member.seek(0)
            shutil.copyfileobj(member, self.out, 1 << 20)
            self.pad = -size % tarfile.BLOCKSIZE

    def __enter__(self) -> ArchiveSink:
        return self

    def __exit__(self, kind, *_) -> None:
        """The end of the archive: two zero blocks (after the last file's padding)."""
        self.scratch.cleanup()
        if kind is None:
            self.out.write(gzip.compress(bytes(self.pad + 2 * tarfile.BLOCKSIZE), LEVEL, mtime=0))


class _Writer:
    """A file written by two background threads, as one gzip member when `compress`: one makes
    each piece's parts (the last polars pass over it), the other compresses and writes them
    (zlib and writes release the GIL), so both run while the next piece is redacted. Apart,
    because a write copies the piece into the page cache, and on a VM whose free pages go back
    to the host that copy faults every fresh page in: it took as long as making the parts."""

    def __init__(self, out: BinaryIO, compress: bool, release: bool = False):
        self.compress = compress
        self.release = release
        self.size = 0
        self.error: BaseException | None = None
        self._queue: queue.Queue[Parts | None] = queue.Queue(QUEUED)
        self._made: queue.Queue[list[bytes] | None] = queue.Queue(1)
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
                    self._made.put(parts(piece))
                except Exception as exc:  # raised by `put` or `finish`, in the caller's thread
                    self.error = exc
        self._made.put(None)

    def _write(self, out: BinaryIO) -> None:
        z = zlib.compressobj(LEVEL, zlib.DEFLATED, 31) if self.compress else None  # 31: gzip
        sink: BinaryIO | _Direct = out
        if self.release:
            with contextlib.suppress(OSError, ValueError):  # not a file, or no direct writes
                sink = _Direct(out)
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
            if isinstance(sink, _Direct):
                sink.close()
        except OSError as exc:
            self.error = self.error or exc


class _Direct:
    """A big output file written around the page cache (`O_DIRECT`): the user's copy, which this
    run never reads back. A write through the cache copies every byte into it, and on a VM whose
    free pages go back to the host that copy faults each page in first: 1 GB cost 0.2-1.8 s of
    the kernel's CPU (up to 9.6 s in the coldest hour), beside the redaction's own two cores; a
    direct write costs ~0.1 s (docs/performance.md, the thirty-second round). The pieces are
    copied into one page-aligned buffer of DIRECT_BUFFER bytes, written whole when full; the
    last bytes (under a block, or the whole of a smaller file) go through the cache at the end.

    Back to the cache for the rest of the file (`direct` False) when the disk refuses direct
    writes (EINVAL: tmpfs, some FUSE) or falls behind: once the writer has spent DIRECT_BUSY
    times longer in direct writes than between them, the disk, not the redaction, sets the
    pace, and the cache absorbs what a slow disk cannot take yet (here, 1 GB: 0.67 s writing,
    0.73 s between). Linux only (no `O_DIRECT` elsewhere)."""

    def __init__(self, out: BinaryIO):
        if O_DIRECT is None:
            raise OSError("no O_DIRECT here")
        import fcntl  # Unix's, as O_DIRECT

        out.flush()
        self.fd = out.fileno()
        if os.lseek(self.fd, 0, os.SEEK_CUR) % DIRECT_ALIGN:
            raise OSError("not at a block's start")
        self.buffer = mmap.mmap(-1, DIRECT_BUFFER)  # page-aligned, as direct writes need
        self.view = memoryview(self.buffer)
        self.flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        try:
            fcntl.fcntl(self.fd, fcntl.F_SETFL, self.flags | O_DIRECT)  # refused: EINVAL
        except OSError:
            self.view.release()
            self.buffer.close()
            raise
        self.direct = True
        self.fill = 0
        self.done = 0  # bytes written directly
        self.writing = self.waiting = 0.0  # seconds spent in direct writes, and between them
        self.since = time.monotonic()

    def write(self, data: bytes) -> None:
        if not self.direct:
            _write_all(self.fd, data)
            return
        data_view = memoryview(data)
        pos = 0
        while pos < len(data_view) and self.direct:
            n = min(DIRECT_BUFFER - self.fill, len(data_view) - pos)
            self.view[self.fill : self.fill + n] = data_view[pos : pos + n]
            self.fill, pos = self.fill + n, pos + n
            if self.fill == DIRECT_BUFFER:
                self._flush()
        if pos < len(data_view):  # direct writes stopped meanwhile
            _write_all(self.fd, data_view[pos:])

    def close(self) -> None:
        """The buffered bytes written (the last block through the cache), the file as it was."""
        try:
            if self.direct and self.done:  # a file smaller than the buffer: the cache's
                self._flush()
            self._buffered()
        finally:
            self.view.release()
            self.buffer.close()

    def _flush(self) -> None:
        """The buffer's whole blocks written directly (its last, partial, block kept)."""
        whole = self.fill - self.fill % DIRECT_ALIGN
        started = time.monotonic()
        self.waiting += started - self.since
        try:
            _write_all(self.fd, self.view[:whole])
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            self._buffered()  # refused: the same bytes through the cache
            return
        self.since = time.monotonic()
        self.writing += self.since - started
        self.done += whole
        rest = self.fill - whole
        self.view[:rest] = self.view[whole : self.fill]
        self.fill = rest
        if self.writing > DIRECT_BUSY * self.waiting:  # the disk falls behind the redaction
            self._buffered()

    def _buffered(self) -> None:
        """From here on through the cache: the flag off, the buffer's bytes written."""
        if self.direct:
            import fcntl

            fcntl.fcntl(self.fd, fcntl.F_SETFL, self.flags)
            self.direct = False
        _write_all(self.fd, self.view[: self.fill])
        self.fill = 0


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """All of `data` written (a write may take less than it is given)."""
    view = memoryview(data)
    while len(view):
        view = view[os.write(fd, view) :]


O_DIRECT: int | None = getattr(os, "O_DIRECT", None)
DIRECT_ALIGN = 4096  # a direct write's offset and length are whole blocks (4 KiB covers 512 B)
DIRECT_BUFFER = 16 << 20  # bytes written at once: a piece
DIRECT_BUSY = 2  # direct writes stop once they took this many times the time between them


def parts(piece: Parts) -> list[bytes]:
    """A piece's parts, made when the redaction left that to the writer."""
    return piece() if callable(piece) else piece
