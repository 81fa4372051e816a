"""The byte scan's processes forked as `analyze` starts (analyzer/parse/scanstart.py): before the
analysis's modules are imported, taken by the scan, ended when no scan takes them; the command
itself never imports numpy, and its report is the one an analysis without them makes."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from analyzer.parse import scanstart, workers
from conftest import REPO

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="processes are forked on Linux")
SERVE = "serve_probe:answer"


@linux_only
def test_prestarted_processes_are_taken_by_the_workers_of_their_serve_and_given_back():
    with workers.prestarted(SERVE, 2):
        (pool, _probe) = workers._EARLY[SERVE, 2]
        early = set(pool._processes)
        answers = []
        for _ in range(2):  # a bundle's two big logs, one after the other
            taken = workers.Workers(SERVE, 2)
            assert taken.processes is pool and not workers._EARLY  # taken
            try:
                answers += [taken.result((), taken.submit()) for _ in range(6)]
            finally:
                taken.close()
            assert workers._EARLY[SERVE, 2][0] is pool  # given back, idle
        processes = list(pool._processes.values())
    assert not workers._EARLY
    pids = {pid for pid, _ in answers}
    assert pids <= early and os.getpid() not in pids
    # each process ran its module's warm_up before its first task, in itself
    assert all(warmed == [pid] for pid, warmed in answers)
    _ended(processes)


@linux_only
def test_prestarted_processes_with_a_task_under_way_are_not_given_back():
    with workers.prestarted(SERVE, 2):
        taken = workers.Workers(SERVE, 2)
        taken.submit()  # its result never taken: the scan stopped half-way
        taken.close()
        assert not workers._EARLY


def _ended(processes) -> None:
    deadline = time.monotonic() + 10
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(p.is_alive() for p in processes)


@linux_only
def test_prestarted_processes_no_workers_took_are_ended_on_the_way_out():
    with workers.prestarted(SERVE, 2):
        (pool, _probe) = workers._EARLY[SERVE, 2]
        processes = list(pool._processes.values())
    assert not workers._EARLY
    _ended(processes)


@linux_only
def test_processes_ended_on_the_way_out_are_reaped_at_once():
    """Not zombies left for `init` when the command leaves by os._exit: their CPU then counts as
    the command's (the bench's CPU column) and none outlives it. Reaped, whoever reaped it: the
    pool's own thread, which sees the first one die, races the kill's wait for the others, and a
    process it reaped reads as alive (`exitcode` None) until that thread gets the lock back."""
    with workers.prestarted(SERVE, 2):
        taken = workers.Workers(SERVE, 2)
        try:
            taken.result((), taken.submit())
        finally:
            taken.close()  # idle: given back, then killed as the block ends
        processes = list(workers._EARLY[SERVE, 2][0]._processes.values())
    assert processes
    for p in processes:  # no wait needed: neither running nor a zombie
        with pytest.raises(ChildProcessError):  # already reaped
            os.waitpid(p.pid, os.WNOHANG)


def test_workers_for_another_serve_or_number_fork_their_own(monkeypatch):
    with workers.prestarted(SERVE, 2):
        others = [workers.Workers(SERVE, 3), workers.Workers("serve_probe:warm_up", 2)]
        for w in others:
            w.close()
        if sys.platform == "linux":
            assert (SERVE, 2) in workers._EARLY
    assert not workers._EARLY


def test_a_big_file_in_an_input_or_its_folders_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(scanstart, "SMALL_FILE", 100)
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "small.log").write_bytes(b"x" * 100)
    big = tmp_path / "a" / "b" / "big.log"
    big.write_bytes(b"x" * 101)
    (tmp_path / "p").mkdir()
    packed = tmp_path / "p" / "logs.tgz"
    packed.write_bytes(gzip.compress(b"x" * 1000))  # 29 bytes
    for inputs, found in [
        ([str(tmp_path / "a" / "small.log")], False),
        ([str(tmp_path / "missing")], None),  # the command says it is missing
        (["-"], None),  # standard input: its size is not known here
        ([str(tmp_path / "a" / "small.log"), "-"], None),
        ([str(tmp_path / "a" / "small.log"), str(big)], True),
        ([str(tmp_path)], True),  # two folders down
        ([str(packed)], None),  # a small archive may hold a big log
        ([str(tmp_path / "a" / "small.log"), str(tmp_path / "p")], None),
    ]:
        assert scanstart.holds_big_file(inputs) is found, inputs
    monkeypatch.setattr(scanstart, "LOOKED_AT", 2)  # a huge folder is not walked through
    for i in range(5):
        (tmp_path / "a" / f"other-{i}").write_bytes(b"")
    assert scanstart.holds_big_file([str(tmp_path / "a")]) is None
    big.unlink()
    (tmp_path / "a" / "b").rmdir()
    monkeypatch.setattr(scanstart, "LOOKED_AT", 6)  # as many as the entries left
    assert scanstart.holds_big_file([str(tmp_path / "a")]) is False


def test_the_scan_processes_start_only_when_asked(monkeypatch):
    started = []
    monkeypatch.setattr(workers, "_fork", lambda *a, **k: started.append(a) or None)
    with scanstart.scan_processes(False):
        pass
    assert not started
    with scanstart.scan_processes(True):
        pass
    assert started and started[0][0] == scanstart.SCAN_CHUNK


KLOG = [
    'E0815 10:00:00.000001  412873 register.go:168] "failed to get numa information from sysfs"',
    "I0815 10:00:00.000002  412873 register.go:302] Updating node annotations with 2 device(s)",
    "I0815 10:00:00.000005  1 notes.go:1] running HAMI V2.7.1 on this node",
    "E0815 10:00:00.000007  412873 other.go:1] unmatched error",
]


@linux_only
def test_the_command_forks_its_scan_processes_before_polars_and_never_imports_numpy(tmp_path):
    """A bundle with two logs over SMALL_FILE through the real entry point: the scan processes
    are forked before polars is imported and scan both logs, the command's own process never
    imports numpy (the chunks' findings come back in a module without it), and the JSON report
    is the one the analysis makes without early processes."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(REPO / "sample_bundles" / "healthy-single-gpu" / "bundle" / "node.yaml", bundle)
    line = ("\n".join(KLOG) + "\n").encode()
    big = line * ((scanstart.SMALL_FILE // len(line)) + 50)
    (bundle / "device-plugin.log").write_bytes(big)
    (bundle / "device-plugin-previous.log").write_bytes(big[: -len(line)])
    code = (
        "import os, runpy, sys\n"
        "from analyzer.parse import workers\n"
        "fork = workers._fork\n"
        "def noted(*a, **k):\n"
        "    os.write(2, f'fork polars={\"polars\" in sys.modules}\\n'.encode())\n"
        "    return fork(*a, **k)\n"
        "workers._fork = noted\n"
        "take = workers._take_prestarted\n"
        "def taken(*a):\n"
        "    pool = take(*a)\n"
        "    os.write(2, f'taken {pool is not None}\\n'.encode())\n"
        "    return pool\n"
        "workers._take_prestarted = taken\n"
        "exit = os._exit\n"
        "os._exit = lambda code: (os.write(2, f'end numpy={\"numpy\" in sys.modules}\\n'.encode()),"
        " os.write(2, f'threads {sys.modules[\"polars\"].thread_pool_size()}\\n'.encode()),"
        " exit(code))\n"
        "sys.argv = ['hami-analyzer', 'analyze', sys.argv[1], '--format', 'json']\n"
        "runpy.run_module('analyzer', run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(bundle)], capture_output=True, text=True, cwd=REPO, env=env
    )
    notes = [x for x in proc.stderr.splitlines() if x.startswith(("fork ", "end "))]
    assert notes[0] == "fork polars=False" and notes[-1] == "end numpy=False", proc.stderr
    # a big log's analysis keeps polars' whole pool
    whole = subprocess.run(
        [sys.executable, "-c", "import polars; print(polars.thread_pool_size())"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    assert f"threads {whole}" in proc.stderr.splitlines(), proc.stderr
    # both logs were scanned by them
    assert proc.stderr.splitlines().count("taken True") == 2, proc.stderr
    from analyzer.analyze import AnalyzeOptions, analyze
    from analyzer.render.jsonout import render_json
    from analyzer.rules.loader import load_ruleset

    expected = render_json(analyze([str(bundle)], AnalyzeOptions(ruleset=load_ruleset())).report)
    assert json.loads(proc.stdout) == json.loads(expected)


def test_a_small_bundle_forks_nothing_imports_no_process_pool_and_gives_polars_one_thread():
    """The check costs a small bundle's `analyze` a few stat calls: multiprocessing (~18 ms to
    import) stays out of its process. Its polars gets one thread (`startup.small_inputs`), or
    as many as the user's POLARS_MAX_THREADS says."""
    code = (
        "import os, runpy, sys\n"
        "exit = os._exit\n"
        "os._exit = lambda code: (os.write(2, f'end {sorted(m for m in sys.modules if m in "
        '("analyzer.parse.workers", "multiprocessing", "numpy"))}\\n\'.encode()),'
        " os.write(2, f'threads {sys.modules[\"polars\"].thread_pool_size()}\\n'.encode()),"
        " exit(code))\n"
        "sys.argv = ['hami-analyzer', 'analyze', sys.argv[1], '--format', 'json']\n"
        "runpy.run_module('analyzer', run_name='__main__')\n"
    )
    bundle = str(REPO / "sample_bundles" / "healthy-single-gpu" / "bundle")
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    for users, threads in ((None, 1), ("2", 2)):
        run_env = env if users is None else {**env, "POLARS_MAX_THREADS": users}
        proc = subprocess.run(
            [sys.executable, "-c", code, bundle], capture_output=True, text=True, env=run_env
        )
        lines = proc.stderr.splitlines()
        assert "end []" in lines and f"threads {threads}" in lines, proc.stderr


def test_a_scan_process_maps_its_chunks_and_would_die_of_a_lost_page_quietly():
    """`warm_up` runs in every scan process as it starts, and only there (a process of its own
    here: it changes the process): from then on the process maps its chunks, and a log cut short
    under a map, which kills it, prints no fault handler's stack and leaves no core file; it
    starts all the same where numpy is missing (the line reader scans the logs then)."""
    code = (
        "import faulthandler, resource\n"
        "from analyzer.parse import bytescan\n"
        "bytescan.np = None\n"
        "faulthandler.enable()\n"
        "hard = resource.getrlimit(resource.RLIMIT_CORE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))  # core files allowed\n"
        "assert not bytescan._MAPS[0]\n"
        "bytescan.warm_up()\n"
        "print(bytescan._MAPS[0], faulthandler.is_enabled(), "
        "resource.getrlimit(resource.RLIMIT_CORE)[0])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.split() == ["True", "False", "0"], proc.stderr
