"""A small timeline is read as Python values (`READ_WHOLE_ROWS`) where a big one is queried: the
events gathered, the gaps, the first fault and each file's clock are the same both ways, over
random timelines and logs (ties, sub-second steps, missing times and signatures, the Node
object's events at the logs' times)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_episodes import T0, events

from analyzer import timeline
from analyzer.parse.logs import READ_WHOLE_ROWS

KINDS = ["device-plugin-log", "scheduler-log", "kubelet-log", "node"]


@st.composite
def timelines(draw):
    """Events in time order as the timeline holds them: a few kinds and files, times that tie,
    step by fractions of a second or by minutes, severities and none, each file's lines in an
    order of their own (a paste of older lines after newer ones)."""
    n = draw(st.integers(0, 60))
    steps = draw(
        st.lists(
            st.sampled_from([0, 0.4, 0.999999, 1, 1.5, 2, 59.9, 121, 600]), min_size=n, max_size=n
        )
    )
    rows, at = [], 0.0
    lines: dict[str, list[int]] = {}
    for step in steps:
        at += step
        kind = draw(st.sampled_from(KINDS))
        file = (
            "node.yaml" if kind == "node" else draw(st.sampled_from(["a.log", "b.log", "issue.md"]))
        )
        taken = lines.setdefault(file, [])
        line = draw(st.sampled_from([x for x in range(1, 300) if x not in taken]))  # once a file
        taken.append(line)
        severity = draw(st.sampled_from(["I", "W", "E", "F", None]))
        rows.append((at, kind, file, line, severity, draw(st.sampled_from(["m", None]))))
    return rows


@settings(max_examples=300, deadline=None)
@given(
    rows=timelines(),
    limits=st.dictionaries(st.sampled_from(KINDS[:3]), st.sampled_from([0, 1, 1.5, 60, 120.5])),
    last_ok=st.one_of(st.none(), st.floats(0, 3000), st.integers(0, 59)),  # int: an event's
    sampled=st.frozensets(st.sampled_from(["a.log", "b.log"])),
)
def test_a_timeline_read_as_rows_gives_what_its_queries_give(rows, limits, last_ok, sampled):
    """The gaps, the first fault and each file's clock, read from Python rows and by polars'
    queries alike (whole seconds cut toward zero, ties kept in the timeline's order, a big
    log's kept lines ending a gap only after their neighbour)."""
    frame = events(*rows)
    if isinstance(last_ok, int):  # the time of an event: "after" it excludes it
        last_ok = rows[last_ok % len(rows)][0] if rows else None
    ok = None if last_ok is None else T0 + dt.timedelta(seconds=last_ok)
    by_rows = timeline._flagged_of(timeline._rows(frame), limits, ok, sampled)
    by_queries = timeline._flagged_rows(frame, limits, ok, sampled)
    assert [(*r[:6], bool(r[6])) for r in by_queries] == by_rows
    assert timeline._clocks_of(timeline._rows(frame)) == timeline._clocks(frame)


@st.composite
def dated_logs(draw):
    """Logs' frames as the facts stage stamps them: times that tie across logs or are missing,
    signature lists empty, missing or several, a message or only the text."""
    logs = []
    for i in range(draw(st.integers(0, 3))):
        n = draw(st.integers(0, 12))
        seconds = st.one_of(st.none(), st.sampled_from([0, 0.5, 1, 7, 60]))
        frame = pl.DataFrame(
            {
                "ts": [
                    None if s is None else T0 + dt.timedelta(seconds=s)
                    for s in draw(st.lists(seconds, min_size=n, max_size=n))
                ],
                "line": list(range(1, n + 1)),
                "sev": draw(st.lists(st.sampled_from(["I", "E", None]), min_size=n, max_size=n)),
                "sigs": draw(
                    st.lists(
                        st.one_of(
                            st.none(), st.lists(st.sampled_from(["a", "b", "", None]), max_size=2)
                        ),
                        min_size=n,
                        max_size=n,
                    )
                ),
                "msg": draw(st.lists(st.sampled_from(["m", None]), min_size=n, max_size=n)),
                "text": [f"text {k}" for k in range(n)],
            },
            schema={
                "ts": pl.Datetime("us", "UTC"),
                "line": pl.Int64,
                "sev": pl.String,
                "sigs": pl.List(pl.String),
                "msg": pl.String,
                "text": pl.String,
            },
        )
        kind = draw(st.sampled_from(KINDS[:3]))
        artefact = SimpleNamespace(kind=kind, file=SimpleNamespace(name=f"log{i}.txt"))
        logs.append(SimpleNamespace(frame=frame, artefact=artefact))
    node = None
    if draw(st.booleans()):  # the Node object's events, at times the logs' lines have too
        at = st.sampled_from([0, 0.5, 1, 7]).map(lambda s: T0 + dt.timedelta(seconds=s))
        stamp = at.map(lambda t: t.isoformat().replace("+00:00", "Z"))
        conditions = [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": draw(stamp),
                "lastHeartbeatTime": draw(stamp),
            }
            for _ in range(draw(st.integers(0, 2)))
        ]
        node = SimpleNamespace(
            name="gpu-1", created=draw(stamp), conditions=conditions, file="node.yaml", first_line=1
        )
    return SimpleNamespace(logs=logs, node=node, handshake=None)


@settings(max_examples=200, deadline=None)
@given(ctx=dated_logs())
def test_a_timeline_built_from_rows_is_the_one_its_query_builds(ctx):
    """The events of a few small logs gathered in Python are the frame polars' query builds:
    the same rows, types and order (ties in the logs' order)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timeline, "READ_WHOLE_ROWS", READ_WHOLE_ROWS)
        by_rows = timeline.build_timeline(ctx)
        patch.setattr(timeline, "READ_WHOLE_ROWS", -1)
        by_query = timeline.build_timeline(ctx)
    assert by_rows.schema == by_query.schema
    assert by_rows.equals(by_query)


@pytest.mark.parametrize("read", ["rows", "queries"])
def test_kept_lines_of_a_big_log_end_a_gap_only_after_their_neighbour(read):
    """A big log keeps the first and last lines of each signature, not the lines between: two
    kept lines an hour apart with lines between them are no silence (a scan's timeline said
    "silent for 2001s" of a log that wrote every 2 ms); a kept line's neighbour an hour later
    is, and so is any hour in a log kept whole."""
    hour = 3600
    rows = [
        (0, "device-plugin-log", "big.log", 10, "I", "m"),
        (hour, "device-plugin-log", "big.log", 5000, "I", "m"),  # lines 11-4999 not kept
        (2 * hour, "device-plugin-log", "big.log", 5001, "I", "m"),  # its neighbour
        (3 * hour, "device-plugin-log", "small.log", 7, "I", "m"),  # another file after it
        (4 * hour, "device-plugin-log", "small.log", 9, "I", "m"),  # kept whole: 8 is dateless
    ]
    frame = events(*rows)
    limits = {"device-plugin-log": 600}
    sampled = frozenset({"big.log"})
    if read == "rows":
        flagged = timeline._flagged_of(timeline._rows(frame), limits, None, sampled)
    else:
        flagged = timeline._flagged_rows(frame, limits, None, sampled)
    assert [(file, line) for _t, _s, file, line, _m, gap, _f in flagged if gap] == [
        ("big.log", 5001),
        ("small.log", 9),
    ]
