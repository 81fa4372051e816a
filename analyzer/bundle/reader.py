"""Turn the user's inputs (folders, archives, files, stdin) into files on disk, safely.

Archive members are copied into a private temporary folder under generated names, so no member
name ever becomes a path we write to; links and devices are never followed; member count and
uncompressed size are capped. Inputs are only ever opened for reading.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from analyzer.bundle.model import BundleFile, Inventory
from analyzer.errors import BundleError

COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Caps for archives and stdin; defaults fit real support bundles with room to spare."""

    max_members: int = 5000
    max_total_bytes: int = 4 << 30  # uncompressed bytes taken from archives/stdin/gzip
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
                f"uncompressed size exceeds {self.limits.max_total_bytes >> 20} MiB at member "
                f"{name!r} (possible archive bomb); raise --max-bytes if this bundle is genuine"
            )


def _sniff_container(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    if head.startswith(b"BZh") or head.startswith(b"\xfd7zXZ"):
        return "tar"  # tarfile's r:* handles bz2/xz compressed tars
    return None


_CORRUPT = (
    OSError,
    EOFError,
    zlib.error,
    tarfile.TarError,
    zipfile.BadZipFile,
    gzip.BadGzipFile,
)


def _read_head(path: Path, n: int = 512) -> bytes:
    with path.open("rb") as fh:
        return fh.read(n)


def _copy_limited(src: BinaryIO, dst: Path, budget: _Budget, name: str) -> int:
    total = 0
    with dst.open("wb") as out:
        while True:
            chunk = src.read(COPY_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            budget.add_bytes(len(chunk), name)
            out.write(chunk)
    return total


def printable_name(name: str) -> str:
    """A file name as text we can print anywhere: bytes that are not UTF-8 (kept by Python as
    surrogates) become U+FFFD and control characters become `?`.

    >>> printable_name("n\\udcf6de.yaml\\x1b[31m")
    'n\ufffdde.yaml?[31m'
    """
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return "".join("?" if ord(c) < 32 or 127 <= ord(c) < 160 else c for c in text)


def _safe_member_name(name: str) -> str:
    name = printable_name(name)
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and parts[0].endswith(":")):
        raise BundleError(f"unsafe archive member name {name!r} (absolute or '..' path)")
    return "/".join(p for p in parts if p not in ("", "."))


class BundleReader:
    """Collects BundleFiles from inputs; owns the temp folder for the life of the analysis."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.budget = _Budget(self.limits)
        self.tmp = Path(tempfile.mkdtemp(prefix="hami-bundle-"))
        self._counter = 0
        self.inventory = Inventory()

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _tmpfile(self) -> Path:
        self._counter += 1
        return self.tmp / f"m{self._counter:05d}"

    # ---- entry points -------------------------------------------------------------------
    def add_input(self, spec: str) -> None:
        if spec == "-":
            self._add_stream(sys.stdin.buffer, "<stdin>", None, depth=0)
            return
        path = Path(spec)
        if path.is_symlink() and not path.exists():
            raise BundleError(f"{spec}: broken symbolic link")
        if not path.exists():
            raise BundleError(f"{spec}: no such file or directory")
        if path.is_dir():
            self._add_dir(path)
        elif path.is_file():
            self._add_path(path, path.name, depth=0)
        else:
            raise BundleError(f"{spec}: not a regular file or directory")

    def add_bytes(self, name: str, data: bytes, kind: str | None = None) -> None:
        """For tests and the issue bot: a named in-memory file; `kind` declares what it is
        (the issue's own prose) instead of letting its content decide. Counted against the
        limits like an archive member: an issue's thousand fenced blocks are a thousand files."""
        self.budget.add_member(name)
        self.budget.add_bytes(len(data), name)
        dst = self._tmpfile()
        dst.write_bytes(data)
        self._register(dst, name, None, depth=0, declared_kind=kind)

    def add_local(self, path: Path, name: str, mtime: float | None) -> None:
        """A file already made safe on disk (a redacted copy), under its bundle name and time."""
        self._register(path, name, mtime, depth=self.limits.max_depth)

    # ---- internals ----------------------------------------------------------------------
    def _add_dir(self, root: Path) -> None:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for fname in sorted(filenames):
                p = Path(dirpath) / fname
                rel = printable_name(p.relative_to(root).as_posix())
                if p.is_symlink():
                    self.inventory.warnings.append(f"{rel}: symbolic link not followed")
                    continue
                if not p.is_file():
                    continue
                self._add_path(p, rel, depth=0)

    def _add_path(self, path: Path, name: str, depth: int) -> None:
        try:
            head = _read_head(path)
        except OSError as exc:
            self.inventory.warnings.append(f"{name}: unreadable ({exc.strerror or exc})")
            return
        self._register(path, name, path.stat().st_mtime, depth, head)

    def _add_stream(self, stream: BinaryIO, name: str, mtime: float | None, depth: int) -> None:
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
        head = head if head is not None else _read_head(path)
        kind = _sniff_container(head)
        if kind and depth >= self.limits.max_depth:
            self.inventory.warnings.append(f"{name}: archive nested too deep, not opened")
            kind = None
        try:
            if kind == "gzip":
                self._add_gzip(path, name, mtime, depth)
                return
            if kind == "zip":
                self._add_zip(path, name, depth)
                return
            if kind == "tar":
                self._add_tar(path, name, depth)
                return
        except BundleError:
            raise
        except _CORRUPT as exc:
            detail = " ".join(str(exc).split())[:200]
            problem = f"{name}: truncated or corrupt {kind} archive ({detail})"
            if depth == 0:  # the bundle itself: analysing part of it would mislead
                raise BundleError(f"{problem}; re-create or re-download it") from None
            self.inventory.warnings.append(problem)
            return
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

    def _add_gzip(self, path: Path, name: str, mtime: float | None, depth: int) -> None:
        """A gzip layer is a compression, not a nesting level: `x.log.gz` reads as `x.log`. A
        compressed tar is read in place, so its bytes count once, as its members."""
        with gzip.open(path, "rb") as src:
            if _sniff_container(src.read(512)) == "tar":
                self._add_tar(path, name, depth)
                return
        inner = name[:-3] if name.endswith(".gz") and not name.endswith(".tar.gz") else name
        dst = self._tmpfile()
        with gzip.open(path, "rb") as src:
            _copy_limited(src, dst, self.budget, name)
        if _sniff_container(_read_head(dst)) == "gzip":
            raise BundleError(f"{name}: gzip inside gzip (possible bomb)")
        self._register(dst, inner, mtime, depth)

    def _add_tar(self, path: Path, name: str, depth: int) -> None:
        with tarfile.open(path, mode="r:*") as tf:
            for member in tf:
                mname = _safe_member_name(member.name)
                display = f"{name}!{mname}"
                self.budget.add_member(display)
                if member.isdir():
                    continue
                if not member.isreg():
                    what = "link" if member.issym() or member.islnk() else "special file"
                    self.inventory.warnings.append(f"{display}: {what} member not followed")
                    continue
                src = tf.extractfile(member)
                if src is None:
                    continue
                dst = self._tmpfile()
                _copy_limited(src, dst, self.budget, display)
                self._register(dst, display, float(member.mtime) or None, depth + 1)

    def _add_zip(self, path: Path, name: str, depth: int) -> None:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                mname = _safe_member_name(info.filename)
                display = f"{name}!{mname}"
                self.budget.add_member(display)
                if info.is_dir():
                    continue
                mode = info.external_attr >> 16
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
                    self.inventory.warnings.append(
                        f"{display}: link or special member not followed"
                    )
                    continue
                if info.flag_bits & 0x1:
                    self.inventory.warnings.append(f"{display}: encrypted member skipped")
                    continue
                dst = self._tmpfile()
                try:
                    with zf.open(info) as src:
                        _copy_limited(src, dst, self.budget, display)
                except NotImplementedError:  # Deflate64 (Windows Explorer), LZMA variants...
                    self.inventory.warnings.append(
                        f"{display}: compression method {info.compress_type} not supported; "
                        "member skipped (re-create the archive with Deflate or as .tar.gz)"
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
    with path.open("rb") as fh:
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
