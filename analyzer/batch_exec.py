"""The local executor of `batch`: worker processes on this machine.

Workers load the rules once, ignore Ctrl-C (the parent handles it) and die with their parent:
after a `kill -9` of the parent they exit at once and silently instead of printing BrokenPipe
tracebacks while they finish their queue.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from functools import partial
from multiprocessing import TimeoutError as PoolTimeout
from multiprocessing import get_context
from pathlib import Path

from analyzer.batch import TICK, Executor, analyze_one, bundle_digest, load_rules
from analyzer.errors import AnalyzerError

CHUNK = 4  # bundles per round trip to a worker
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def init_worker(parent: int) -> None:
    """Pool initializer: rules loaded once, Ctrl-C left to the parent, death with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    load_rules()


def _die_with(parent: int) -> None:
    """Exit at once when `parent` is gone: the kernel's parent-death signal where there is one
    (Linux), and a watcher thread everywhere (also covers a parent that died before prctl)."""
    if sys.platform == "linux":
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@dataclass
class LocalExecutor:
    """`jobs` spawned worker processes; with one job, this process (no pool at all)."""

    jobs: int

    def digests(self, paths: list[str]) -> list[str]:
        return [bundle_digest(p) for p in paths]

    def results(self, tasks: list[tuple[str, str]], timeout: float) -> Iterator[dict | None]:
        if self.jobs == 1:
            load_rules()
            yield from map(partial(analyze_one, timeout=timeout), tasks)
            return
        chunks = [tasks[i : i + CHUNK] for i in range(0, len(tasks), CHUNK)]
        with get_context("spawn").Pool(
            self.jobs, initializer=init_worker, initargs=(os.getpid(),), maxtasksperchild=500
        ) as pool:
            it = pool.imap_unordered(partial(_analyze_chunk, timeout=timeout), chunks)
            while True:
                try:
                    yield from it.next(timeout=TICK)
                except PoolTimeout:
                    yield None
                except StopIteration:
                    return


def _analyze_chunk(chunk: list[tuple[str, str]], timeout: float) -> list[dict]:
    return [analyze_one(task, timeout) for task in chunk]


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
