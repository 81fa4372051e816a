"""The local executor of `batch`: worker processes on this machine, one pipe each.

Not `multiprocessing.Pool`: a Pool worker that dies mid-task leaves its task unanswered (the run
waits forever) and, killed while waiting for work, can leave the pool's shared lock taken (the
parent then hangs at exit). Here workers answer bundle by bundle, so the parent knows which
bundle each worker is on and since when:

- a worker that dies has the bundle it was on retried alone in a new worker; a bundle that kills
  its worker on its own becomes that row's error;
- a worker still on one bundle well past `--bundle-timeout` (stuck in one long C call, which the
  in-thread limit cannot interrupt) is killed and replaced; that bundle's row is its timeout;
- each worker extracts into its own folder under the run's temporary root, removed when the worker
  ends, killed or not; a worker whose parent is gone (kill -9 included) removes its folder and
  exits at once, and a run removes the roots that dead runs left.

Workers load the rules once, ignore Ctrl-C (the parent handles it) and exit silently.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field
from functools import partial
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from analyzer import startup
from analyzer.batch import BUNDLE_TIMEOUT
from analyzer.errors import AnalyzerError

if TYPE_CHECKING:
    from analyzer.batch.run import Executor, Task

# polars is imported with `analyzer.batch.run`, in each function that needs it: workers are
# started before the parent imports it (`LocalExecutor.__enter__`)

CHUNK = 4  # bundles sent to a worker at once (answered one by one)
RECYCLE = 500  # chunks a worker serves before a fresh process takes over (bounds any leak)
ROOT_PREFIX = "hami-batch-run-"  # + the parent's pid: the run's temporary root
STARTS = 3  # workers per job that may die before they are ready, before the run gives up


def watchdog_limit(timeout: float) -> float:
    """How long a worker may stay on one bundle before it is killed: the in-thread limit fires
    at `timeout`; past this margin the worker is stuck where it cannot be interrupted."""
    return timeout + max(5.0, timeout / 10)


def _serve(conn: Connection, parent: int, timeout: float, tmp: str) -> None:
    """A worker: chunks of tasks in, one result per task out, until the pipe closes."""
    from analyzer.batch.run import analyze_one, load_rules

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tempfile.tempdir = tmp  # every extraction of this worker lands in its own folder
    _exit_with(parent, tmp)
    load_rules()
    try:
        conn.send(None)  # ready: the rules are loaded, time the bundles from now on
        while True:
            for task in conn.recv():
                conn.send(analyze_one(task, timeout))
    except (EOFError, OSError):  # the parent closed the pipe or is gone: nothing to say
        _leave(tmp)


def _exit_with(parent: int, tmp: str) -> None:
    """Remove the worker's folder and exit at once, even mid-bundle, when the parent process is
    gone (kill -9 included)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        _leave(tmp)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _leave(tmp: str) -> NoReturn:
    """The worker's folder removed, and the run's root once its last worker has gone; then exit
    at once. Also where the pipe closes first: a worker waiting for its next task sees that
    before its watch sees the parent gone, and its folder stayed (a run killed with -9)."""
    shutil.rmtree(tmp, ignore_errors=True)
    with suppress(OSError):
        os.rmdir(os.path.dirname(tmp))
    os._exit(0)


def clear_stale_roots() -> None:
    """Remove the temporary roots of runs whose process is gone (a parent killed with -9
    while its workers were extracting), ours only."""
    for root in Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*"):
        pid = root.name[len(ROOT_PREFIX) :].split("-", 1)[0]
        with suppress(OSError, ValueError):
            if root.stat().st_uid == os.getuid() and not _alive(int(pid)):
                shutil.rmtree(root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class _Worker:
    conn: Connection
    proc: Any
    tmp: Path
    chunk: deque[Task] | None = None  # tasks sent and not answered; the first is in progress
    since: float = 0.0  # when the task in progress started (or the worker was fed)
    ready: bool = False
    served: int = 0


@dataclass
class LocalExecutor:
    """`jobs` spawned worker processes; with 0, this process itself (tests, debugging: no
    watchdog, and a stuck C call stops the run). Used as a context manager, it starts its
    workers on entering (with `timeout` as their bundles' limit), so that they import and load
    their rules (~0.25 s) while this process lists and fingerprints the bundles; otherwise each
    `results` starts its own."""

    jobs: int
    timeout: float = BUNDLE_TIMEOUT
    _ctx: Any = field(default_factory=lambda: get_context("spawn"), repr=False)
    _started: tuple[Path, list[_Worker]] | None = field(default=None, repr=False)

    def __enter__(self) -> LocalExecutor:
        if self.jobs > 0:
            self._started = self._fresh(self.jobs, self.timeout)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._started is not None:
            self._stop_all(*self._started)
            self._started = None

    def digests(self, paths: list[str]) -> list[str]:
        from analyzer.batch.run import bundle_digest

        return [bundle_digest(p) for p in paths]

    def results(self, tasks: list[Task], timeout: float) -> Iterator[dict | None]:
        from analyzer.batch.run import TICK, analyze_one, load_rules

        if self.jobs <= 0:
            load_rules()
            yield from map(partial(analyze_one, timeout=timeout), tasks)
            return
        pending = deque(deque(tasks[i : i + CHUNK]) for i in range(0, len(tasks), CHUNK))
        self._suspects: set[str] = set()
        early_deaths = 0
        root, workers = self._workers(min(self.jobs, len(pending)), timeout)
        try:
            while pending or any(w.chunk for w in workers):
                waits = [w.conn for w in workers] + [w.proc.sentinel for w in workers]
                if not wait(waits, TICK):
                    yield None
                retired: set[int] = set()  # stopped with no work left for a fresh one
                for i, w in enumerate(workers):
                    done, dead = self._answers(w)
                    yield from done
                    if dead:
                        early_deaths += not w.ready
                        if early_deaths > STARTS * self.jobs:
                            raise AnalyzerError(
                                "batch workers keep dying before they are ready "
                                f"(exit code {w.proc.exitcode})"
                            )
                        yield from self._lost(w, pending)
                    elif w.chunk and time.monotonic() - w.since > watchdog_limit(timeout):
                        yield self._overran(w, pending, timeout)
                    elif w.chunk or not w.ready:
                        continue  # busy, or still loading its rules
                    elif w.served < RECYCLE or not pending:
                        self._feed(w, pending)  # idle: its next chunk, if any is left
                        continue
                    self._stop(w)  # dead, stuck or served its share: a fresh one if work is left
                    if pending:
                        workers[i] = self._start(timeout, root)
                    else:
                        retired.add(i)
                workers = [w for i, w in enumerate(workers) if i not in retired]
        finally:
            self._stop_all(root, workers)

    def _workers(self, n: int, timeout: float) -> tuple[Path, list[_Worker]]:
        """`n` workers with this bundle limit, and their temporary root: those started on
        entering (the rest stopped), else new ones."""
        if self._started is not None:
            root, started = self._started
            self._started = None
            if timeout == self.timeout:
                for w in started[n:]:
                    self._stop(w)
                return root, started[:n]
            self._stop_all(root, started)
        return self._fresh(n, timeout)

    def _fresh(self, n: int, timeout: float) -> tuple[Path, list[_Worker]]:
        """`n` workers started now under a new temporary root (once the roots that dead runs
        left are gone)."""
        clear_stale_roots()
        root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-"))
        return root, [self._start(timeout, root) for _ in range(n)]

    def _start(self, timeout: float, root: Path) -> _Worker:
        conn, child = self._ctx.Pipe()
        tmp = Path(tempfile.mkdtemp(prefix="w", dir=root))
        proc = self._ctx.Process(
            target=startup.spawned,
            args=(f"{__name__}:_serve", child, os.getpid(), timeout, str(tmp)),
            daemon=True,
        )
        proc.start()
        child.close()
        return _Worker(conn, proc, tmp)

    @staticmethod
    def _answers(w: _Worker) -> tuple[list[dict], bool]:
        """The results a worker has sent (it is ready after its first message), and whether it
        is gone."""
        out: list[dict] = []
        try:
            while w.conn.poll():
                msg = w.conn.recv()
                w.since = time.monotonic()
                if msg is None:
                    w.ready = True
                elif w.chunk:
                    w.chunk.popleft()
                    out.append(msg)
        except (EOFError, OSError):  # EOF: it died, maybe mid-answer
            return out, True
        return out, w.proc.exitcode is not None

    def _feed(self, w: _Worker, pending: deque[deque[Task]]) -> None:
        w.chunk = None
        if pending:
            w.chunk = pending.popleft()
            w.served += 1
            w.since = time.monotonic()
            w.conn.send(list(w.chunk))

    def _lost(self, w: _Worker, pending: deque[deque[Task]]) -> Iterator[dict]:
        """A worker died: the bundle it was on is retried alone; one that kills its worker on
        its own is the culprit and gets the error. The rest of its chunk goes back in line."""
        w.proc.join(timeout=5)
        chunk, w.chunk = w.chunk or deque(), None
        if not chunk:
            return
        head = chunk.popleft()
        if chunk:
            pending.appendleft(chunk)
        if head[0] not in self._suspects:
            self._suspects.add(head[0])
            pending.appendleft(deque([head]))
            return
        from analyzer.batch.run import failed_result

        error = f"the worker process died on it (exit code {w.proc.exitcode})"
        yield failed_result({"id": head[0], "path": head[1]}, error)

    def _overran(self, w: _Worker, pending: deque[deque[Task]], timeout: float) -> dict:
        """The worker is stuck on its bundle past the in-thread limit: kill it (it is then
        replaced); the bundle's row is its timeout, the rest of its chunk goes back in line."""
        from analyzer.batch.run import failed_result

        w.proc.kill()
        w.proc.join(timeout=5)
        chunk, w.chunk = w.chunk or deque(), None
        head = chunk.popleft()
        if chunk:
            pending.appendleft(chunk)
        return failed_result({"id": head[0], "path": head[1]}, f"timed out after {timeout:g}s")

    def _stop_all(self, root: Path, workers: list[_Worker]) -> None:
        """These workers stopped, and their temporary root removed."""
        for w in workers:
            self._stop(w)
        shutil.rmtree(root, ignore_errors=True)

    @staticmethod
    def _stop(w: _Worker) -> None:
        # interrupted mid-chunk (Ctrl-C): its result is not wanted; still starting (more workers
        # were started than a run had chunks for): it would read the closed pipe only once ready
        if w.chunk or not w.ready:
            w.proc.kill()
        w.conn.close()  # an idle worker reads EOF and exits
        w.proc.join(timeout=5)
        if w.proc.is_alive():
            w.proc.kill()
            w.proc.join()
        shutil.rmtree(w.tmp, ignore_errors=True)


def check_inputs(inputs: list[str]) -> None:
    """A missing input is a usage error before any work starts (paths and URLs alike)."""
    from analyzer.batch.io import is_url, url_exists

    for spec in inputs:
        if not (url_exists(spec) if is_url(spec) else Path(spec).exists()):
            raise AnalyzerError(f"{spec}: no such file or directory")


def open_executor(
    name: str, scheduler: str | None, jobs: int | None, timeout: float = BUNDLE_TIMEOUT
) -> AbstractContextManager[Executor]:
    """`--executor local|dask` and `--scheduler ADDR` (which implies dask); `--jobs 0` analyses
    in this process (no worker, no watchdog: for debugging, and for `memory://` stores). The
    local workers start on entering (`timeout`: their bundles' limit)."""
    if jobs is not None and jobs < 0:
        raise AnalyzerError("--jobs must be 0 (this process) or a number of worker processes")
    if scheduler or name == "dask":
        from analyzer.batch.dask import DaskExecutor

        return DaskExecutor(scheduler, jobs or None)
    if name != "local":
        raise AnalyzerError(f"unknown executor {name!r}: use local or dask")
    return LocalExecutor((os.cpu_count() or 1) if jobs is None else jobs, timeout)
