"""What identifies the installed code: the key of what is cached from it (the validated rule set).
Worked out once per process."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@functools.cache
def code_digest() -> tuple[str, bool]:
    """The digest of the code, and whether it is an installed wheel's. A wheel: its RECORD, which
    holds the digest of every file it installed (its rules, analyzer/_rules, too), so a
    reinstall of the same wheel keeps what is cached. A checkout or an editable install: every
    module's path, size and time (hashing their content would cost a small run more than the
    cache saves), which change with any edit. OSError when the package cannot be read."""
    h = hashlib.sha256()
    for record in PACKAGE.parent.glob("hami_bundle_analyzer-*.dist-info/RECORD"):
        with contextlib.suppress(OSError):
            text = record.read_bytes()
            if b"analyzer/rules/loader.py," in text:
                h.update(text)
                return h.hexdigest(), True
    for top, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            st = os.stat(os.path.join(top, name))
            h.update(f"{top}/{name}:{st.st_mtime_ns}:{st.st_size}".encode())
    return h.hexdigest(), False
