"""The byte scan's processes, forked as the `analyze` command starts when a bundle holds a file
too big to read whole (most likely a big log to scan): forked before the analysis's modules,
polars among them, are imported, they import what the scan needs (numpy and Hyperscan, ~55 ms
each) one after the other on the core the command's own imports leave idle; forked once the
scan starts, the command imported numpy itself first (~60 ms of a 1 GB log's ~1.5 s). A bundle
that needs no scan leaves them idle until the command ends. Imports nothing a small bundle's
analysis does not."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from analyzer.bundle.containers import SNIFF_BYTES, read_head, sniff_container
from analyzer.bundle.recognise import SMALL_FILE
from analyzer.errors import BundleError

SCAN_CHUNK = "analyzer.parse.bytescan:scan_chunk"  # what a scan process serves
LOOKED_AT = 500  # files and folder entries looked at for a big file (a bundle holds dozens)


def scan_workers() -> int:
    """Scan processes: one per core, at most four (more wait on the memory)."""
    return max(1, min(4, os.cpu_count() or 1))


def holds_big_file(inputs: Sequence[str]) -> bool | None:
    """True if an input is, or its folders hold, a file over SMALL_FILE among the first
    LOOKED_AT entries; False if none is and all were looked at; None where the sizes to come are
    not known here: a folder with more entries (not walked through), an archive or compressed
    file (a small .tgz may hold a big log), standard input or a pipe, an input that cannot be
    read (the command reports it itself)."""
    paths = [Path(x) for x in inputs]
    files = [path for path in paths if path.is_file()]
    folders = [path for path in paths if path.is_dir()]
    if len(files) + len(folders) < len(paths):
        return None
    entries = _entries(files, folders)
    regular: list[Path] = []
    try:
        for path, size in itertools.islice(entries, LOOKED_AT):
            if size > SMALL_FILE:
                return True
            if path is not None:
                regular.append(path)
        if next(entries, None) is not None:
            return None
        return None if any(map(_packed, regular)) else False
    except (OSError, BundleError):  # the command reports it itself
        return None


@contextlib.contextmanager
def scan_processes(start: bool) -> Iterator[None]:
    """The scan processes forked now if `start` (a big file to scan); ended on the way out if
    no scan took them."""
    if not start:
        yield
        return
    from analyzer.parse import workers  # multiprocessing: ~18 ms a small bundle does without

    with workers.prestarted(SCAN_CHUNK, scan_workers()):
        yield


def _entries(files: list[Path], folders: list[Path]) -> Iterator[tuple[Path | None, int]]:
    """The `files`, then each entry of the `folders` and the folders under them: its path if it
    is a regular file (else None) and its size (0 if not a regular file); symbolic links not
    followed."""
    yield from ((path, path.stat().st_size) for path in files)
    folders = list(folders)
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                if entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), entry.stat(follow_symlinks=False).st_size
                else:
                    yield None, 0


def _packed(path: Path) -> bool:
    """An archive or a compressed file, by its first bytes (as the bundle reader reads them: a
    file swapped for a FIFO meanwhile is refused, never waited on)."""
    return sniff_container(read_head(path, SNIFF_BYTES)) is not None
