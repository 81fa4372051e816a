"""CSV for spreadsheets: cells from bundles cannot run as formulas."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


# a cell a spreadsheet would evaluate (=, +, @, a tab or CR first; "-" before something not a
# number): CSV injection, OWASP's list
_FORMULA = r"^(?:[=+@\t\r]|-[^0-9.\s])"


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with every string cell a spreadsheet would run as a formula (a ticket folder
    named `=HYPERLINK(...)`, a log line) prefixed with `'`, which spreadsheets show as text.

    >>> import polars as pl
    >>> csv_safe(pl.DataFrame({"t": ["=HYPERLINK(1)", "-1.5", "-x", "ok"], "n": [1, 2, 3, 4]}))["t"].to_list()
    ["'=HYPERLINK(1)", '-1.5', "'-x", 'ok']
    """
    import polars as pl

    text = [c for c, t in frame.schema.items() if t == pl.String]
    return frame.with_columns(
        pl.when(pl.col(c).str.contains(_FORMULA))
        .then(pl.lit("'") + pl.col(c))
        .otherwise(pl.col(c))
        .alias(c)
        for c in text
    )
