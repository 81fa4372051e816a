"""Rows of bytes handed to polars in place and read back from its buffers (analyzer/redact/arrow.py)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.redact import arrow

ROWS = st.lists(
    st.binary(max_size=40).map(lambda b: b.hex().encode()[:40]), min_size=1, max_size=30
)


def _bounds(rows: list[bytes]) -> list[int]:
    bounds = [0]
    for r in rows:
        bounds.append(bounds[-1] + len(r))
    return bounds


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_rows_in_and_out_are_the_rows(rows):
    """Short rows (held inline by polars, 12 bytes or fewer), long ones and empty ones, a slice
    and two chunks: what comes back is what went in, and what polars made of it."""
    series = arrow.text_rows(b"".join(rows), _bounds(rows))
    assert series.to_list() == [r.decode() for r in rows]
    series = series.cast(pl.Binary)
    assert [bytes(x) for x in arrow.rows_bytes(series)] == rows
    upper = series.cast(pl.String).str.to_uppercase().cast(pl.Binary)
    assert [bytes(x) for x in arrow.rows_bytes(upper)] == [r.upper() for r in rows]
    assert [bytes(x) for x in arrow.rows_bytes(series.slice(1))] == rows[1:]
    two = pl.concat([series, upper], rechunk=False)
    assert [bytes(x) for x in arrow.rows_bytes(two)] == rows + [r.upper() for r in rows]


def test_a_null_row_is_read_by_polars_own_list():
    series = pl.Series([b"a-long-row-of-more-than-twelve", None], dtype=pl.Binary)
    assert arrow.rows_bytes(series) == [b"a-long-row-of-more-than-twelve", None]


def test_without_nanoarrow_the_rows_are_sliced_and_listed(monkeypatch):
    rows = [b"gpu-node-1 ready\n", b"", b"short\n", b"x" * 100]
    monkeypatch.setattr(arrow, "na", None)
    series = arrow.text_rows(b"".join(rows), _bounds(rows))
    assert series.to_list() == [r.decode() for r in rows]
    assert arrow.rows_bytes(series.cast(pl.Binary)) == rows


def test_a_redacted_piece_is_the_same_either_way(monkeypatch):
    """A piece of the second pass (the names cut in stretches, an address on a planned line) gives
    the same bytes with and without the zero-copy path."""
    from analyzer.redact.engine import Redaction
    from analyzer.redact.redactors import load_redactors
    from analyzer.redact.tokens import TokenMap

    line = "I0516 16:20:01.000001       1 register.go:77] node gpu-node-7 reported to 10.2.3.4\n"
    other = "I0516 16:20:01.000002       1 main.go:12] nothing to say here at all, none\n"
    raw = ((line + other * 3) * 6000).encode()

    def redacted() -> bytes:
        run = Redaction(load_redactors(), {"gpu-node-7": "node"}, TokenMap())
        return run.piece(raw, "plugin.log")

    zero_copy = redacted()
    monkeypatch.setattr(arrow, "na", None)
    assert redacted() == zero_copy
    assert b"gpu-node-7" not in zero_copy and b"10.2.3.4" not in zero_copy
    assert zero_copy.count(b"node-1 reported to ip-1\n") == 6000
