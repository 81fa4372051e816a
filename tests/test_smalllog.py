"""A short plain log is parsed in Python (analyzer/parse/smalllog.py): the same frame and
statistics as polars gives, on signatures' lines, klog lines, prefixes, hard wraps and odd
characters."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.dev.samples import artefact
from analyzer.parse import smalllog
from analyzer.parse.logs import parse_log

KLOG_HEADERS = st.builds(
    "{}{:02d}{:02d} {:02d}:{:02d}:{:02d}{}{}{:>7} {}] ".format,
    st.sampled_from("IWEFX"),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 24),
    st.integers(0, 60),
    st.integers(0, 60),
    st.sampled_from(["", ".123456", ".1", ".1234567890"]),
    st.sampled_from([" ", "\t", "\x1c", "\x85", "\u3000", "\x0b"]),  # \s in one regex or both
    st.integers(1, 99999),
    st.sampled_from(["plugin.go:42", "main.go:1", "x y:2", "a]b:3", "server.go"]),
)
PREFIXES = st.sampled_from(
    [
        "",
        "[pod/hami-device-plugin-abc/device-plugin] ",
        "[pod/p q/c] ",
        "[pod/p\x1fq/c] ",
        "2024-08-15T10:00:00.123456789Z ",
        "2024-08-15T10:00:00+02:00 stdout F ",
        "[pod/x/y] 2024-08-15T10:00:00Z stderr P ",
    ]
)
ODD = st.text(
    st.sampled_from("ab \t\r\x00\x0b\x0c\x1c\x1f\x7f]/:é重\u212a\u017f\u0130\u2028"), max_size=4
)
WORDS = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz ABCKS:=.-_/()*0123456789"), max_size=30)


def _lines(examples: list[str]):
    piece = st.one_of(st.integers(0, 10_000).map(lambda i: examples[i % len(examples)]), WORDS)
    line = st.builds(
        lambda prefix, header, pieces, odd: prefix + header + " ".join(pieces) + odd,
        PREFIXES,
        st.one_of(st.just(""), KLOG_HEADERS),
        st.lists(piece, max_size=3),
        st.one_of(st.just(""), ODD),
    )
    wrapped = st.integers(3, 6).map(lambda n: ["x" * 60] * n + ["tail"])  # hard-wrapped lines
    return st.lists(st.one_of(line.map(lambda x: [x]), wrapped), min_size=1, max_size=30).map(
        lambda groups: [x for g in groups for x in g]
    )


def _parsed(text: str, kind: str, short: bool):
    saved = smalllog.SMALL_CHARS
    smalllog.SMALL_CHARS = saved if short else -1  # -1: no text is short enough
    try:
        return parse_log(artefact(kind, text), _matcher())
    finally:
        smalllog.SMALL_CHARS = saved


def _matcher():
    from analyzer.analyze import matcher_for
    from analyzer.rules.loader import load_ruleset

    return matcher_for(load_ruleset())


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), kind=st.sampled_from(["device-plugin-log", "issue-text", "text"]))
def test_a_short_logs_frame_and_statistics_are_those_polars_gives(ruleset, data, kind):
    examples = sorted({x for s in ruleset.signatures.values() for x in s.examples_match})
    lines = data.draw(_lines(examples))
    text = "\n".join(lines) + data.draw(st.sampled_from(["", "\n", "\n\n  \n", "\r\n"]))
    python, polars = _parsed(text, kind, True), _parsed(text, kind, False)
    assert python.frame.schema == polars.frame.schema
    assert python.frame.equals(polars.frame)
    assert python.stats == polars.stats


def test_the_sample_logs_are_parsed_in_python_and_odd_characters_are_not():
    text = "I0815 10:00:00.000001       1 plugin.go:42] device plugin started\n"
    assert smalllog.fits(text)
    assert smalllog.fits(text + "\t\r\x00\x7f")
    assert not smalllog.fits(text + "\x1c")  # Python's \s takes it, Rust's does not
    assert not smalllog.fits(text + "é")
    assert not smalllog.fits(text * 1000)  # long: polars


@pytest.mark.parametrize("kind", ["device-plugin-log", "scheduler-log"])
def test_a_short_logs_signatures_are_found(kind):
    text = (
        "I0815 10:00:00.000001       1 main.go:1] start\n"
        "E0815 10:00:01.000001       1 plugin.go:42] nvml init failed: "
        "ERROR_LIBRARY_NOT_FOUND\n"
    )
    parsed = _parsed(text, kind, True)
    assert parsed.stats.klog_lines == 2
    assert parsed.stats.severities == {"E": 1, "I": 1}
    assert parsed.frame.filter(pl.col("line") == 2)["sigs"].to_list()[0]
