"""CSV for spreadsheets: cells from bundles cannot run as formulas."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


# a cell a spreadsheet would evaluate: CSV injection, OWASP's list (=, +, -, @, a tab or CR
# first); a cell that is a negative number as a whole stays as it is
_FORMULA = r"^[=+\-@\t\r]"
_NUMBER = r"^-\d+(?:\.\d+)?$"


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with every string cell a spreadsheet would run as a formula (a ticket folder
    named `=HYPERLINK(...)`, a log line) prefixed with `'`, which spreadsheets show as text.

    >>> import polars as pl
    >>> cells = ["=HYPERLINK(1)", "-1.5", "-x", "-2+3+cmd|' -C calc'!A0", "ok"]
    >>> csv_safe(pl.DataFrame({"t": cells, "n": [1, 2, 3, 4, 5]}))["t"].to_list()
    ["'=HYPERLINK(1)", '-1.5', "'-x", "'-2+3+cmd|' -C calc'!A0", 'ok']
    """
    import polars as pl

    text = [c for c, t in frame.schema.items() if t == pl.String]
    return frame.with_columns(
        pl.when(pl.col(c).str.contains(_FORMULA) & ~pl.col(c).str.contains(_NUMBER))
        .then(pl.lit("'") + pl.col(c))
        .otherwise(pl.col(c))
        .alias(c)
        for c in text
    )
