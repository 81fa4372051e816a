"""Turn the user's inputs (folders, archives, files, stdin) into files on disk, safely.

Archive members are copied into a private temporary folder under generated names, so no member
name ever becomes a path we write to; links and devices are never followed; member count,
uncompressed size, member names, tar extended headers and line lengths are capped, and every
input (loose and folder files too) counts against the limits. Inputs are only ever opened for
reading, and only when they are regular files (a FIFO or /dev/zero would never end).
"""

from __future__ import annotations

import bz2
import errno
import hashlib
import io
import lzma
import os
import shutil
import stat
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Protocol

from analyzer import deflate
from analyzer.atomic import new_name
from analyzer.bundle.containers import open_regular, read_head, sniff_container
from analyzer.bundle.model import BundleFile, InputWarning, Inventory
from analyzer.bundle.text import printable_name
from analyzer.errors import BundleError

if TYPE_CHECKING:  # imported when an input is an archive (~2 ms of every start otherwise)
    import tarfile

COPY_CHUNK = 1 << 20
LINE_LIMIT = 1 << 20  # longer lines are cut to this many bytes (memory grows with the longest)
MAX_NAME = 4096  # characters of an archive member name (PATH_MAX)
# tar extended headers (pax `x`/`g`, Solaris `X`, GNU long names `L`/`K`) are parsed by tarfile
# in memory, with regexes that some Pythons run in quadratic time (CVE-2024-6232): each is
# bounded, their chains too, and so is the sum of their squared sizes over an archive
MAX_EXTENDED_HEADER = 16 << 10
MAX_EXTENDED_WORK = 1 << 29
MAX_EXTENDED_CHAIN = 8
XZ_MEMORY = 256 << 20  # what an xz stream may ask to decompress (its header can ask for GiBs)
# a compressed file that grows more than this many times (past the first 64 MiB) is a bomb:
# gzip cannot exceed 1,032, real logs stay far below; bzip2, xz and zstd reach millions
BOMB_RATIO = 2000
BOMB_FLOOR = 64 << 20
ZSTD_WINDOW = 1 << 27  # the same for a zstd frame's window
COMPRESSED_SUFFIXES = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz", "zstd": ".zst"}


@dataclass(frozen=True)
class Limits:
    """Caps for archives and stdin; defaults fit real support bundles with room to spare."""

    max_members: int = 5000
    max_total_bytes: int = 4 << 30  # uncompressed bytes of every input, loose files included
    max_depth: int = 2  # archives inside archives


class _Budget:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.members = 0
        self.bytes = 0

    def add_member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise BundleError(
                f"bundle has more than {self.limits.max_members} files (at {name!r}); "
                "raise --max-members if this bundle is genuine"
            )

    def add_bytes(self, n: int, name: str) -> None:
        self.bytes += n
        if self.bytes > self.limits.max_total_bytes:
            raise BundleError(
                f"uncompressed size exceeds {self.limits.max_total_bytes >> 20} MiB at "
                f"{name!r} (possible archive bomb); raise --max-bytes if this bundle is genuine"
            )


class _Unreadable(Exception):
    """A file we recognise but cannot read here (its message says why): an input error for the
    bundle itself, a warning for a file inside it."""


_CORRUPT: tuple[type[BaseException], ...] = (
    OSError,  # gzip's BadGzipFile is one
    EOFError,
    zlib.error,
    lzma.LZMAError,
    zipfile.BadZipFile,
)
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class _Readable(Protocol):
    """What copying a stream needs of it: a file, stdin, an archive member, a decompressor."""

    def read(self, size: int = ..., /) -> bytes: ...


def _copy_limited(src: _Readable, dst: Path, budget: _Budget, name: str) -> int:
    total = 0
    with _writing(dst, name) as out:
        while True:
            chunk = src.read(COPY_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            budget.add_bytes(len(chunk), name)
            out.write(chunk)
    return total


@contextmanager
def _writing(dst: Path, name: str) -> Iterator[BinaryIO]:
    """A file in our temporary folder; a full disk is said as such, not as a corrupt input."""
    try:
        with dst.open("wb") as out:
            yield out
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise BundleError(
                f"the temporary folder {dst.parent.parent} ran out of space while extracting "
                f"{name!r}; free space there or point TMPDIR at a larger folder"
            ) from None
        raise


def _safe_member_name(name: str) -> str:
    if len(name) > MAX_NAME:
        raise BundleError(
            f"archive member name of {len(name):,} characters (at most {MAX_NAME:,}): "
            f"{printable_name(name[:60])}..."
        )
    name = printable_name(name)
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and parts[0].endswith(":")):
        raise BundleError(f"unsafe archive member name {name!r} (absolute or '..' path)")
    return "/".join(p for p in parts if p not in ("", "."))


def _header_size(field: bytes) -> int:
    """The size field of a raw tar header: octal digits, or base-256 (GNU) with a leading 0x80;
    negative (0xff) or unreadable is -1."""
    if field[:1] == b"\x80":
        return int.from_bytes(field[1:], "big")
    if field[:1] == b"\xff":
        return -1
    digits = field.split(b"\0", 1)[0].strip()
    try:
        return int(digits or b"0", 8)
    except ValueError:
        return -1


def _guarded_tarinfo(label: str) -> type[tarfile.TarInfo]:
    """A TarInfo class that reads each raw 512-byte header before tarfile parses it, and refuses
    extended headers too large or too many for tarfile's parsers, whatever the Python."""
    import tarfile

    state = {"work": 0, "chain": 0}

    class _Guarded(tarfile.TarInfo):
        @classmethod
        def frombuf(cls, buf, encoding, errors):  # type: ignore[override]
            if len(buf) == tarfile.BLOCKSIZE and buf.count(0) != tarfile.BLOCKSIZE:
                size = _header_size(buf[124:136])
                if size < 0:
                    raise tarfile.InvalidHeaderError("bad size field")
                if buf[156:157] in (b"x", b"g", b"X", b"L", b"K"):
                    state["chain"] += 1
                    state["work"] += size * size
                    if size > MAX_EXTENDED_HEADER:
                        raise BundleError(
                            f"{label}: a tar extended header of {size:,} bytes (at most "
                            f"{MAX_EXTENDED_HEADER >> 10} KiB): refused, as a possible attack on "
                            "the tar reader (CVE-2024-6232)"
                        )
                    if state["chain"] > MAX_EXTENDED_CHAIN or state["work"] > MAX_EXTENDED_WORK:
                        raise BundleError(
                            f"{label}: too many tar extended headers in a row or in all: refused, "
                            "as a possible attack on the tar reader"
                        )
                else:
                    state["chain"] = 0
            return super().frombuf(buf, encoding, errors)

    return _Guarded


class _Decompressing(io.RawIOBase):
    """The bytes of a compressed file through a decompressor object (bz2, lzma or zstandard's
    decompressobj), concatenated streams included, so that limits such as xz's memory can be
    set and a stream cut short is an error. Output per call is bounded: bz2/lzma take a maximum
    length; zstd cannot, so it is fed `feed` bytes at a time (a zstd block expands 32,768 times
    at most)."""

    def __init__(self, raw: BinaryIO, factory: Callable[[], Any], feed: int = COPY_CHUNK):
        self._raw, self._factory, self._feed = raw, factory, feed
        self._d = factory()
        self._pending = memoryview(b"")
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending and not self._eof:
            self._pending = memoryview(self._next(len(buf)))
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _next(self, size: int) -> bytes:
        if self._d.eof:
            rest = self._d.unused_data or self._raw.read(self._feed)
            if not rest:
                self._eof = True
                return b""
            self._d = self._factory()
            return self._decompress(rest, size)
        needs = getattr(self._d, "needs_input", True)
        chunk = self._raw.read(self._feed) if needs else b""
        if needs and not chunk:
            raise EOFError("the compressed stream ends before its end marker")
        return self._decompress(chunk, size)

    def _decompress(self, data: bytes, size: int) -> bytes:
        if hasattr(self._d, "needs_input"):
            return self._d.decompress(data, size)
        return self._d.decompress(data)


class _RatioGuard(io.BufferedIOBase):
    """A decompressed stream that stops once it has grown BOMB_RATIO times its file. A read-only
    binary stream as tarfile's stream mode takes it (write and seek are unsupported)."""

    def __init__(self, stream: _Readable, compressed: int, fmt: str):
        super().__init__()
        self._stream, self._fmt = stream, fmt
        self._left = max(BOMB_FLOOR, BOMB_RATIO * compressed)

    def readable(self) -> bool:
        return True

    def read(self, n: int | None = -1, /) -> bytes:
        data = self._stream.read(-1 if n is None else n)
        self._left -= len(data)
        if self._left < 0:
            raise _Unreadable(
                f"{self._fmt} data that expands more than {BOMB_RATIO:,} times (a compression "
                "bomb?); not read"
            )
        return data


@contextmanager
def _decompressed(path: Path, fmt: str) -> Iterator[_RatioGuard]:
    """The decompressed bytes of a gzip, bzip2, xz or zstd file, as a stream (one that stops
    when it expands like a bomb)."""
    with open_regular(path) as raw:
        if fmt == "gzip":
            stream: io.BufferedIOBase = deflate.inflating(raw)
        elif fmt == "bzip2":
            stream = io.BufferedReader(_Decompressing(raw, bz2.BZ2Decompressor), COPY_CHUNK)
        elif fmt == "xz":
            make = lambda: lzma.LZMADecompressor(memlimit=XZ_MEMORY)  # noqa: E731
            stream = io.BufferedReader(_Decompressing(raw, make), COPY_CHUNK)
        else:
            stream = _zstd_stream(raw)
        try:
            yield _RatioGuard(stream, os.fstat(raw.fileno()).st_size, fmt)
        except lzma.LZMAError as exc:
            if "memory" in str(exc).lower():
                raise _Unreadable(
                    f"xz stream needs more than {XZ_MEMORY >> 20} MiB of memory to decompress"
                ) from None
            raise
        finally:
            stream.close()


def _zstd_stream(raw: BinaryIO) -> io.BufferedReader:
    try:
        import zstandard
    except ImportError:
        raise _Unreadable(
            "zstd-compressed: not read (pip install 'hami-bundle-analyzer[zstd]' to read it)"
        ) from None
    decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW)
    return io.BufferedReader(_Decompressing(raw, decompressor.decompressobj, 256), COPY_CHUNK)


def _on_demand_errors() -> tuple[type[BaseException], ...]:
    """The errors of the archive modules imported when an input needs them: none is raised
    before its module is imported."""
    tar, zstandard = sys.modules.get("tarfile"), sys.modules.get("zstandard")
    return (
        *((tar.TarError,) if tar is not None else ()),
        *((zstandard.ZstdError,) if zstandard is not None else ()),
        *deflate.errors(),
    )


def _long_lines(path: Path, size: int) -> list[tuple[int, int]]:
    """Byte spans (start, end) of the lines longer than LINE_LIMIT. Looks at one point per half
    limit (any longer line holds one whole window without a newline), so a file of short lines
    costs a few thousand small reads whatever its size; reads go through a small buffer, never
    a mapping of the whole file (whose pages would count as memory)."""
    if size <= LINE_LIMIT:
        return []
    spans: list[tuple[int, int]] = []
    step = LINE_LIMIT // 2
    with open_regular(path) as fh:
        fd = fh.fileno()
        at = 0
        while at < size:
            if _find_newline(fd, at, min(at + step, size)) != -1:
                at += step
                continue
            start = _rfind_newline(fd, at) + 1
            end = _find_newline(fd, at, size)
            end = size if end == -1 else end
            if end - start > LINE_LIMIT:
                spans.append((start, end))
            at = end + 1
    return spans


def _find_newline(fd: int, start: int, end: int) -> int:
    """Offset of the first newline in [start, end), or -1."""
    at, piece = start, 4096
    while at < end:
        data = os.pread(fd, min(piece, end - at), at)
        if not data:
            return -1
        i = data.find(b"\n")
        if i != -1:
            return at + i
        at += len(data)
        piece = min(piece * 4, COPY_CHUNK)
    return -1


def _rfind_newline(fd: int, before: int) -> int:
    """Offset of the last newline before `before`, or -1."""
    end, piece = before, 4096
    while end > 0:
        start = max(0, end - piece)
        i = os.pread(fd, end - start, start).rfind(b"\n")
        if i != -1:
            return start + i
        end = start
        piece = min(piece * 4, COPY_CHUNK)
    return -1


def _cut_copy(src: Path, dst: Path, spans: list[tuple[int, int]], name: str) -> int:
    """A copy of src with each long line cut to LINE_LIMIT bytes (at a character boundary);
    returns the 1-based line number of the first cut line."""
    with open_regular(src) as fh, _writing(dst, name) as out:
        fd = fh.fileno()
        first = 1
        for at in range(0, spans[0][0], COPY_CHUNK):
            first += os.pread(fd, min(COPY_CHUNK, spans[0][0] - at), at).count(b"\n")
        size = os.fstat(fd).st_size
        pos = 0
        for start, end in [*spans, (size, size)]:
            cut = min(start + LINE_LIMIT, end)
            if cut < end:  # not inside a UTF-8 character: step back over continuation bytes
                near = os.pread(fd, 4, cut - 3)[::-1]  # the byte at `cut` first
                cut -= next((k for k in range(3) if near[k] & 0xC0 != 0x80), 3)
            for at in range(pos, cut, COPY_CHUNK):
                out.write(os.pread(fd, min(COPY_CHUNK, cut - at), at))
            pos = end
    return first


class BundleReader:
    """Collects BundleFiles from inputs; owns the temp folder for the life of the analysis."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.budget = _Budget(self.limits)
        self._tmp: Path | None = None
        self._counter = 0
        self.inventory = Inventory()

    @property
    def tmp(self) -> Path:
        """The reader's private folder, made when something is first written there (a member
        extracted, a copy cut): a folder of plain files needs none, and works where TMPDIR is
        read-only."""
        if self._tmp is None:
            folder = self._tmp = new_name("hami-bundle-")  # `close` removes it from now on
            try:
                os.mkdir(folder, 0o700)
            except OSError as exc:
                self._tmp = None
                raise BundleError(
                    f"cannot create a temporary folder in {tempfile.gettempdir()}: "
                    f"{exc.strerror or exc}; point TMPDIR at a writable folder"
                ) from None
        return self._tmp

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _tmpfile(self) -> Path:
        self._counter += 1
        return self.tmp / f"m{self._counter:05d}"

    # ---- entry points -------------------------------------------------------------------
    def add_input(self, spec: str) -> None:
        if spec == "-":
            self._add_stream(sys.stdin.buffer, "<stdin>", None, depth=0)
            return
        path = Path(spec)
        shown = printable_name(spec)
        if path.is_symlink() and not path.exists():
            raise BundleError(f"{shown}: broken symbolic link")
        if not path.exists():
            raise BundleError(f"{shown}: no such file or directory")
        if path.is_dir():
            self._add_dir(path)
        elif path.is_file():
            self._add_path(path, printable_name(path.name), depth=0)
        else:
            raise BundleError(f"{shown}: not a regular file or directory")

    def add_bytes(self, name: str, data: bytes, kind: str | None = None) -> None:
        """For tests and the issue bot: a named in-memory file; `kind` declares what it is
        (the issue's own prose) instead of letting its content decide. Counted against the
        limits like an archive member: an issue's thousand fenced blocks are a thousand files."""
        self.budget.add_member(name)
        self.budget.add_bytes(len(data), name)
        dst = self._tmpfile()
        with _writing(dst, name) as out:
            out.write(data)
        self._register(dst, name, None, depth=0, declared_kind=kind)

    def add_local(self, path: Path, name: str, mtime: float | None) -> None:
        """A file already made safe on disk (a redacted copy), under its bundle name and time."""
        self._register(path, name, mtime, depth=self.limits.max_depth)

    # ---- internals ----------------------------------------------------------------------
    def _warn(self, name: str, what: str) -> None:
        """A file of the input not read, or not read whole: a warning naming it."""
        self.inventory.warnings.append(InputWarning.about("read", name, what))

    def _add_dir(self, root: Path) -> None:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for fname in sorted(filenames):
                p = Path(dirpath) / fname
                rel = printable_name(p.relative_to(root).as_posix())
                if p.is_symlink():
                    self._warn(rel, "symbolic link not followed")
                    continue
                if not p.is_file():
                    self._warn(rel, "not a regular file (a FIFO, device or socket); not read")
                    continue
                self._add_path(p, rel, depth=0)

    def _add_path(self, path: Path, name: str, depth: int) -> None:
        """A file of the user's: counted against the limits like an extracted one (an archive
        counts as its members)."""
        try:
            with open_regular(path) as fh:
                head = fh.read(512)
                size = os.fstat(fh.fileno()).st_size
        except OSError as exc:
            self._warn(name, f"unreadable ({exc.strerror or exc})")
            return
        if sniff_container(head) is None:
            self.budget.add_member(name)
            self.budget.add_bytes(size, name)
        self._register(path, name, path.stat().st_mtime, depth, head)

    def _add_stream(self, stream: _Readable, name: str, mtime: float | None, depth: int) -> None:
        dst = self._tmpfile()
        _copy_limited(stream, dst, self.budget, name)
        self._register(dst, name, mtime, depth)

    def _register(
        self,
        path: Path,
        name: str,
        mtime: float | None,
        depth: int,
        head: bytes | None = None,
        declared_kind: str | None = None,
    ) -> None:
        head = head if head is not None else read_head(path)
        kind = sniff_container(head)
        if kind and depth >= self.limits.max_depth:
            self._warn(name, "archive nested too deep, not opened")
            kind = None
        try:
            if kind == "zip":
                self._add_zip(path, name, depth)
                return
            if kind == "tar":
                with open_regular(path) as fh:
                    self._add_tar(fh, name, depth)
                return
            if kind is not None:
                self._add_compressed(path, name, mtime, depth, kind)
                return
        except BundleError:
            raise
        except _Unreadable as exc:
            if depth == 0:
                raise BundleError(f"{name}: {exc}") from None
            self._warn(name, str(exc))
            return
        except _CORRUPT + _on_demand_errors() as exc:
            detail = " ".join(str(exc).split())[:200]
            problem = f"truncated or corrupt {kind} archive ({detail})"
            if depth == 0:  # the bundle itself: analysing part of it would mislead
                raise BundleError(f"{name}: {problem}; re-create or re-download it") from None
            self._warn(name, problem)
            return
        path = self._bounded_lines(path, name)
        size = path.stat().st_size
        self.inventory.files.append(
            BundleFile(
                name=name,
                path=path,
                size=size,
                mtime=mtime,
                fingerprint=_fingerprint(path, size),
                declared_kind=declared_kind,
            )
        )

    def _bounded_lines(self, path: Path, name: str) -> Path:
        """The file, or a copy of it with lines longer than LINE_LIMIT cut (with a warning):
        every later stage holds whole lines in memory, a few times over."""
        spans = _long_lines(path, path.stat().st_size)
        if not spans:
            return path
        dst = self._tmpfile()
        first = _cut_copy(path, dst, spans, name)
        if path.parent == self.tmp:
            path.unlink()  # our own extracted copy: the cut one replaces it
        self._warn(
            name,
            f"{len(spans)} line(s) longer than {LINE_LIMIT >> 20} MiB cut to their "
            f"first {LINE_LIMIT >> 20} MiB (the first at line {first})",
        )
        return dst

    def _add_compressed(
        self, path: Path, name: str, mtime: float | None, depth: int, fmt: str
    ) -> None:
        """A compression layer is not a nesting level: `x.log.xz` reads as `x.log`. A compressed
        tar is read as a stream, so its bytes count once, as its members."""
        with _decompressed(path, fmt) as src:
            inner = sniff_container(src.read(512))
        if inner == "tar":
            with _decompressed(path, fmt) as src:
                self._add_tar(src, name, depth)
            return
        if inner in COMPRESSED_SUFFIXES:
            raise BundleError(f"{name}: {inner} inside {fmt} (possible bomb)")
        suffix = COMPRESSED_SUFFIXES[fmt]
        plain = name[: -len(suffix)] if name.endswith(suffix) and ".tar." not in name else name
        dst = self._tmpfile()
        with _decompressed(path, fmt) as src:
            _copy_limited(src, dst, self.budget, name)
        self._register(dst, plain, mtime, depth)

    def _add_tar(self, fileobj: IO[bytes] | _RatioGuard, name: str, depth: int) -> None:
        import tarfile

        guarded = _guarded_tarinfo(name)
        # read a MiB at a time: tarfile's own 10 KiB reads cost a 1 GB member 2 s of CPU
        with tarfile.open(fileobj=fileobj, mode="r|", tarinfo=guarded, bufsize=COPY_CHUNK) as tf:
            for member in tf:
                mname = _safe_member_name(member.name)
                display = f"{name}!{mname}"
                self.budget.add_member(display)
                if member.isdir():
                    continue
                if not member.isreg():
                    what = "link" if member.issym() or member.islnk() else "special file"
                    self._warn(display, f"{what} member not followed")
                    continue
                src = tf.extractfile(member)
                if src is None:
                    continue
                dst = self._tmpfile()
                _copy_limited(src, dst, self.budget, display)
                self._register(dst, display, float(member.mtime) or None, depth + 1)

    def _add_zip(self, path: Path, name: str, depth: int) -> None:
        with open_regular(path) as fh, zipfile.ZipFile(fh) as zf:
            for info in zf.infolist():
                mname = _safe_member_name(info.filename)
                display = f"{name}!{mname}"
                self.budget.add_member(display)
                if info.is_dir():
                    continue
                mode = info.external_attr >> 16
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
                    self._warn(display, "link or special member not followed")
                    continue
                if info.flag_bits & 0x1:
                    self._warn(display, "encrypted member skipped")
                    continue
                dst = self._tmpfile()
                try:
                    with zf.open(info) as src:
                        _copy_limited(src, dst, self.budget, display)
                except NotImplementedError:  # Deflate64 (Windows Explorer), LZMA variants...
                    self._warn(
                        display,
                        f"compression method {info.compress_type} not supported; "
                        "member skipped (re-create the archive with Deflate or as .tar.gz)",
                    )
                    continue
                ts = _zip_mtime(info)
                self._register(dst, display, ts, depth + 1)


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    import datetime as dt

    try:
        return dt.datetime(*info.date_time, tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


def _fingerprint(path: Path, size: int) -> str:
    """Content fingerprint without reading a huge file twice: size, first and last 64 KiB."""
    h = hashlib.sha256(str(size).encode())
    with open_regular(path) as fh:
        h.update(fh.read(1 << 16))
        if size > 1 << 17:
            fh.seek(size - (1 << 16))
        h.update(fh.read(1 << 16))
    return h.hexdigest()


@contextmanager
def open_bundle(inputs: list[str], limits: Limits | None = None) -> Iterator[BundleReader]:
    """Read all inputs as one bundle; the temp folder is removed on exit."""
    reader = BundleReader(limits)
    try:
        for spec in inputs:
            reader.add_input(spec)
        yield reader
    finally:
        reader.close()
