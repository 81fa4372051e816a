"""The checks `collect` makes before its first kubectl call: names in the Kubernetes grammar (a
name is never taken for an option or a path), a duration kubectl accepts, and an output folder
that can really be written (a read-only or full filesystem fails here, not after minutes of
calls)."""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from pathlib import Path

from analyzer.bundle.text import printable
from analyzer.collect.collector import CollectError
from analyzer.collect.discover import is_name

_IMAGE_RE = re.compile(r"[\w][\w.:/@-]{0,254}")
_ARCHIVE_SUFFIX = re.compile(r"\.(?:tar\.gz|tgz)$", re.I)


def default_output() -> Path:
    return Path(f"hami-bundle-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}.tar.gz")


def default_map(output: Path) -> Path:
    """The token map beside the archive: `bundle.tar.gz` -> `bundle.map.json`.

    >>> default_map(Path("out/b.tar.gz")), default_map(Path("b.tgz")), default_map(Path("b"))
    (PosixPath('out/b.map.json'), PosixPath('b.map.json'), PosixPath('b.map.json'))
    """
    return output.with_name(_ARCHIVE_SUFFIX.sub("", output.name) + ".map.json")


def check_options(
    nodes: list[str],
    pods: list[str],
    since: str | None,
    redact: bool,
    redactors: list[Path] | None,
    map_file: Path | None,
    output: Path,
    debug_image: str,
) -> None:
    """Raise CollectError (one line) for the first bad option."""
    for node in nodes:
        if not is_name(node):
            raise CollectError(printable(f"--node {node!r}: not a Kubernetes node name"))
    for pod in pods:
        ns, _, name = pod.partition("/")
        if not (is_name(ns) and is_name(name)):
            raise CollectError(printable(f"--pod {pod!r}: expected NAMESPACE/NAME"))
    if since is not None and not re.fullmatch(r"(?:\d+[hms])+", since):
        raise CollectError(printable(f"--since {since!r}: expected a duration such as 2h or 90m"))
    if not _IMAGE_RE.fullmatch(debug_image):
        raise CollectError(printable(f"--debug-image {debug_image!r}: not an image reference"))
    if not redact and (redactors or map_file is not None):
        raise CollectError("--map and --redactors redact: drop --no-redact")
    for f in redactors or []:
        if not Path(f).is_file():
            raise CollectError(printable(f"--redactors {f}: no such file"))
    check_writable(output)
    if map_file is not None:
        check_writable(map_file)


def check_writable(path: Path) -> None:
    """A file can be created in the folder of `path` (and `path` is no folder)."""
    folder = path.parent
    if not folder.is_dir():
        raise CollectError(printable(f"cannot write {path}: no such directory {folder}"))
    if path.is_dir():
        raise CollectError(printable(f"cannot write {path}: it is a directory"))
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".hami-write-check-"):
            pass
    except OSError as exc:
        raise CollectError(printable(f"cannot write {path}: {exc.strerror or exc}")) from None
