"""Work spread over forked worker processes where they start, else over threads.

Threads share Python's lock, and the Hyperscan binding takes it back for every match it reports:
while one thread holds it (its own Python work), the other's scan waits at its next match. A
forked process inherits what it serves (a function: nothing is pickled but each task's arguments
and result), or imports it (a "module:function" name, the module's `warm_up` run first), and runs
beside the others. `prestarted` forks the processes of a `Workers` to come early, before the
parent imports what it needs meanwhile (the byte scan's, as `analyze` starts: they import numpy
while the parent imports polars). Threads remain off Linux, on one
core, in a daemonic process (a `batch` worker may not have children) and where the processes do
not start and answer in time; a process that dies (the out-of-memory killer) leaves its task, and
the rest, to threads.

A forked child must not use polars' thread pool (its threads are not forked: a parallel
expression waits for them forever); the work served here uses Hyperscan, numpy and Python."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from importlib import import_module
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")
PROCESS_START_S = 10.0  # forked processes that do not answer by then are given up
KILLED_JOIN_S = 1.0  # a killed process is waited for this long (it dies at once)
Serve = Callable[..., Any] | str  # a function, or its name: "module:function"


class Workers(Generic[T]):
    """`serve(*args)` run by forked processes (`fork_pool`, or the ones `prestarted` forked for
    this `serve` and number), else by threads."""

    def __init__(self, serve: Serve, workers: int):
        self.serve = serve
        self.workers = workers
        early = _take_prestarted(serve, workers)
        self.prestarted = early is not None  # given back when closed, for the next such Workers
        self.processes = early or fork_pool(serve, workers)
        self.threads = ThreadPoolExecutor(workers) if self.processes is None else None
        self.pending: set[Future] = set()  # submitted, result not taken

    def submit(self, *args: Any) -> Future[T]:
        """`serve(*args)` under way."""
        if self.processes is not None:
            with contextlib.suppress(BrokenProcessPool):
                future = self.processes.submit(_serve_adopted, *args)
                self.pending.add(future)
                return future
            self._to_threads()
        assert self.threads is not None
        return self.threads.submit(_function(self.serve), *args)

    def result(self, args: tuple, future: Future[T]) -> T:
        """The submitted task's result (run again here if its process died)."""
        self.pending.discard(future)
        try:
            return future.result()
        except BrokenProcessPool:
            self._to_threads()
            return _function(self.serve)(*args)

    def _to_threads(self) -> None:
        if self.processes is not None:
            self.processes.shutdown(wait=True, cancel_futures=True)
            self.processes = None
        if self.threads is None:
            self.threads = ThreadPoolExecutor(self.workers)

    def close(self) -> None:
        """Shut the processes and threads down; prestarted processes with no task left go back
        to the `prestarted` that forked them (a bundle's next big log is scanned by them)."""
        if self.prestarted and self.processes is not None and not self.pending:
            _give_back(cast(str, self.serve), self.workers, self.processes)
            self.processes = None
        for pool in (self.processes, self.threads):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Workers[T]:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def fork_pool(serve: Serve, workers: int) -> ProcessPoolExecutor | None:
    """`workers` processes forked from this one, each serving `serve` (a function inherited, not
    pickled; a name imported), started and answering; None on one core, off Linux, in a daemonic process or where they
    cannot start (no semaphores, a process limit, a child stuck on a lock some thread held when
    it was forked)."""
    started = _fork(serve, workers)
    return _answering(*started) if started is not None else None


_EARLY: dict[tuple[str, int], tuple[ProcessPoolExecutor, Future]] = {}  # by `prestarted`
_OPEN: set[tuple[str, int]] = set()  # the `prestarted` under way


@contextlib.contextmanager
def prestarted(serve: str, workers: int) -> Iterator[None]:
    """The processes of a `Workers(serve, workers)` to come forked now, without waiting for them:
    each imports serve's module, one after the other (this process has imports of its own to do
    meanwhile, on the other core). Ended on the way out if no `Workers` took them."""
    if (serve, workers) in _OPEN:  # already under way
        yield
        return
    started = _fork(serve, workers, one_at_a_time=True)
    if started is not None:
        _EARLY[serve, workers] = started
    _OPEN.add((serve, workers))
    try:
        yield
    finally:
        _OPEN.discard((serve, workers))
        left = _EARLY.pop((serve, workers), None)
        if left is not None:
            _kill(left[0])


def _give_back(serve: str, workers: int, pool: ProcessPoolExecutor) -> None:
    """A `Workers`' prestarted processes, idle again: kept for the next one while their
    `prestarted` is under way, else ended."""
    if (serve, workers) in _OPEN and (serve, workers) not in _EARLY:
        answered: Future = Future()
        answered.set_result(None)
        _EARLY[serve, workers] = (pool, answered)
    else:
        _kill(pool)


def _take_prestarted(serve: Serve, workers: int) -> ProcessPoolExecutor | None:
    """The processes `prestarted` forked for this serve and number, answering (taken: once)."""
    started = _EARLY.pop((serve, workers), None) if isinstance(serve, str) else None
    return _answering(*started) if started is not None else None


def _fork(
    serve: Serve, workers: int, one_at_a_time: bool = False
) -> tuple[ProcessPoolExecutor, Future] | None:
    """The forked processes, and a task whose result says they answer."""
    import multiprocessing

    if workers < 2 or sys.platform != "linux" or multiprocessing.current_process().daemon:
        return None
    pool = None
    # a Ctrl-C from the terminal reaches the whole process group: it waits in a new process
    # until that process ignores it (a child forked from this thread inherits its mask)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        fork = multiprocessing.get_context("fork")
        lock = fork.Lock() if one_at_a_time else None
        initargs = (serve, os.getpid(), lock)
        pool = ProcessPoolExecutor(workers, fork, initializer=_adopt, initargs=initargs)
        return pool, pool.submit(int)  # the processes are forked at the first task
    except BaseException as exc:  # OSError, KeyboardInterrupt
        _kill(pool)
        if not isinstance(exc, Exception):
            raise
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _answering(pool: ProcessPoolExecutor, probe: Future) -> ProcessPoolExecutor | None:
    """The pool once its first task is done, or None (killed) where it is not in time."""
    try:
        probe.result(timeout=PROCESS_START_S)
        return pool
    except BaseException as exc:  # BrokenProcessPool, TimeoutError, KeyboardInterrupt
        _kill(pool)
        if not isinstance(exc, Exception):
            raise
        return None


def _kill(pool: ProcessPoolExecutor | None) -> None:
    """The pool's processes killed and reaped: left to `init` when the command leaves by
    `os._exit`, their CPU was missing from what the command's parent is told it used (the
    bench's CPU column printed less than the wall for a log scanned by prestarted processes)."""
    if pool is not None:
        processes = list(getattr(pool, "_processes", {}).values())
        for process in processes:
            process.kill()
        for process in processes:
            process.join(KILLED_JOIN_S)
        pool.shutdown(wait=False, cancel_futures=True)


def _function(serve: Serve) -> Callable[..., Any]:
    """`serve`, its module imported where it is given by name."""
    if isinstance(serve, str):
        module, name = serve.split(":")
        return getattr(import_module(module), name)
    return serve


_ADOPTED: list[Callable[..., Any]] = []  # in a worker process: what it serves


def _adopt(serve: Serve, parent: int, lock: Any = None) -> None:
    """A worker process starts: it leaves Ctrl-C to its parent, ends at SIGTERM (not through
    the parent's handler), dies with its parent (kill -9 included; else it would wait for work
    forever) and keeps what it serves (given by name: imported, holding `lock` if given, and
    its module's `warm_up` run)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # gone before that took effect
        os._exit(0)
    with lock if lock is not None else contextlib.nullcontext():
        _ADOPTED[:] = [_function(serve)]
        if isinstance(serve, str):  # its module's `warm_up`, if it has one, before any task
            getattr(import_module(serve.split(":")[0]), "warm_up", lambda: None)()


def _serve_adopted(*args: Any) -> Any:
    return _ADOPTED[0](*args)
