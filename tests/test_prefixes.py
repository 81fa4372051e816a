"""Where a line's kubectl/CRI prefix ends, read eight bytes at a time (analyzer/parse/prefixes.py),
against the pattern the line reader removes them with (`LINE_PREFIX_PATTERN`): on lines built
from the parts of a time prefix, each part right or nearly right, as the pattern reads them."""

from __future__ import annotations

import functools
import mmap

import numpy as np
import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analyzer.bundle.text import LINE_PREFIX_PATTERN, PREFIX_RE
from analyzer.parse import prefixes

TWO = st.text("0123456789", min_size=2, max_size=2)
ODD_TWO = st.sampled_from(["1", "123", "1:", ":1", "a1", "/1", "١2", "1;", "1?"])
PODS = st.sampled_from(["", "", "", "[pod/a-1/c] ", "[pod/x/y]", "[pod/ab/c d] ", "[po"])
REST = st.sampled_from(
    ["I0801 00:00:00.000100  412873 flags.go:36] FLAG: --v=4", "", "x", "café", "2024", "\x00"]
)


def _part(draw, good, odd) -> str:
    """Most often as written, now and then a little off."""
    return draw(odd) if draw(st.integers(0, 11)) == 0 else draw(good)


@st.composite
def lines(draw) -> str:
    """A line: perhaps kubectl's pod, perhaps a time (each part as written, or now and then a
    little off: a digit outside ASCII, a byte next to a digit's, a missing or doubled mark),
    perhaps a stream and tag, then a log line; sometimes cut short."""
    p = functools.partial(_part, draw)
    year = p(
        st.text("0123456789", min_size=4, max_size=4),
        st.sampled_from(["2O24", "202", "١٢٣٤", "20:4"]),
    )
    mark = functools.partial(p, odd=st.sampled_from(["", "/", "--", ";"]))
    date = year + mark(st.just("-")) + p(TWO, ODD_TWO) + mark(st.just("-")) + p(TWO, ODD_TWO)
    date += p(st.just("T"), st.sampled_from(["t", " ", "TT", ":"]))
    clock = p(TWO, ODD_TWO) + mark(st.just(":")) + p(TWO, ODD_TWO) + mark(st.just(":"))
    clock += p(TWO, ODD_TWO)
    clock += p(
        st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=14).map(".{}".format)),
        st.sampled_from([".", " .1", ".a", ".1;"]),
    )
    clock += p(
        st.sampled_from(["Z", "+08:00", "-05:30"]),
        st.sampled_from(["+0800", "z", "+08:0", "", "Z0", "+08;00", "*08:00", "+0:800"]),
    )
    space = p(st.just(" "), st.sampled_from(["", "  ", "\t"]))
    stream = p(
        st.sampled_from(["", "", "stdout F ", "stderr P ", "stderr F "]),
        st.sampled_from(["stderr Fx", "stdin F ", "stdout X ", "stderr F", "stdout P  "]),
    )
    timed = draw(st.integers(0, 3)) > 0
    line = draw(PODS) + (date + clock + space + stream if timed else "") + draw(REST)
    if draw(st.integers(0, 19)) == 0:
        line = line[: draw(st.integers(0, len(line)))]
    return line


def _ends_by_pattern(raw: bytes, starts, ends) -> list[int]:
    out = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        text = raw[start:end].decode("utf-8", "replace")
        out.append(start + len(text[: PREFIX_RE.match(text).end()].encode()))
    return out


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picked=st.lists(lines(), min_size=1, max_size=60),
    ahead=st.integers(0, 3),
    invalid=st.booleans(),
    simd=st.booleans(),
)
@example(  # the fast path's every branch: Z, an offset, nine digits, CRI, a dot without digits
    picked=[
        "2024-11-11T05:16:13Z I0801 x",
        "2024-11-11T05:16:13.606379123+08:00 stderr F I0801 x",
        "2024-11-11T05:16:13.6Z stdout P partial",
        "2024-11-11T05:16:13.Z dot",
        "2024-11-11T05:16:13Z stderr Fx",
    ]
    * 4,
    ahead=1,
    invalid=False,
    simd=True,
)
def test_a_prefix_ends_where_the_pattern_ends_it(monkeypatch, picked, ahead, invalid, simd):
    """Every line's prefix end is where the pattern's match ends on its text (bytes that are
    not UTF-8 being characters no prefix holds), in a chunk with lines of the chunk before it
    ahead (as a map holds them); the stripped lines are the lines from there, with or without
    StringZilla. The line reader's polars removes the same prefixes."""
    raw = "".join(x + "\n" for x in ["ahead of the chunk"] * ahead + picked).encode()
    if invalid:
        raw = raw.replace(b"caf\xc3\xa9", b"caf\xff")
    chunk = np.frombuffer(raw, np.uint8)
    ends = np.flatnonzero(chunk == 10)[ahead:]
    starts = np.flatnonzero(chunk == 10)[ahead - 1 : -1] + 1 if ahead else np.r_[0, ends[:-1] + 1]
    expected = _ends_by_pattern(raw, starts, ends)
    assert prefixes.prefix_ends(raw, starts, ends).tolist() == expected
    kept = b"".join(raw[a : b + 1] for a, b in zip(expected, ends.tolist(), strict=True))
    with monkeypatch.context() as patch:  # undone for the next example
        if not simd:
            patch.setattr(prefixes, "stringzilla", None)
        assert prefixes.stripped(raw, starts, ends) == kept
    texts = pl.Series([x.encode().decode("utf-8", "replace") for x in picked])
    assert texts.str.replace(LINE_PREFIX_PATTERN, "").to_list() == [
        x[PREFIX_RE.match(x).end() :] for x in texts.to_list()
    ]


def test_a_mapped_chunk_is_stripped_and_left_closable(tmp_path):
    """In a map (a scan process's chunk, from the page before its first line): the same lines,
    and no view of the map is left, so it closes."""
    lines = [f"2024-11-11T05:16:{k % 60:02d}.{k}Z stderr F line {k}" for k in range(3000)]
    path = tmp_path / "log"
    path.write_bytes("".join(x + "\n" for x in lines).encode())
    with open(path, "rb") as fh:
        chunk = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    bytes_ = np.frombuffer(chunk, np.uint8)
    ends = np.flatnonzero(bytes_ == 10)[1:]
    starts = ends - (ends - np.flatnonzero(bytes_ == 10)[:-1]) + 1
    del bytes_
    text = prefixes.stripped(chunk, starts, ends)
    assert text == "".join(f"line {k}\n" for k in range(1, 3000)).encode()
    chunk.close()  # BufferError if a view were left
