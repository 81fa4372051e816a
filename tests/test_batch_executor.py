"""The local executor started as a context manager (analyzer/batch/executor.py): its workers
start on entering, while the parent lists the bundles, and the run uses those; none outlives
the block, however it is left."""

from __future__ import annotations

import signal
import time

import pytest

from analyzer.batch.executor import LocalExecutor
from conftest import SAMPLES

SAMPLE_NAMES = ["healthy-single-gpu", "no-gpu-label", "rbac-patch-forbidden"]


def _tasks(n: int) -> list[tuple[str, str, None]]:
    names = (SAMPLE_NAMES * n)[:n]
    return [(f"b{i}-{name}", str(SAMPLES / name / "bundle"), None) for i, name in enumerate(names)]


def _answers(ex: LocalExecutor, tasks, timeout: float) -> dict[str, dict]:
    return {r["row"]["id"]: r for r in ex.results(tasks, timeout) if r is not None}


def _gone(workers) -> bool:
    deadline = time.monotonic() + 10
    while any(w.proc.is_alive() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(w.proc.is_alive() for w in workers)


@pytest.fixture
def starts(monkeypatch) -> list[float]:
    """The bundle limit of every worker started from now on."""
    made: list[float] = []
    real = LocalExecutor._start

    def start(self, timeout, root):
        made.append(timeout)
        return real(self, timeout, root)

    monkeypatch.setattr(LocalExecutor, "_start", start)
    return made


def test_the_run_uses_the_workers_started_on_entering(starts):
    tasks = _tasks(9)  # three chunks: both workers get work
    with LocalExecutor(2, timeout=60.0) as ex:
        assert ex._started is not None
        root, workers = ex._started
        assert starts == [60.0, 60.0] and all(w.proc.is_alive() for w in workers)
        got = _answers(ex, tasks, 60.0)
        assert starts == [60.0, 60.0], "the run started workers of its own"
        assert _gone(workers) and not root.exists()
    assert sorted(got) == sorted(t[0] for t in tasks)
    assert all(r["row"].get("error") is None and r["row"]["category"] for r in got.values())


def test_a_block_left_before_its_run_stops_the_started_workers(starts):
    with pytest.raises(KeyboardInterrupt), LocalExecutor(2) as ex:
        root, workers = ex._started
        raise KeyboardInterrupt
    assert _gone(workers) and not root.exists() and ex._started is None


def test_a_run_of_one_chunk_keeps_one_started_worker(starts):
    with LocalExecutor(2, timeout=60.0) as ex:
        _root, workers = ex._started
        got = _answers(ex, _tasks(2), 60.0)
        assert starts == [60.0, 60.0]
        assert _gone(workers)
    assert len(got) == 2


def test_a_run_with_another_time_limit_starts_workers_with_it(starts):
    with LocalExecutor(2, timeout=60.0) as ex:
        old_root, started = ex._started
        got = _answers(ex, _tasks(9), 30.0)
        assert starts == [60.0, 60.0, 30.0, 30.0]
        assert _gone(started) and not old_root.exists()
    assert len(got) == 9


def test_without_entering_each_run_starts_its_own(starts):
    ex = LocalExecutor(2)
    assert len(_answers(ex, _tasks(9), 45.0)) == 9
    assert starts == [45.0, 45.0]


def test_a_worker_still_starting_is_killed_when_stopped(tmp_path):
    """More workers start than a short run has chunks for: one not ready yet would read the
    closed pipe only once it has imported everything and loaded its rules."""
    ex = LocalExecutor(1)
    w = ex._start(60.0, tmp_path)
    assert not w.ready
    LocalExecutor._stop(w)
    assert w.proc.exitcode == -signal.SIGKILL and not w.tmp.exists()


def test_a_worker_whose_pipe_closes_removes_its_folder(tmp_path):
    """A worker waiting for its next task when the run dies sees its pipe close before its
    watch sees the parent gone (a run killed with -9): it removes its folder, and the run's root
    once it is the last, all the same."""
    root = tmp_path / "root"
    root.mkdir()
    w = LocalExecutor(1)._start(60.0, root)
    assert w.conn.poll(60) and w.conn.recv() is None  # ready: waiting for its first task
    w.conn.close()
    w.proc.join(30)
    assert w.proc.exitcode == 0
    assert not w.tmp.exists() and not root.exists()
