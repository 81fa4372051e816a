"""The byte scan's processes, forked as the `analyze` command starts when a bundle holds a file
too big to read whole (most likely a big log to scan): forked before the analysis's modules,
polars among them, are imported, they import what the scan needs (numpy and Hyperscan, ~55 ms
each) one after the other on the core the command's own imports leave idle; forked once the
scan starts, the command imported numpy itself first (~60 ms of a 1 GB log's ~1.5 s). A bundle
that needs no scan leaves them idle until the command ends. Imports nothing a small bundle's
analysis does not."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from analyzer.bundle.recognise import SMALL_FILE

SCAN_CHUNK = "analyzer.parse.bytescan:scan_chunk"  # what a scan process serves
LOOKED_AT = 500  # folder entries looked at for a big file (a bundle holds a few dozen)


def scan_workers() -> int:
    """Scan processes: one per core, at most four (more wait on the memory)."""
    return max(1, min(4, os.cpu_count() or 1))


@contextlib.contextmanager
def scan_processes(inputs: Sequence[str]) -> Iterator[None]:
    """The scan processes forked now if an input is, or its folder holds, a file over
    SMALL_FILE; ended on the way out if no scan took them."""
    budget = [LOOKED_AT]
    if not any(_holds_big_file(Path(x), budget) for x in inputs):
        yield
        return
    from analyzer.parse import workers  # multiprocessing: ~18 ms a small bundle does without

    with workers.prestarted(SCAN_CHUNK, scan_workers()):
        yield


def _holds_big_file(path: Path, budget: list[int]) -> bool:
    """A regular file over SMALL_FILE at `path` or in its folders (symbolic links not followed),
    among the first `budget[0]` entries looked at."""
    try:
        if path.is_file():
            return path.stat().st_size > SMALL_FILE
        folders = [path] if path.is_dir() else []
        while folders and budget[0] > 0:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        return False
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        if entry.stat(follow_symlinks=False).st_size > SMALL_FILE:
                            return True
    except OSError:  # the command reports an unreadable input itself
        return False
    return False
