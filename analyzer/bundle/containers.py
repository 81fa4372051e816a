"""A file's first bytes, read only from a regular file, and what container they say it is: an
archive (tar, zip) or a compressed stream (gzip, bzip2, xz, zstd). The bundle reader opens
inputs by it, whatever their names; the command's start (`parse/scanstart.py`) asks it without
importing the reader."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from analyzer.bundle.text import printable_name
from analyzer.errors import BundleError

SNIFF_BYTES = 262  # a tar header's magic ends there


def open_regular(path: Path) -> BinaryIO:
    """Open a file for reading only if it is a regular file: a FIFO, a device or a socket is
    refused without blocking (the open does not wait for a writer; /dev/zero never ends)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BundleError(f"{printable_name(str(path))}: not a regular file or directory")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_head(path: Path, n: int = 512) -> bytes:
    with open_regular(path) as fh:
        return fh.read(n)


def sniff_container(head: bytes) -> str | None:
    """The archive or compressed stream these first bytes (SNIFF_BYTES of them) open, if any."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if len(head) >= SNIFF_BYTES and head[257:SNIFF_BYTES] == b"ustar":
        return "tar"
    if head.startswith(b"BZh") and head[3:4].isdigit() and head[3:4] != b"0":
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    return None
