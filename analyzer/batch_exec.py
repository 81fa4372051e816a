"""The local executor of `batch`: worker processes on this machine, one pipe each.

Not `multiprocessing.Pool`: a Pool worker that dies mid-task leaves its task unanswered (the run
waits forever) and, killed while waiting for work, can leave the pool's shared lock taken (the
parent then hangs at exit). Here the parent knows which chunk each worker holds: a worker that
dies has its chunk retried bundle by bundle in a new worker, and a bundle that kills a worker on
its own becomes that row's error. Workers load the rules once, ignore Ctrl-C (the parent handles
it) and exit at once and silently when the parent is gone (closed pipe, or a watcher thread).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from functools import partial
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from analyzer.batch import (
    TICK,
    Executor,
    Task,
    analyze_one,
    bundle_digest,
    failed_result,
    load_rules,
)
from analyzer.errors import AnalyzerError

CHUNK = 4  # bundles per round trip to a worker
RECYCLE = 500  # chunks a worker serves before a fresh process takes over (bounds any leak)


def _serve(conn: Connection, parent: int, timeout: float) -> None:
    """A worker: chunks of tasks in, their results out, until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with(parent)
    load_rules()
    while True:
        try:
            chunk = conn.recv()
            conn.send([analyze_one(task, timeout) for task in chunk])
        except (EOFError, OSError):  # the parent closed the pipe or is gone: nothing to say
            os._exit(0)


def _exit_with(parent: int) -> None:
    """Exit at once, even mid-bundle, when the parent process is gone (kill -9 included)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@dataclass
class _Worker:
    conn: Connection
    proc: Any
    chunk: list[Task] | None = None
    served: int = 0


@dataclass
class LocalExecutor:
    """`jobs` spawned worker processes; with one job, this process (no workers at all)."""

    jobs: int
    _ctx: Any = field(default_factory=lambda: get_context("spawn"), repr=False)

    def digests(self, paths: list[str]) -> list[str]:
        return [bundle_digest(p) for p in paths]

    def results(self, tasks: list[Task], timeout: float) -> Iterator[dict | None]:
        if self.jobs == 1:
            load_rules()
            yield from map(partial(analyze_one, timeout=timeout), tasks)
            return
        pending = deque(tasks[i : i + CHUNK] for i in range(0, len(tasks), CHUNK))
        workers = [self._start(timeout) for _ in range(min(self.jobs, len(pending)))]
        try:
            for w in workers:
                self._feed(w, pending)
            while busy := [w for w in workers if w.chunk is not None]:
                ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], TICK)
                if not ready:
                    yield None
                for w in busy:
                    results = None
                    if w.conn in ready:
                        with suppress(EOFError, OSError):  # EOF: it died, maybe mid-answer
                            results = w.conn.recv()
                    elif w.proc.sentinel not in ready:
                        continue
                    if results is None:
                        w.proc.join(timeout=5)
                        yield from self._lost(w, pending)
                    else:
                        w.chunk = None
                        yield from results
                    if w.served >= RECYCLE or not w.proc.is_alive():
                        self._stop(w)
                        workers[workers.index(w)] = w = self._start(timeout)
                    self._feed(w, pending)
        finally:
            for w in workers:
                self._stop(w)

    def _start(self, timeout: float) -> _Worker:
        conn, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(child, os.getpid(), timeout), daemon=True)
        proc.start()
        child.close()
        return _Worker(conn, proc)

    @staticmethod
    def _feed(w: _Worker, pending: deque[list[Task]]) -> None:
        if pending:
            w.chunk = pending.popleft()
            w.served += 1
            w.conn.send(w.chunk)

    @staticmethod
    def _lost(w: _Worker, pending: deque[list[Task]]) -> Iterator[dict]:
        """A worker died on its chunk: retry the chunk one bundle at a time; a lone bundle that
        kills its worker is the culprit and gets the error."""
        chunk, w.chunk = w.chunk or [], None
        if len(chunk) > 1:
            pending.extendleft([t] for t in reversed(chunk))
            return
        error = f"the worker process died on it (exit code {w.proc.exitcode})"
        for bid, path, *_ in chunk:
            yield failed_result({"id": bid, "path": path}, error)

    @staticmethod
    def _stop(w: _Worker) -> None:
        if w.chunk is not None:  # interrupted mid-chunk (Ctrl-C): its result is not wanted
            w.proc.kill()
        w.conn.close()  # an idle worker reads EOF and exits
        w.proc.join(timeout=5)
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join()


def check_inputs(inputs: list[str]) -> None:
    """A missing input is a usage error before any work starts (paths and URLs alike)."""
    from analyzer.batch_io import is_url, url_exists

    for spec in inputs:
        if not (url_exists(spec) if is_url(spec) else Path(spec).exists()):
            raise AnalyzerError(f"{spec}: no such file or directory")


def open_executor(
    name: str, scheduler: str | None, jobs: int | None
) -> AbstractContextManager[Executor]:
    """`--executor local|dask` and `--scheduler ADDR` (which implies dask)."""
    if scheduler or name == "dask":
        from analyzer.batch_dask import DaskExecutor

        return DaskExecutor(scheduler, jobs)
    if name != "local":
        raise AnalyzerError(f"unknown executor {name!r}: use local or dask")
    return nullcontext(LocalExecutor(jobs or os.cpu_count() or 1))
