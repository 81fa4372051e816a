"""What container a file's first bytes say it is: an archive (tar, zip) or a compressed stream
(gzip, bzip2, xz, zstd). The bundle reader opens inputs by it, whatever their names; the
command's start (`parse/scanstart.py`) asks it without importing the reader."""

from __future__ import annotations

SNIFF_BYTES = 262  # a tar header's magic ends there


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
