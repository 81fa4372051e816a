"""One progress line on stderr for long runs (batch, a big log, redaction): redrawn in place on a
terminal, a plain line every ten seconds when stderr is a file, silent for runs shorter than a
few seconds. Every command that reports progress uses this one class, so they read alike.

The quiet period is the command's (`one_run`), not each step's: a step that starts after it (a
redaction's second pass, the scan of a redacted copy, a bundle's second big log) shows its line
at its first progress, so a long run is never silent for a step's first seconds."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TextIO

QUIET_FOR = 3.0  # seconds of silence before the first line: short runs print nothing
TTY_EVERY = 0.5
FILE_EVERY = 10.0
_SHOWN: ContextVar[bool] = ContextVar("hami_progress_shown", default=False)
_RUN_START: ContextVar[float | None] = ContextVar("hami_progress_run", default=None)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


@dataclass
class Progress:
    """`total` units of work (bundles, or bytes when `unit` is "bytes"); `advance` as they are
    done. The ETA is shown only once a tenth of the work or ten seconds have passed, so a slow
    first item (imports, a cold cache) does not promise an hour; it is reckoned at the pace since
    the first item was done, which start-up (worker processes importing) does not slow."""

    what: str
    total: int
    unit: str = "items"
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    failed: int = 0
    start: float = field(default_factory=lambda: time.monotonic())
    # when the quiet period began: the run's start inside `one_run`, else this step's
    quiet_from: float = field(default_factory=lambda: _RUN_START.get() or time.monotonic())
    last: float = 0.0
    shown: bool = False
    first: tuple[float, int] | None = None  # (time, done) when the first work was done

    @property
    def tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def advance(self, n: int = 1, failed: bool = False) -> None:
        self.done += n
        self.failed += failed
        now = time.monotonic()
        if self.first is None:
            self.first = (now, self.done)
        if now - self.quiet_from < QUIET_FOR and self.done < self.total:
            return
        if now - self.last < (TTY_EVERY if self.tty else FILE_EVERY) and self.done < self.total:
            return
        if self.done >= self.total and not self.shown:
            return  # finished inside the quiet period
        self.last = now
        self._write(self.line(now))

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = max(now - self.start, 1e-6)
        rate = self.done / elapsed
        if self.unit == "bytes":
            count = f"{_size(self.done)}/{_size(self.total)}"
            speed = f"{_size(rate)}/s"
        else:
            count = f"{self.done}/{self.total}"
            speed = f"{rate:.1f} {self.unit}/s"
        parts = [f"{self.what}: {count}", speed]
        settled = self.done * 10 >= self.total or elapsed >= 10
        # the pace since the first item was done: start-up (workers importing) is behind us
        since, then = self.first or (now, self.done)
        if self.done < self.total and settled and self.done > then and now > since:
            pace = (self.done - then) / (now - since)
            # rounded up: work left never reads "ETA 0 s" (at the thousandth: float noise of a
            # pace that is exactly 10 a second does not make 20 s read 21)
            parts.append(f"ETA {math.ceil(round((self.total - self.done) / pace, 3))} s")
        if self.failed:
            parts.append(f"{self.failed} failed")
        return ", ".join(parts)

    def _write(self, msg: str) -> None:
        end = self.done >= self.total
        if self.tty:
            self.stream.write(f"\r{msg}\x1b[K" + ("\n" if end else ""))
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()
        self.shown = not end

    def close(self) -> None:
        """End a line left open on a terminal (a run stopped before its total)."""
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()
        self.shown = False


@contextmanager
def one_run() -> Iterator[None]:
    """The steps inside are one run: its quiet period starts now (an outer run's stands)."""
    token = _RUN_START.set(_RUN_START.get() or time.monotonic())
    try:
        yield
    finally:
        _RUN_START.reset(token)


@contextmanager
def shown() -> Iterator[None]:
    """Steps deep inside a run (a big log's scan) report their progress while this is on: a
    command a person waits for turns it on; library calls, tests and batch workers (whose parent
    draws the batch's own line) stay silent."""
    token = _SHOWN.set(True)
    try:
        yield
    finally:
        _SHOWN.reset(token)


def progress_for(what: str, total: int, unit: str = "items") -> Progress | None:
    """A progress line for a step inside a run, or None when nobody asked for one (`shown`)."""
    return Progress(what, total, unit) if _SHOWN.get() else None
