"""Times written in a format (rules/annotations.yaml's `time_format`) are read as
`datetime.strptime` reads them, without importing `_strptime` (its locale tables cost a small
run ~1.5 ms)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.parse.times import _format_regex, parse_formatted
from analyzer.rules.loader import load_ruleset

FORMATS = [
    "%Y.%m.%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%d.%m.%Y",
    "%Y%m%d%H%M%S",
    "%H:%M %Y/%m/%d",
    "%Y-%m-%d \t %H:%M",
]


def _strptime(value: str, fmt: str) -> dt.datetime | str:
    try:
        return dt.datetime.strptime(value, fmt).replace(tzinfo=dt.UTC)
    except ValueError:
        return "ValueError"


def _ours(value: str, fmt: str) -> dt.datetime | str:
    try:
        return parse_formatted(value, fmt)
    except ValueError:
        return "ValueError"


@settings(max_examples=3000, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    when=st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31)),
    edits=st.lists(
        st.tuples(st.integers(0, 30), st.sampled_from(["", *"0123456789 .-:/Tx\t6"])), max_size=3
    ),
)
def test_a_formatted_time_is_read_as_strptime_reads_it(fmt, when, edits):
    """Well-formed values and values edited by a character or three: single digits, a day
    past the month's end, hour 24, second 60 or 61, text left over, space for a digit."""
    value = list(when.strftime(fmt))
    for at, char in edits:
        if char:
            value.insert(min(at, len(value)), char)
        elif value:
            del value[min(at, len(value) - 1)]
    text = "".join(value)
    assert _ours(text, fmt) == _strptime(text, fmt)


@pytest.mark.parametrize(
    ("value", "fmt"),
    [
        ("2024-02-30 10:00:00", "%Y-%m-%d %H:%M:%S"),  # no such day
        ("2024-2-3 1:2:3", "%Y-%m-%d %H:%M:%S"),  # single digits
        ("2024-08-15 10:00:60", "%Y-%m-%d %H:%M:%S"),  # a leap second: strptime refuses it
        ("2024-08-15 24:00:00", "%Y-%m-%d %H:%M:%S"),
        ("2024-08- 5 10:00:00", "%Y-%m-%d %H:%M:%S"),  # a day padded with a space
        ("2024-08-\u0661\u0665 10:00:00", "%Y-%m-%d %H:%M:%S"),  # other digits than ASCII's
        ("2024x08x15 10:00:00", "%Y.%m.%d %H:%M:%S"),  # a dot is a dot
        ("2024-08-15t10:00:00", "%Y-%m-%dT%H:%M:%S"),  # strptime ignores case
        ("2024X08X15", "%Yx%mx%d"),
        ("2024-08-15", "%Y-%m-%d%"),  # a stray %: strptime refuses the format
        ("2024-08-15%", "%Y-%m-%d%"),
        ("2024-08-15%", "%Y-%m-%d%%"),
    ],
)
def test_odd_fields_and_formats_are_read_as_strptime_reads_them(value, fmt):
    assert _ours(value, fmt) == _strptime(value, fmt)


def test_formats_with_other_directives_go_to_strptime():
    assert _format_regex("%H:%M:%S") is None  # no date: strptime's defaults
    assert _format_regex("%b %d %Y") is None
    assert _format_regex("%Y-%m-%d %Y") is None
    assert parse_formatted("Aug 15 2024", "%b %d %Y") == dt.datetime(2024, 8, 15, tzinfo=dt.UTC)


def test_the_handshake_formats_are_read_without_strptime():
    """Each `time_format` of the built-in rules, and a small run's imports."""
    states = load_ruleset().annotations.states
    formats = [f for s in states for f in _as_list(s.get("time_format"))]
    assert len(formats) >= 4 and all(_format_regex(f) is not None for f in formats)
    code = (
        "import sys\n"
        "from analyzer.rules.loader import load_ruleset\n"
        "spec = load_ruleset().annotations\n"
        "h = spec.decode_handshake('hami.io/node-handshake', 'Requesting_2024-08-15 10:00:00')\n"
        "print(h.time.isoformat(), '_strptime' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2024-08-15T10:00:00+00:00", "False"]


def _as_list(value) -> list[str]:
    return [] if value is None else value if isinstance(value, list) else [value]
