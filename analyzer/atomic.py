"""Files appear whole or not at all: written to a temporary file in the target's folder, renamed
into place. The temporary file is made by `tempfile.mkstemp` (a random name, created with O_EXCL,
mode 0600), so in a shared folder nobody can plant a symlink or a file under its name and have an
output (a token map) follow it or land readable by others while it is written."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path, *, private: bool = False) -> Iterator[Path]:
    """A new empty temporary file beside `path` to write (by path or by `open`); it replaces
    `path` when the block ends without error and is removed when it fails, so a reader never
    sees half a file and a failure leaves nothing behind. The final file is 0600 when `private`
    (a token map: it undoes a redaction), else what a plain `open` would give (0666 less umask)."""
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o600 if private else 0o666 & ~_umask())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """A new private folder (mkdtemp: 0700) beside `path` to fill; it becomes `path` (which must
    not exist, or be an empty folder) when the block ends without error, and is removed when it
    fails: a half-written copy is never mistaken for a finished one."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: Path, text: str, *, private: bool = False) -> None:
    with atomic_path(path, private=private) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _umask() -> int:
    """The process umask (read by setting it: there is no other portable way)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
