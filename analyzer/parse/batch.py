"""What one stretch of a big log contributes to its scan, whichever reader produced it."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

# a big log's klog line starts with a severity letter, month, day and a space ("I0815 "): the
# rest of its header is not checked (checking the clock too would double the byte scan's time)
KLOG_HEADER = ["[IWEF]", *["[0-9]"] * 4, " "]
KLOG_START = "^" + "".join(KLOG_HEADER)
SIG_HEAD_CAP = 300  # per signature, first occurrences kept from a big log
SIG_TAIL_CAP = 300  # and last occurrences
ERROR_LINE_CAP = 5_000  # unmatched E/F lines kept from a big log (batch analysis wants them)
ERROR_EXAMINED = 20_000  # ... from among its first E/F lines (each is checked on its own)


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
