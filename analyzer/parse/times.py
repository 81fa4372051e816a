"""ISO 8601 times as stated in a bundle (Node conditions, manifests, pod statuses): the one
parser every stage uses, so a time means the same in the clock, the timeline and the manifest."""

from __future__ import annotations

import datetime as dt
import functools
import re

MIN_YEAR, MAX_YEAR = 2000, 2100  # a clue outside this is junk, not a collection time


def parse_time(value: object) -> dt.datetime | None:
    """An ISO 8601 time as an aware UTC datetime; None for anything else (never raises).

    >>> parse_time("2026-08-16T10:00:00Z").isoformat()
    '2026-08-16T10:00:00+00:00'
    >>> parse_time("0000-01-01T00:00:00Z") is None
    True
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        t = t if t.tzinfo else t.replace(tzinfo=dt.UTC)
        t = t.astimezone(dt.UTC)
    except (ValueError, OverflowError):
        return None
    return t if MIN_YEAR <= t.year < MAX_YEAR else None


# what `time.strptime` accepts for each numeric directive (its `_strptime.TimeRE`), so that a
# format of these alone is read as strptime reads it without importing `_strptime`, whose
# locale tables cost a small run ~1.5 ms
_NUMERIC = {
    "Y": r"(\d\d\d\d)",
    "m": r"(1[0-2]|0[1-9]|[1-9])",
    "d": r"(3[01]|[12]\d|0[1-9]|[1-9]| [1-9])",
    "H": r"(2[0-3]|[0-1]\d|\d)",
    "M": r"([0-5]\d|\d)",
    "S": r"(6[0-1]|[0-5]\d|\d)",
}
_FIELDS = "YmdHMS"  # datetime's arguments, in order


@functools.cache
def _format_regex(fmt: str) -> tuple[re.Pattern[str], list[str]] | None:
    """`fmt` as strptime's regex (matched ignoring case, as strptime matches) and its
    directives in order; None if it holds another directive, one twice, a stray `%`, or no
    whole date (strptime's defaults fill a missing part)."""
    pieces, order = [], []
    for i, piece in enumerate(re.split(r"(%.)", fmt)):  # literals and directives in turn
        if i % 2 == 0:
            if "%" in piece:  # a `%` ending the format
                return None
            # as strptime: each run of white space is `\s+`, the rest as it is
            pieces += [r"\s+" if x.isspace() else re.escape(x) for x in re.split(r"(\s+)", piece)]
        elif piece[1] not in _NUMERIC or piece[1] in order:
            return None
        else:
            pieces.append(_NUMERIC[piece[1]])
            order.append(piece[1])
    if not set(_FIELDS[:3]) <= set(order):
        return None
    return re.compile("".join(pieces), re.IGNORECASE), order


def parse_formatted(value: str, fmt: str) -> dt.datetime:
    """`datetime.strptime(value, fmt)` as an aware UTC datetime (ValueError where strptime
    raises one), for a format of numeric date and time fields; other formats go to strptime.

    >>> parse_formatted("2024.08.15 10:00:00", "%Y.%m.%d %H:%M:%S").isoformat()
    '2024-08-15T10:00:00+00:00'
    """
    compiled = _format_regex(fmt)
    if compiled is None:
        return dt.datetime.strptime(value, fmt).replace(tzinfo=dt.UTC)
    pattern, order = compiled
    m = pattern.fullmatch(value)
    if m is None:
        raise ValueError(f"time data {value!r} does not match format {fmt!r}")
    fields = dict(zip(order, map(int, m.groups()), strict=True))
    year, month, day, hour, minute, second = (fields.get(f, 0) for f in _FIELDS)
    return dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC)
