"""The episodes the timeline stage reads from a node's events (`timeline.episodes`): gaps in a
periodic log, the first error after the last healthy moment, and the clocks that disagree. The
events are built here, so each case states what a reader of the timeline must be told."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from types import SimpleNamespace

import polars as pl
import pytest

from analyzer import timeline
from analyzer.catalogue.datafiles import EpisodeSpec
from analyzer.timeline import SCHEMA, episodes

T0 = dt.datetime(2024, 8, 15, 9, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True, params=["rows", "queries"])
def read(request, monkeypatch):
    """Every case read both ways: a small timeline as Python rows, a big one by polars queries
    (tests/test_timeline_rows.py compares the two over random timelines)."""
    if request.param == "queries":
        monkeypatch.setattr(timeline, "READ_WHOLE_ROWS", -1)
    return request.param


@dataclass
class Match:
    ts: dt.datetime | None
    captures: dict = field(default_factory=dict)
    file: str = "plugin.log"
    line: int = 1


class Context:
    """The part of a node's context `episodes` reads: its signature matches and its logs."""

    def __init__(self, matches: dict[str, list[Match]] | None = None, sampled: tuple = ()):
        self._matches = matches or {}
        self.logs = [
            SimpleNamespace(
                artefact=SimpleNamespace(file=SimpleNamespace(name=name)),
                stats=SimpleNamespace(all_lines_kept=False),
            )
            for name in sampled
        ]

    def matches(self, sid: str) -> list[Match]:
        return self._matches.get(sid, [])


def events(*rows: tuple) -> pl.DataFrame:
    """(seconds after T0, source, file, line, severity, message) rows, in time order as the
    timeline holds them."""
    frame = pl.DataFrame(
        [
            {
                "time": T0 + dt.timedelta(seconds=s),
                "source": source,
                "file": file,
                "line": line,
                "severity": sev,
                "signature": None,
                "message": msg,
            }
            for s, source, file, line, sev, msg in rows
        ],
        schema=SCHEMA,
    )
    return frame.sort("time", maintain_order=True)


def kinds(eps) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in eps]


def test_a_gap_is_silence_longer_than_the_kinds_limit_between_its_dated_lines():
    frame = events(
        (0, "device-plugin-log", "dp.log", 1, "I", "start"),
        (100, "device-plugin-log", "dp.log", 2, "I", "tick"),  # 100 s: under 120
        (150, "device-plugin-log", "dp.log", 3, None, "a continuation line: no severity"),
        (250, "device-plugin-log", "dp.log", 4, "I", "tick"),  # 150 s after the last dated one
        (200, "scheduler-log", "sch.log", 1, "I", "a"),
        (261, "scheduler-log", "sch.log", 2, "W", "b"),  # 61 s: over a limit of 60.5
        (100, "kubelet-log", "k.log", 1, "I", "not a periodic log"),
        (600, "kubelet-log", "k.log", 2, "I", "no limit: no gap"),
    )
    # limits as YAML gives them: an int for one kind, a float for another
    spec = EpisodeSpec(gap_seconds={"scheduler-log": 60.5, "device-plugin-log": 120})
    eps, issues = episodes(frame, Context(), spec, True)
    gaps = [(e.source, e.file, e.line, e.text) for e in eps if e.kind == "gap"]
    assert gaps == [
        ("device-plugin-log", "dp.log", 4, "device-plugin-log silent for 150s before this line"),
        ("scheduler-log", "sch.log", 2, "scheduler-log silent for 61s before this line"),
    ]
    assert issues == []  # the three logs overlap in time, and none goes back


def test_at_most_twenty_gaps_per_kind_the_first_ones():
    rows = [
        (k * 200, kind, f"{kind}.log", k + 1, "I", "tick")
        for k in range(30)
        for kind in ("scheduler-log", "device-plugin-log")
    ]
    # the scheduler's limit first: at the same moment, its gap is told first
    spec = EpisodeSpec(gap_seconds={"scheduler-log": 120, "device-plugin-log": 120})
    eps, _ = episodes(events(*rows), Context(), spec, True)
    gaps = [(e.source, e.line) for e in eps if e.kind == "gap"]
    # lines 2..21 of each: the first 20 of its 29 gaps
    assert gaps == [(kind, k) for k in range(2, 22) for kind in spec.gap_seconds]


def test_silence_as_long_as_the_limit_is_no_gap():
    frame = events(
        (0, "device-plugin-log", "dp.log", 1, "I", "a"),
        (120, "device-plugin-log", "dp.log", 2, "I", "exactly the limit"),
        (241, "device-plugin-log", "dp.log", 3, "I", "a second more"),
    )
    spec = EpisodeSpec(gap_seconds={"device-plugin-log": 120})
    eps, _ = episodes(frame, Context(), spec, True)
    assert [e.line for e in eps if e.kind == "gap"] == [3]


def test_the_first_error_is_the_first_after_the_last_healthy_moment():
    frame = events(
        (0, "device-plugin-log", "dp.log", 1, "E", "an early error, before registration worked"),
        (10, "device-plugin-log", "dp.log", 2, "I", "annotation updated"),
        (20, "scheduler-log", "sch.log", 1, "W", "a warning is no error"),
        (30, "scheduler-log", "sch.log", 2, "E", "node gpu-1 not found"),
        (40, "device-plugin-log", "dp.log", 3, "F", "later"),
    )
    healthy = {"ok": [Match(T0 + dt.timedelta(seconds=10))]}
    spec = EpisodeSpec(healthy=(("ok", ()),))
    eps, _ = episodes(frame, Context(healthy), spec, True)
    assert kinds(eps) == [
        ("last-healthy", "last evidence that registration worked"),
        ("first-fault", "first error after the last healthy state: node gpu-1 not found"),
    ]
    fault = eps[-1]
    assert (fault.source, fault.file, fault.line) == ("scheduler-log", "sch.log", 2)


def test_without_a_healthy_moment_the_first_error_of_all():
    frame = events(
        (0, "device-plugin-log", "dp.log", 1, "I", "start"),
        (5, "device-plugin-log", "dp.log", 2, "E", "first"),
        (9, "device-plugin-log", "dp.log", 3, "E", "second"),
    )
    eps, _ = episodes(frame, Context(), EpisodeSpec(), True)
    assert kinds(eps) == [("first-fault", "first error after the last healthy state: first")]


def test_clocks_lines_going_back_and_logs_that_do_not_overlap():
    frame = events(
        (0, "device-plugin-log", "dp.log", 1, "I", "a"),
        (100, "device-plugin-log", "dp.log", 2, "I", "b"),
        (50, "device-plugin-log", "dp.log", 3, "I", "back 50 s"),
        (50.5, "device-plugin-log", "dp.log", 4, "I", "back half a second is jitter"),
        (500, "scheduler-log", "sch.log", 1, "I", "starts after dp.log ends"),
        (600, "scheduler-log", "sch.log", 2, "I", "x"),
        (550, "node", "node.yaml", 1, "I", "the Node object is no log"),
    )
    _, issues = episodes(frame, Context(), EpisodeSpec(), False)
    assert issues == [
        "klog lines carry no year and the bundle gave no clue: times are shown without a year",
        "dp.log: 1 line(s) go back in time (restarts, clock skew or several containers concatenated)",
        "dp.log ends (08-15 09:01:40) before sch.log starts (08-15 09:08:20): their times do not overlap",
    ]


def test_logs_starting_together_are_ordered_the_same_every_run():
    # a.log and b.log start at the same second; b.log ends first, so it comes first, and
    # only c.log, starting after both ended, is said not to overlap
    frame = events(
        (0, "device-plugin-log", "a.log", 1, "I", "x"),
        (0, "scheduler-log", "b.log", 1, "I", "x"),
        (10, "device-plugin-log", "a.log", 2, "I", "x"),
        (20, "kubelet-log", "c.log", 1, "I", "x"),
    )
    for _ in range(5):
        _, issues = episodes(frame, Context(), EpisodeSpec(), True)
        assert issues == [
            "a.log ends (08-15 09:00:10) before c.log starts (08-15 09:00:20): their times do not overlap"
        ]


def test_a_big_logs_count_is_of_the_lines_it_kept():
    frame = events(
        (0, "device-plugin-log", "big.log", 1, "I", "a"),
        (100, "device-plugin-log", "big.log", 900, "I", "b"),
        (50, "device-plugin-log", "big.log", 5000, "I", "the process restarted: back 50 s"),
    )
    _, issues = episodes(frame, Context(sampled=("big.log",)), EpisodeSpec(), True)
    assert issues == [
        "big.log: 1 of the lines kept go back in time (restarts, clock skew or several containers concatenated)"
    ]


def test_logs_pasted_in_one_file_are_each_read_in_their_own_order():
    # an issue pastes the plugin's log, then a scheduler log of an hour before: no clock goes
    # back; a second paste of the plugin's log, older than the first, does
    frame = events(
        (3600, "device-plugin-log", "issue.md", 10, "I", "plugin"),
        (3610, "device-plugin-log", "issue.md", 11, "I", "plugin"),
        (0, "scheduler-log", "issue.md", 40, "I", "scheduler, an hour before"),
        (10, "scheduler-log", "issue.md", 41, "I", "scheduler"),
        (1800, "device-plugin-log", "issue.md", 70, "I", "the plugin's earlier log"),
    )
    _, issues = episodes(frame, Context(), EpisodeSpec(), True)
    assert issues == [
        "issue.md: 1 line(s) go back in time (restarts, clock skew or several containers concatenated)"
    ]
