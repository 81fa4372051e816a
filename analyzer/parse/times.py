"""ISO 8601 times as stated in a bundle (Node conditions, manifests, pod statuses): the one
parser every stage uses, so a time means the same in the clock, the timeline and the manifest."""

from __future__ import annotations

import datetime as dt

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
