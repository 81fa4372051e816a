"""gzip streams through ISA-L where python-isal has a wheel, else through the standard library's
zlib: the same streams either way, only faster. A 1 GB log in a .tar.gz is inflated 2.2 times as
fast (2.1 against 4.7 s), on a thread of its own while the caller parses the tar and copies its
members; a redacted archive is deflated 4.5 times as fast as zlib's level 1, into a smaller file
(docs/performance.md, "The thirty-fifth round"). isal is imported when a gzip stream is met,
never at start-up."""

from __future__ import annotations

import io
import sys
import zlib
from typing import Any, BinaryIO

ZLIB_LEVEL = 1  # where isal is missing: zlib's 6 is 3.4x slower on a klog log for a fifth less size
# ISA-L's level (0-3): 1 deflates a redacted klog log at ~340 MB/s to a 3.9th of its size, zlib's
# level 1 at ~80 MB/s to a 3.6th; 3 gains 4 % for 1.7x the time
ISAL_LEVEL = 1
GZIP_WBITS = 31  # a gzip member (header and trailer) rather than a raw or zlib stream


def inflating(raw: BinaryIO) -> io.BufferedIOBase:
    """The decompressed bytes of the gzip stream `raw` (members one after another included),
    inflated ahead by a thread of its own (python-isal's `igzip_threaded`: at most two blocks of
    a MiB wait)."""
    try:
        from isal import igzip_threaded
    except ImportError:
        import gzip

        return gzip.GzipFile(fileobj=raw, mode="rb")
    return igzip_threaded.open(raw, "rb", threads=1)


def compressor() -> Any:
    """A compressor object (`compress`, `flush`) that writes one gzip member."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib.compressobj(ZLIB_LEVEL, zlib.DEFLATED, GZIP_WBITS)
    return isal_zlib.compressobj(ISAL_LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)


def compressed(data: bytes) -> bytes:
    """`data` as one gzip member."""
    z = compressor()
    return z.compress(data) + z.flush()


def errors() -> tuple[type[BaseException], ...]:
    """What a corrupt stream raises beyond the standard library's errors (EOFError, OSError,
    zlib.error): ISA-L's own error, once it is imported."""
    isal = sys.modules.get("isal.isal_zlib")
    return (isal.error,) if isal is not None else ()
