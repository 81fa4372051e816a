"""Where a line's kubectl/CRI prefix ends, read eight bytes at a time (analyzer/parse/prefixes.py),
against the pattern the line reader removes them with (`LINE_PREFIX_PATTERN`): on lines built
from the parts of a time prefix, each part right or nearly right, as the pattern reads them."""

from __future__ import annotations

import functools
import itertools
import mmap

import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analyzer.bundle.text import LINE_PREFIX_PATTERN
from analyzer.parse import prefixes
from analyzer.parse.batch import PrefixUnsettled, line_text

TWO = st.text("0123456789", min_size=2, max_size=2)
ODD_TWO = st.sampled_from(["1", "123", "1:", ":1", "a1", "/1", "١2", "1;", "1?"])
PODS = st.sampled_from(
    [
        *[""] * 6,
        "[pod/a-1/c] ",
        "[pod/x/y]",
        "[pod/ab/c d] ",
        "[po",
        "[pod/a\udcff/c] ",  # a byte of invalid UTF-8 (as surrogateescape writes it)
        "[pod/a\x1fb/c] ",  # a space to Python's `\s`, not to Rust's
        "[pod/a\xa0b/c] ",  # a space to both
    ]
)
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
        # a letter O, too short, Arabic-Indic digits, Kawi digits (Unicode 15: polars's, not
        # Python 3.11's), a colon
        st.sampled_from(
            ["2O24", "202", "١٢٣٤", "\U00011f52\U00011f50\U00011f52\U00011f54", "20:4"]
        ),
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


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picked=st.lists(lines(), min_size=1, max_size=60),
    ahead=st.integers(0, 3),
    invalid=st.booleans(),
    block=st.sampled_from([64, 1 << 10, prefixes.STRIP_BLOCK]),
)
@example(  # the fast path's every branch: Z, an offset, nine digits, CRI, a dot without digits
    picked=[
        "2024-11-11T05:16:13Z I0801 x",
        "2024-11-11T05:16:13.606379123+08:00 stderr F I0801 x",
        "2024-11-11T05:16:13.6Z stdout P partial",
        "2024-11-11T05:16:13.Z dot",
        "2024-11-11T05:16:13Z stderr Fx",
        "",
    ]
    * 4,
    ahead=1,
    invalid=False,
    block=64,
)
@example(  # a pod's name with invalid UTF-8, then a short line: its prefix ends before its newline
    picked=["[pod/a\udcff\udcff\udcff/c] x", "2024-11-11T05:16:13Z y"] * 3,
    ahead=0,
    invalid=False,
    block=1 << 10,
)
def test_the_lines_are_stripped_as_polars_strips_them(monkeypatch, picked, ahead, invalid, block):
    """A chunk's lines from its origin (lines of the chunk before it ahead, as a map holds them)
    without their prefixes are the line reader's texts: polars' replace of the pattern on the
    lines as its repaired copy has them (invalid UTF-8 replaced), read a block at a time; each
    line is found again in the chunk, prefix and all, by its number. A line whose prefix only
    Unicode's digit tables settle stops the scan (PrefixUnsettled: the log is read by the line
    reader), and only such a line does."""
    raw = b"".join(x.encode("utf-8", "surrogateescape") + b"\n" for x in ["ahead"] * ahead + picked)
    if invalid:
        raw = raw.replace(b"caf\xc3\xa9", b"caf\xff")
    origin = len(b"ahead\n") * ahead
    lines = raw[origin:].split(b"\n")[:-1]
    repaired = [x.decode("utf-8", "replace") for x in lines]
    expected = pl.Series(repaired, dtype=pl.String).str.replace(LINE_PREFIX_PATTERN, "")
    with monkeypatch.context() as patch:  # undone for the next example
        patch.setattr(prefixes, "STRIP_BLOCK", block)
        try:
            stripped = prefixes.Stripped.of(raw, origin)
        except PrefixUnsettled:
            assert any(not c.isascii() and not 0xDC80 <= ord(c) <= 0xDCFF for c in "".join(picked))
            return
    got = stripped.text.split(b"\n")[:-1]
    assert [x.decode("utf-8", "replace") for x in got] == expected.to_list()
    at = [0, *itertools.accumulate(len(x) + 1 for x in got)][:-1]
    rows = list(range(len(lines)))
    assert stripped.texts(stripped.spans(rows, at)) == [line_text(x) for x in lines]
    assert stripped.spans(rows, at) == [
        (start, len(x))
        for start, x in zip(
            itertools.accumulate((len(x) + 1 for x in lines), initial=0), lines, strict=False
        )
    ]


def test_a_mapped_chunk_is_stripped_and_left_closable(tmp_path):
    """In a map (a scan process's chunk, from the page before its first line): the same lines,
    and no view of the map is left, so it closes."""
    lines = [f"2024-11-11T05:16:{k % 60:02d}.{k}Z stderr F line {k}" for k in range(3000)]
    path = tmp_path / "log"
    path.write_bytes("".join(x + "\n" for x in lines).encode())
    with open(path, "rb") as fh:
        chunk = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    origin = len(lines[0]) + 1
    text = prefixes.Stripped.of(chunk, origin).text
    assert text == "".join(f"line {k}\n" for k in range(1, 3000)).encode()
    chunk.close()  # BufferError if a view were left


def test_only_the_lines_that_may_start_with_a_prefix_are_read_further(monkeypatch):
    """A chunk of a prefixed log with a run of empty lines (or of any line that cannot start a
    prefix): those are never gathered nor matched, so memory is bounded by the block and the
    lines that may have a prefix (16 MiB of newlines once took a scan process 3.7 GiB)."""
    read = []
    real = prefixes.prefix_ends
    monkeypatch.setattr(
        prefixes, "prefix_ends", lambda c, s, e: read.append(len(s)) or real(c, s, e)
    )
    monkeypatch.setattr(prefixes, "STRIP_BLOCK", 4 << 10)
    timed = [f"2024-11-11T05:16:{k % 60:02d}Z line {k}" for k in range(50)]
    raw = ("\n".join(timed[:25]) + "\n" * 100_001 + "\n".join(timed[25:]) + "\n").encode()
    stripped = prefixes.Stripped.of(raw, 0)
    assert sum(read) == 50
    expected = "\n".join(f"line {k}" for k in range(25)) + "\n" * 100_001
    expected += "\n".join(f"line {k}" for k in range(25, 50)) + "\n"
    assert stripped.text == expected.encode()
    assert stripped.text.count(b"\n") == raw.count(b"\n")
