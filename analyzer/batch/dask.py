"""The Dask executor of `batch`: the per-bundle analysis on a `dask.distributed` cluster.

Workers import `analyzer` (install the same version on them) and load the rules once per worker
process (`batch.load_rules`). Each bundle is one task; a task of a worker that dies is run again
by the scheduler on another worker, so every bundle gives exactly one result. A bundle that kills
every worker it lands on (the scheduler gives up after `allowed-failures`) becomes an error row.
The parent only writes the parts and tables: digests and analyses both read the bundles on the
workers, where the data is (fsspec URLs).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analyzer.batch.run import TICK, Task, analyze_one, bundle_digest, failed_result
from analyzer.errors import AnalyzerError

if TYPE_CHECKING:
    from dask.distributed import Client

DIGEST_CHUNK = 100  # paths per digest task: one task per tiny digest would cost more than it
_END = object()


def _digest_chunk(paths: list[str]) -> list[str]:
    return [bundle_digest(p) for p in paths]


@dataclass
class DaskExecutor:
    """A cluster at `scheduler` (tcp://HOST:8786), or a local cluster of `workers` processes."""

    scheduler: str | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        try:
            import dask
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise AnalyzerError(
                "the dask executor needs dask.distributed: pip install 'hami-bundle-analyzer[dask]'"
            ) from None
        self._cluster, self._client = None, None
        if self.scheduler is None:
            self._cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,  # the analysis holds the GIL: processes, not threads
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        try:
            self._client = Client(
                self._cluster or self.scheduler,
                timeout=dask.config.get("distributed.comm.timeouts.connect"),
            )
        except (OSError, ValueError) as exc:  # unreachable, timed out, or not an address
            self.close()
            raise AnalyzerError(
                f"cannot reach the Dask scheduler {self.scheduler}: {exc}"
            ) from None

    @property
    def client(self) -> Client:
        """The connected client (set by __post_init__, which raises when it cannot connect)."""
        if self._client is None:
            raise AnalyzerError("the Dask executor is closed")
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def digests(self, paths: list[str]) -> list[str]:
        chunks = [paths[i : i + DIGEST_CHUNK] for i in range(0, len(paths), DIGEST_CHUNK)]
        futures = self.client.map(_digest_chunk, chunks, pure=False)
        return [d for chunk in self.client.gather(futures) for d in chunk]

    def results(self, tasks: list[Task], timeout: float) -> Iterator[dict | None]:
        from dask.distributed import as_completed

        run = uuid.uuid4().hex[:12]  # keys of this run only: a shared scheduler keeps others
        by_key = {f"hami-bundle-{run}-{i}": task for i, task in enumerate(tasks)}
        futures = self.client.map(
            analyze_one, list(by_key.values()), key=list(by_key), timeout=timeout
        )
        pending = as_completed(futures)  # holds each future until it is yielded, then lets go
        del futures
        done: queue.Queue[Any] = queue.Queue()

        def pump() -> None:
            try:
                for fut in pending:
                    done.put(fut)
            finally:
                done.put(_END)

        threading.Thread(target=pump, name="dask-results", daemon=True).start()
        while True:
            try:
                fut = done.get(timeout=TICK)
            except queue.Empty:
                yield None
                continue
            if fut is _END:
                return
            yield _result(fut, by_key.pop(fut.key))


def _result(fut, task: Task) -> dict[str, Any]:
    """The task's result, or an error row when the cluster could not run it."""
    try:
        return fut.result()
    except (Exception, asyncio.CancelledError) as exc:  # KilledWorker, a cancelled task
        return failed_result({"id": task[0], "path": task[1]}, f"dask: {type(exc).__name__}: {exc}")
