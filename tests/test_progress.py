"""The one progress line: silent for short runs, in place on a terminal, a line now and then in
a log, an ETA only once the rate means something."""

from __future__ import annotations

import io

import pytest

from analyzer import progress as progress_mod
from analyzer.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: now[0])
    return now


def test_a_short_run_prints_nothing(clock):
    out = _Tty()
    p = Progress("batch", total=3, unit="bundles", stream=out)
    for _ in range(3):
        clock[0] += 0.5
        p.advance()
    assert out.getvalue() == ""


def test_a_long_run_on_a_terminal_redraws_one_line_and_ends_it(clock):
    out = _Tty()
    p = Progress("batch", total=100, unit="bundles", stream=out)
    for _ in range(100):
        clock[0] += 0.2
        p.advance(failed=False)
    text = out.getvalue()
    assert text.startswith("\rbatch: ")
    assert text.endswith("batch: 100/100, 5.0 bundles/s\x1b[K\n")
    assert text.count("\n") == 1  # redrawn in place, one newline at the very end


def test_a_log_gets_a_line_every_ten_seconds(clock):
    out = io.StringIO()
    p = Progress("redact", total=1000, unit="bytes", stream=out)
    for _ in range(100):
        clock[0] += 1.0
        p.advance(10)
    lines = out.getvalue().splitlines()
    assert 9 <= len(lines) <= 11
    assert lines[-1] == "redact: 1000 B/1000 B, 10 B/s"
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_no_eta_until_the_rate_has_settled(clock):
    p = Progress("analyze", total=1 << 30, unit="bytes", stream=io.StringIO())
    clock[0] += 4
    p.advance(1 << 20)  # a slow start: 1 MiB of a GiB in 4 s
    assert "ETA" not in p.line()
    clock[0] += 8
    p.advance(200 << 20)
    assert "ETA" in p.line() and "MiB/s" in p.line()


def test_eta_is_not_slowed_by_start_up(clock):
    """Worker processes take 10 s to import and then finish a bundle every 0.1 s: the ETA is
    the time the rest takes at that pace (the whole-run rate would promise three times that)."""
    p = Progress("batch", total=300, unit="bundles", stream=io.StringIO())
    clock[0] += 10
    p.advance()
    for _ in range(99):
        clock[0] += 0.1
        p.advance()
    assert p.line().endswith("ETA 20 s"), p.line()  # 200 bundles left at 10 per second


def test_eta_is_never_zero_while_work_is_left(clock):
    """Half of a GiB left at 570 MiB/s: under a second, said as 1 s (not 0 s)."""
    p = Progress("redacting", total=1 << 30, unit="bytes", stream=io.StringIO())
    p.advance(1 << 20)
    clock[0] += 1
    p.advance(569 << 20)
    assert p.line().endswith("ETA 1 s"), p.line()


def test_failures_are_counted(clock):
    p = Progress("batch", total=4, unit="bundles", stream=io.StringIO())
    p.advance(failed=True)
    p.advance(failed=False)
    assert p.line().endswith("1 failed")


def test_a_step_that_starts_after_the_runs_quiet_period_shows_its_line_at_once(clock):
    """Inside `one_run` the quiet period is the run's: the second pass of a redaction that
    started 3 s ago shows its line at its first progress; a step of a run still in its first
    seconds, or outside any run, waits for its own quiet period."""
    with progress_mod.one_run():
        first = Progress("finding names", total=100, unit="bytes", stream=_Tty())
        clock[0] += 1.0
        first.advance(50)
        assert first.stream.getvalue() == ""  # the run is 1 s old
        clock[0] += 2.5
        first.advance(50)
        second = Progress("redacting", total=100, unit="bytes", stream=_Tty())
        clock[0] += 0.1
        second.advance(10)
        assert second.stream.getvalue().startswith("\rredacting: 10 B/100 B")
        with progress_mod.one_run():  # an inner run keeps the outer one's start
            inner = Progress("scanning", total=100, unit="bytes", stream=_Tty())
            clock[0] += 0.1
            inner.advance(1)
            assert inner.stream.getvalue().startswith("\rscanning: 1 B/100 B")
    alone = Progress("scanning", total=100, unit="bytes", stream=_Tty())
    clock[0] += 0.1
    alone.advance(1)
    assert alone.stream.getvalue() == ""
