"""Where `batch` reads bundles and writes tables: local paths, or fsspec URLs (`s3://`, `gs://`,
`file://`, `memory://`) so that workers read bundles where they are stored.

fsspec is imported only when a URL is given (it comes with the `[dask]` extra); local paths take
the plain `pathlib` road as before.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import IO, Any

from analyzer.atomic import private_folder
from analyzer.errors import AnalyzerError

ARCHIVE_SUFFIXES = (".tgz", ".zip", ".tar", ".gz")


def is_url(spec: str) -> bool:
    """An fsspec URL rather than a local path (which never holds `://`).

    >>> is_url("s3://bucket/tickets"), is_url("tickets/a.tgz"), is_url("C:/x")
    (True, False, False)
    """
    return "://" in spec


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:
        raise AnalyzerError(
            f"{url}: URLs need fsspec: pip install 'hami-bundle-analyzer[dask]'"
        ) from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # e.g. s3:// without s3fs installed
        raise AnalyzerError(f"{url}: {exc}") from None


def url_exists(url: str) -> bool:
    fs, root = _fs(url)
    return fs.exists(root)


def discover_url(url: str) -> list[str]:
    """A folder URL of tickets (each entry one bundle), a folder URL that is itself a bundle,
    or one bundle URL, as with local paths."""
    fs, root = _fs(url)
    if not fs.isdir(root):
        return [url]
    entries = [
        e
        for e in sorted(fs.ls(root, detail=True), key=lambda e: e["name"])
        if not posixpath.basename(e["name"].rstrip("/")).startswith(".")
    ]
    if entries and all(
        e["type"] == "file" and not e["name"].endswith(ARCHIVE_SUFFIXES) for e in entries
    ):
        return [url]
    return [fs.unstrip_protocol(e["name"].rstrip("/")) for e in entries]


def hash_files(files: Iterable[tuple[str, Callable[[], IO[bytes]]]]) -> str:
    """sha256 over each file's name and content, in the given order."""
    h = hashlib.sha256()
    for name, open_ in files:
        h.update(name.encode("utf-8", "surrogateescape"))  # a file name not in UTF-8 is bytes
        with open_() as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def url_digest(url: str) -> str:
    """Content digest of a bundle URL, read by whoever calls it (a Dask worker, near the data)."""
    fs, root = _fs(url)
    if fs.isdir(root):
        names = sorted(fs.find(root))
        return hash_files((posixpath.relpath(n, root), partial(fs.open, n, "rb")) for n in names)
    return hash_files([("", lambda: fs.open(root, "rb"))])  # an archive's bytes, not its name


@contextmanager
def local_copy(spec: str) -> Iterator[str]:
    """A local path for the bundle reader: a path or `file://` URL as is, anything else fetched
    into a temporary folder under its own name (an archive keeps its suffix), removed after."""
    if not is_url(spec):
        yield spec
        return
    fs, root = _fs(spec)
    if "file" in fs.protocol:
        yield root
        return
    with private_folder("hami-bundle-") as tmp:
        dest = os.path.join(tmp, posixpath.basename(root.rstrip("/")) or "bundle")
        fs.get(root, dest, recursive=fs.isdir(root))
        yield dest


class OutDir:
    """The output folder. A URL is mirrored through a local staging folder: existing parts are
    fetched first (resume), each new file is uploaded as soon as it is written, in order, so
    the store holds a part's bundles file only after its other files (see _PartWriter)."""

    def __init__(self, out: str):
        self.url = out if is_url(out) else None
        self.local = Path(tempfile.mkdtemp(prefix="hami-batch-out-")) if self.url else Path(out)
        self._fs: Any = None  # the store's file system (fsspec), for a URL only
        self._root = ""
        if self.url:
            self._fs, self._root = _fs(out)

    def __enter__(self) -> OutDir:
        try:
            (self.local / "parts").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AnalyzerError(f"{self.local}: cannot write here: {exc.strerror or exc}") from None
        parts = posixpath.join(self._root, "parts")
        if self._fs is not None and self._fs.isdir(parts):
            for name in self._fs.ls(parts, detail=False):
                if name.endswith(".parquet"):
                    self._fs.get(name, str(self.local / "parts" / posixpath.basename(name)))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.url:
            shutil.rmtree(self.local, ignore_errors=True)

    def clear_parts(self) -> None:
        """--force: the parts of earlier runs, here and in the store."""
        for f in (self.local / "parts").iterdir():
            f.unlink()
        parts = posixpath.join(self._root, "parts")
        if self._fs is not None and self._fs.exists(parts):
            self._fs.rm(parts, recursive=True)

    def push(self, files: list[Path]) -> None:
        """Upload files written under the staging folder (nothing to do for a local folder)."""
        if self._fs is None:
            return
        for f in files:
            target = posixpath.join(self._root, f.relative_to(self.local).as_posix())
            self._fs.makedirs(posixpath.dirname(target), exist_ok=True)
            self._fs.put_file(str(f), target)
