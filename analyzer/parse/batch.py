"""What one stretch of a big log contributes to its scan, whichever reader produced it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the scan processes import this module, and never polars
    import polars as pl

# a big log's klog line starts with a severity letter, month, day and a space ("I0815 "): the
# rest of its header is not checked (checking the clock too would double the byte scan's time)
KLOG_HEADER = ["[IWEF]", *["[0-9]"] * 4, " "]
KLOG_START = "^" + "".join(KLOG_HEADER)
CHUNK_BYTES = 16 << 20  # a big plain log's chunk, scanned by one scan process at a time
SIG_HEAD_CAP = 300  # per signature, first occurrences kept from a big log
SIG_TAIL_CAP = 300  # and last occurrences
ERROR_LINE_CAP = 5_000  # unmatched E/F lines kept from a big log (batch analysis wants them)
ERROR_EXAMINED = 20_000  # ... from among its first E/F lines (each is checked on its own)


class PrefixUnsettled(Exception):
    """A line of a prefixed log whose prefix the byte scan cannot tell as polars would (a
    character outside ASCII where the pattern's Unicode digits may be): the log is read by the
    line reader instead. Defined here, where the parent unpickles it without numpy."""


@dataclass
class Batch:
    """One stretch of a big log, reduced to counts and the few rows worth keeping.

    Rows are frames of the log's kept columns (`line`, `text`, and `raw` when the text had a
    prefix removed), in line order."""

    lines: int
    bytes: int  # the stretch's bytes with their newlines (for the progress line)
    klog_lines: int
    severities: dict[str, int]  # "E", "W", "F" klog lines
    # per frequent signature: (id, rows, how many lines it matched here): the rows hold at least
    # the first ones the sample still wants (None: no rows); its last SIG_TAIL_CAP rows are in
    # this batch's rows or a later batch's (the byte scan hands them over in its last batch)
    hot: list[tuple[str, pl.DataFrame | None, int]]
    loose: pl.DataFrame | None  # E/F lines no signature can match (the first ones)
    candidates: pl.DataFrame | None  # lines another signature may match, with an `_err` column
    # the signatures counted in this stretch (`hot`): every other one's lines are candidates
    hot_ids: tuple[str, ...]


def line_text(line: bytes | bytearray) -> str:
    """A big log's line as both readers give its text: without a carriage return at its end,
    invalid UTF-8 replaced."""
    if line.endswith(b"\r"):
        line = line[:-1]
    return line.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ChunkFound:
    """What a scan process found in one chunk of a big plain log (analyzer/parse/bytescan.py),
    with line numbers counted from the chunk's start (0 = its first). Defined here, where the
    parent that unpickles it finds it without importing numpy."""

    lines: int
    klog_lines: int
    severities: dict[str, int]
    # per hot signature: (id, its first lines the sample still wants as (number, text), its
    # last lines as (number, start, length): made text only if they are the file's last, count)
    hot: list[tuple[str, list[tuple[int, str]], list[tuple[int, int, int]], int]]
    # unmatched E/F lines: (their rank among the chunk's E/F lines, line, text)
    loose: list[tuple[int, int, str]]
    # candidate lines: (line, text, rank among the chunk's E/F lines of an E/F line that no hot
    # signature matches, else -1): one no signature takes is a loose line, if among the file's
    # first ERROR_EXAMINED E/F lines, as the loose lines are
    candidates: tuple[list[int], list[str], list[int]]
    # the plan's literals as the process cut them, where the plan came with its sample instead
    cut: tuple[str, ...] | None = None
