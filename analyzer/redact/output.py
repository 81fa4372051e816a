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
import ctypes
import gzip
import os
import queue
import shutil
import sys
import tarfile
import tempfile
import threading
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
    `release`: the copy is for the user, not read back by this run: a big file's written pieces
    leave the page cache (see `_Released`)."""

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
        released = None
        if self.release:
            with contextlib.suppress(OSError, ValueError):  # not a file: nothing to release
                released = _Released(out)
        while (made := self._made.get()) is not None:
            if self.error is None:
                try:
                    self.size += sum(map(len, made))
                    for data in made:
                        out.write(z.compress(data) if z is not None else data)
                    if released is not None:
                        released.written(self.size)
                except Exception as exc:
                    self.error = exc
        if self.error is None and z is not None:
            try:
                out.write(z.flush())
            except OSError as exc:
                self.error = exc


class _Released:
    """A big output file whose written pieces leave the page cache: each piece's writeback is
    started once it is written, and the piece written RELEASE_LAG pieces before, by then on
    disk, is dropped from the cache (`posix_fadvise`, DONTNEED); the first RELEASE_KEEP stay.
    The dropped pages go back to the free list, where the next pieces' writes find them. A
    write into fresh pages pays for their first touch: on a VM whose free pages go back to the
    host, 1 GB written through cost 2.8-3.0 s of the kernel's CPU, and 1.0 s so
    (docs/performance.md, the twenty-second round). The copy is then read back from disk, not
    from the cache: for the user's copy only, never for one this run reads again. Linux only;
    advice that fails is ignored (it is advice)."""

    def __init__(self, out: BinaryIO):
        self.fd = out.fileno()
        self.out = out
        self.ends: list[int] = [0]  # where each written piece ends

    def written(self, end: int) -> None:
        """The file's first `end` bytes are written (one more piece)."""
        self.ends.append(end)
        piece = len(self.ends) - 1  # pieces written; the n-th spans ends[n - 1]:ends[n]
        if _sync_file_range is None or piece <= RELEASE_KEEP:
            return
        self.out.flush()
        _sync_file_range(self.fd, self.ends[-2], end - self.ends[-2], SYNC_FILE_RANGE_WRITE)
        old = piece - RELEASE_LAG
        if old > RELEASE_KEEP:
            start, stop = self.ends[old - 1], self.ends[old]
            with contextlib.suppress(OSError):
                os.posix_fadvise(self.fd, start, stop - start, os.POSIX_FADV_DONTNEED)


def _libc_sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """`sync_file_range(2)` (Linux), which Python's `os` lacks; None elsewhere."""
    if not sys.platform.startswith("linux") or not hasattr(os, "posix_fadvise"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


SYNC_FILE_RANGE_WRITE = 2  # start the writeback of dirty pages, without waiting
RELEASE_LAG = 3  # pieces written since, when a piece is dropped from the cache (then on disk)
RELEASE_KEEP = 3  # a file's first pieces, left as written: a file of a few stays as it is
_sync_file_range = _libc_sync_file_range()


def parts(piece: Parts) -> list[bytes]:
    """A piece's parts, made when the redaction left that to the writer."""
    return piece() if callable(piece) else piece
