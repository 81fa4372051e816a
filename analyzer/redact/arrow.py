"""Rows of bytes into and out of polars without copying them (Arrow's C data interface).

The second pass of a redaction cuts each 16 MiB piece into rows for polars (`Stretches`). Sliced
into bytes objects and handed to `pl.Series`, every byte was copied twice on the way in, and
`to_list()` made a bytes object of each row on the way out: 9 of the 31 ms a piece of the seed-7
log cost there. nanoarrow (the Arrow project's C library, Python bindings; binary wheels for the
usual platforms) describes the piece's own buffer and the rows' offsets to polars, which reads
them in place, and reads back the buffers polars made, as memoryviews the writer writes. Without
its wheel, the rows are sliced and listed as before."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import polars as pl

from analyzer.parse.bytescan import np

try:  # a binary wheel on the usual platforms
    import nanoarrow as na
except ImportError:  # pragma: no cover - exercised on platforms without a wheel
    na = None  # type: ignore[assignment]

# Arrow's binary view ("vz", polars' own layout): 16 bytes a row, its length first; a row of up
# to 12 bytes is inline after it, a longer one is a prefix, a data buffer's index and an offset
INLINE = 12
VIEW_BYTES = 16


def text_rows(raw: bytes, bounds: list[int]) -> pl.Series:
    """`raw[bounds[k] : bounds[k + 1]]` for each k, as a String series that reads `raw` in
    place (the series holds it alive). `raw` is valid UTF-8 and every bound falls between two
    characters: polars takes the rows as text without checking them (checking cost more than
    handing them over)."""
    if na is None or np is None:
        return pl.Series([raw[a:b] for a, b in pairwise(bounds)], dtype=pl.Binary).cast(pl.String)
    offsets = np.asarray(bounds, dtype=np.int64)
    array = na.c_array_from_buffers(na.large_string(), len(bounds) - 1, [None, offsets, raw])
    return pl.Series(array)


def rows_bytes(series: pl.Series) -> list[Any]:
    """A Binary series' rows, in order, as objects with the buffer protocol: memoryviews into the
    series' buffers (they hold them alive) and, for rows of 12 bytes or fewer, bytes."""
    if na is None or np is None or series.null_count():
        return series.to_list()
    out: list[Any] = []
    for chunk in na.c_array_stream(series):
        if chunk.schema.format != "vz":  # a layout of another polars: read as before
            out.extend(series.slice(len(out), chunk.length).to_list())
            continue
        view = chunk.view()
        views = memoryview(view.buffer(1)).cast("B")
        data = [memoryview(view.buffer(k)).cast("B") for k in range(2, view.n_buffers - 1)]
        first = chunk.offset * VIEW_BYTES
        fields = np.frombuffer(views, dtype="<i4", count=4 * chunk.length, offset=first)
        for k, (length, _prefix, buffer, offset) in enumerate(fields.reshape(-1, 4).tolist()):
            if length <= INLINE:
                at = first + k * VIEW_BYTES + 4
                out.append(bytes(views[at : at + length]))
            else:
                out.append(data[buffer][offset : offset + length])
    return out
