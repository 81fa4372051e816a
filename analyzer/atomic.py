"""Files appear whole or not at all: written to a temporary file in the target's folder, renamed
into place. The temporary file is made as `tempfile.mkstemp` makes one (a random name, created
with O_EXCL, mode 0600), so in a shared folder nobody can plant a symlink or a file under its name
and have an output (a token map) follow it or land readable by others while it is written.

Temporary files and folders are named before they are made, and the name is in the hands of
whatever removes them before the system call that makes them: `mkstemp` and `mkdtemp` return the
name only once the file or folder exists, and a SIGTERM or Ctrl-C that Python raises in between
(its handlers run between any two bytecodes; a loaded machine often switches processes as a
system call returns) left one that nobody removed."""

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
    tmp = _beside(path)
    try:
        os.close(os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        yield tmp
        os.chmod(tmp, 0o600 if private else 0o666 & ~_umask())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """A new private folder (0700) beside `path` to fill; it becomes `path` (which must
    not exist, or be an empty folder) when the block ends without error, and is removed when it
    fails: a half-written copy is never mistaken for a finished one."""
    path = Path(path)
    tmp = _beside(path)
    try:
        os.mkdir(tmp, 0o700)
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def new_name(prefix: str, parent: Path | str | None = None, suffix: str = "") -> Path:
    """A name nothing has in `parent` (the temp folder by default): 128 random bits, so the file
    or folder made under it is this process's and may be removed on any failure, even before the
    call that makes it has returned (see the module's docstring)."""
    return Path(parent or tempfile.gettempdir()) / f"{prefix}{os.urandom(16).hex()}{suffix}"


def _beside(path: Path) -> Path:
    """A hidden temporary name in `path`'s folder, where a rename onto `path` is atomic."""
    return new_name(f".{path.name[:64]}.", path.parent, ".tmp")


@contextmanager
def private_folder(prefix: str) -> Iterator[Path]:
    """A new folder in the temp folder that only this user may enter (0700), removed when the
    block ends, however it ends (`tempfile.TemporaryDirectory` names it only once made)."""
    folder = new_name(prefix)
    try:
        os.mkdir(folder, 0o700)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_text(path: Path, text: str, *, private: bool = False) -> None:
    with atomic_path(path, private=private) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _umask() -> int:
    """The process umask (read by setting it: there is no other portable way)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
