"""Regression inputs for each class of failure of issues 13 and 23 (see hostile.py): every one keeps
the contract (exit 0/1/2/4, one-line errors, no traceback, bounded time and memory, input
untouched, nothing a terminal acts on, valid output), and each gets the specific outcome the
domain calls for."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from conftest import CLI, SAMPLES, diagnose_texts
from contract import (
    CPU_LIMIT_S,
    Bounded,
    assert_bounded_contract,
    assert_contract,
    run_bounded,
    running,
    stopped_midway,
    tree_digest,
)
from fuzzing import key_paths, with_value
from hostile import BOUNDED, CASES, Run, batch_tickets_slow_to_extract


def _run(name: str, tmp_path: Path, fmt: str = "json"):
    args = CASES[name](tmp_path / "in")
    command = args[0] if args[0] == "timeline" else "analyze"
    args = args[1:] if command == "timeline" else args
    inputs = [Path(a) for a in args if not a.startswith("-") and Path(a).exists()]
    explicit = "--format" in args
    full = [command, *args] + ([] if explicit or command == "timeline" else ["--format", fmt])
    fmt = args[args.index("--format") + 1] if explicit else fmt
    return assert_contract(full, inputs, "terminal" if command == "timeline" else fmt)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input_keeps_the_contract(name, tmp_path):
    _run(name, tmp_path)


def _primary(outcome) -> str:
    return json.loads(outcome.stdout)["primary"]["rule_id"]


def test_alias_bomb_is_refused_by_its_expanded_size(tmp_path):
    outcome = _run("yaml_alias_bomb", tmp_path)
    warnings = " ".join(json.loads(outcome.stdout).get("input_warnings", [])) + outcome.stdout
    assert "alias bomb" in warnings


@pytest.mark.parametrize("name", ["register_nan_infinity", "register_huge_integer"])
def test_numbers_json_does_not_have_make_the_register_invalid(name, tmp_path):
    assert _primary(_run(name, tmp_path)) == "register-annotation-invalid"


@pytest.mark.parametrize(
    "name,message",
    [
        ("issue_event_deeply_nested", "nested too deeply"),
        ("issue_event_huge_integer", "integer longer than"),
        ("issue_fence_storm", "more than 100 files"),
        ("truncated_tar_gz", "truncated or corrupt gzip archive"),
        ("corrupt_zip", "truncated or corrupt zip archive"),
    ],
)
def test_unreadable_inputs_are_one_line_input_errors(name, message, tmp_path):
    outcome = _run(name, tmp_path)
    assert outcome.code == 2 and message in outcome.stderr


def test_wrong_value_types_are_dropped_with_a_warning(tmp_path):
    outcome = _run("pod_limits_list_and_list_name", tmp_path)
    assert "expected a mapping, got list; ignored" in outcome.stdout


def test_unsupported_zip_method_is_a_skipped_member(tmp_path):
    outcome = _run("zip_deflate64_member", tmp_path, fmt="terminal")
    assert "compression method 9 not supported; member skipped" in outcome.stdout
    assert outcome.code == 1  # the node object alone still shows its faults


def test_non_utf8_member_names_are_printable(tmp_path):
    outcome = _run("tar_non_utf8_member_name", tmp_path)
    assert "n\ufffdde.yaml" in outcome.stdout


def test_pre_storm_is_parsed_in_linear_time():
    """65,535 characters of `<pre>` (GitHub's body limit) took 50 s when each tag rescanned the
    rest; 4 times as many must still be far from quadratic (a generous bound: no timing test)."""
    from analyzer.bundle.issue import parse_issue

    for n in (13_000, 52_000):
        start = time.perf_counter()
        parsed = parse_issue("<pre>" * n)
        elapsed = time.perf_counter() - start
        assert parsed.blocks == []
    assert elapsed < 5


def test_internal_error_names_the_tracker_and_the_input_digest(tmp_path):
    """A bug exits 3 with one line naming where to report it and the input's digest, and the
    extracted copy of the input is removed."""
    boom = (
        "import sys, analyzer.pipeline as a\n"
        "def boom(*_a, **_k):\n"
        "    raise RuntimeError('synthetic failure')\n"
        "a.parse_files = boom\n"
        "sys.argv = ['hami-analyzer', 'analyze', sys.argv[1]]\n"
        "from analyzer.cli import main\n"
        "main()\n"
    )
    bundle = SAMPLES / "healthy-single-gpu" / "bundle"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "HAMI_ANALYZER_DEBUG"} | {
        "TMPDIR": str(tmpdir)
    }
    proc = subprocess.run(
        [sys.executable, "-c", boom, str(bundle)], capture_output=True, text=True, env=env
    )
    digest = hashlib.sha256()
    for f in sorted(p for p in bundle.rglob("*") if p.is_file()):
        digest.update(f.read_bytes())
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1, proc.stderr
    assert "github.com/" in proc.stderr and "/issues" in proc.stderr
    assert f"sha256:{digest.hexdigest()[:16]}" in proc.stderr
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_analysis_removes_its_extracted_copy(sig, tmp_path):
    """SIGTERM or Ctrl-C while a large compressed log is being read leaves nothing in $TMPDIR."""
    import gzip

    line = (SAMPLES / "annotation-health-omitted" / "bundle" / "device-plugin.log").read_bytes()
    with gzip.open(tmp_path / "device-plugin.log.gz", "wb", compresslevel=1) as fh:
        for _ in range(4000):
            fh.write(line * 20)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    proc = subprocess.Popen(
        [*CLI, "analyze", str(tmp_path / "device-plugin.log.gz")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not any(tmpdir.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "finished before it could be stopped; make the input larger"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, 143) and b"Traceback" not in err, err
    assert list(tmpdir.iterdir()) == []


class _Stopped(BaseException):
    """What SIGTERM or Ctrl-C raise: not an Exception, so no `except Exception` catches it."""


def test_a_signal_as_a_temporary_file_or_folder_is_made_leaves_nothing(tmp_path, monkeypatch):
    """A stop raised just after the system call that makes a temporary folder or file, before
    the call has returned its name (Python runs signal handlers between bytecodes, and a loaded
    machine often switches processes as a system call returns: the test above once found the
    extracted copy's folder left behind in CI), leaves nothing: each name is known to what
    removes it before the call."""
    from analyzer.atomic import atomic_dir, atomic_path, private_folder
    from analyzer.bundle.reader import BundleReader

    real_mkdir, real_open = os.mkdir, os.open

    def mkdir_then_stopped(path, mode=0o777, **kw):
        real_mkdir(path, mode, **kw)
        raise _Stopped

    def open_then_stopped(path, flags, mode=0o777, **kw):
        fd = real_open(path, flags, mode, **kw)
        if not flags & os.O_CREAT:  # the clean-up's own opens (shutil.rmtree)
            return fd
        os.close(fd)
        raise _Stopped

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "mkdir", mkdir_then_stopped)
    monkeypatch.setattr(os, "open", open_then_stopped)
    reader = BundleReader()
    with pytest.raises(_Stopped):
        _ = reader.tmp
    reader.close()
    for made in (
        lambda: private_folder("hami-x-"),
        lambda: atomic_dir(tmp_path / "redacted"),
        lambda: atomic_path(tmp_path / "map.json", private=True),
    ):
        with pytest.raises(_Stopped), made():
            pass
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(
    sys.platform != "linux" or (os.cpu_count() or 1) < 2,
    reason="a big log is scanned in forked processes on Linux with two cores or more",
)
@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_a_scan_stopped_midway_leaves_no_worker(how, tmp_path):
    """Ctrl-C from the terminal (SIGINT to the whole process group) or `kill -9` of `analyze`
    while its scan processes read a big log: none of them is left waiting for work, and Ctrl-C
    ends with exit 130 and no traceback."""
    log = tmp_path / "device-plugin.log"
    code, err, workers = stopped_midway(["analyze", str(log), "--format", "json"], how, log)
    if how == "ctrl-c":
        assert code == 130 and b"Traceback" not in err, err
    assert not any(map(running, workers)), workers


def test_a_ctrl_c_lost_in_a_callback_still_ends_the_run_as_interrupted(monkeypatch, capsys):
    """Ctrl-C that lands in a callback Python cannot raise from (an import lock's weakref
    callback, as CI once caught mid-scan; here a finaliser) would be printed with a traceback and
    lost, and the run would end as if nothing happened: it ends as interrupted instead."""
    import contextlib

    from analyzer import cli

    class Finaliser:
        def __del__(self):
            raise KeyboardInterrupt

    real = cli.one_run

    @contextlib.contextmanager
    def run_with_a_lost_ctrl_c():
        with real():
            Finaliser()  # collected at once: its KeyboardInterrupt is unraisable
            yield

    monkeypatch.setattr(cli, "one_run", run_with_a_lost_ctrl_c)
    before = sys.unraisablehook
    assert cli.run(["version"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err and "Exception ignored" not in err
    assert sys.unraisablehook is before  # restored


WRONG_TYPES = [".nan", "[a, b]", "{a: {b: 1}}", "true"]
SHAPED = [
    SAMPLES / "annotation-health-omitted" / "bundle" / "node.yaml",
    SAMPLES / "gpu-count-exceeds-cards" / "bundle" / "pod.yaml",
]


@pytest.mark.parametrize("source", SHAPED, ids=lambda p: p.name)
def test_a_wrong_type_at_any_path_of_node_and_pod_is_survived(ruleset, source):
    """Every key path of a Node and a Pod object, given each wrong type in turn, is analysed
    (the parser boundary conforms the shape; no producer sees a type it does not expect)."""
    doc = yaml.safe_load(source.read_text())
    others = {f.name: f.read_text() for f in source.parent.iterdir() if f != source}
    for path in key_paths(doc):
        for value in WRONG_TYPES:
            text = with_value(yaml.safe_load(source.read_text()), path, value)
            report = diagnose_texts(ruleset, {**others, source.name: text})
            assert report.nodes, (path, value)


# ---- issue 23: each reproducer through the console script, its CPU time and memory measured ----
@functools.cache
def can_mount_tmpfs() -> bool:
    """A private mount namespace with a tmpfs (unshare -rm): root, or user namespaces."""
    if shutil.which("unshare") is None:
        return False
    with tempfile.TemporaryDirectory() as d:
        probe = ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$0"', d]
        return subprocess.run(probe, capture_output=True).returncode == 0


def run_case(run: Run, command: list[str] | None = None) -> Bounded:
    """The case's command line; with `tmpfs`, inside a private mount namespace whose TMPDIR is a
    1 MiB tmpfs (a full disk, without filling one)."""
    env, prefix = dict(run.env), None
    if run.tmpfs is not None:
        run.tmpfs.mkdir(parents=True, exist_ok=True)
        mount = 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@"'
        prefix = ["unshare", "-rm", "sh", "-c", mount, str(run.tmpfs)]
        env["TMPDIR"] = str(run.tmpfs)
    return run_bounded(run.args, env, prefix, command)


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_issue_23_reproducer_keeps_the_bounded_contract(name, tmp_path):
    case = BOUNDED[name]
    run = case.build(tmp_path / "in")
    if run.tmpfs is not None and not can_mount_tmpfs():
        pytest.skip("needs `unshare -rm` and a tmpfs mount (root or user namespaces)")
    before = {p: tree_digest(p) for p in run.inputs}
    outcome = run_case(run)
    assert_bounded_contract(outcome, run.inputs, before, run.cpu_limit_s or CPU_LIMIT_S)
    case.expect(outcome)


def test_a_batch_killed_mid_extraction_leaves_no_temporary_folder(tmp_path):
    """kill -9 of `batch` while its workers extract: they remove their folders and exit; the
    run's root left by workers killed too is removed by the next run."""
    tickets = batch_tickets_slow_to_extract(tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    cmd = [*CLI, "batch", str(tickets), "--out", str(tmp_path / "out"), "-j", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(tmpdir.rglob("m0*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "finished before it could be killed; make the input larger"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while list(tmpdir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmpdir.iterdir()) == []
    # a root whose run and workers were all killed (a pid that cannot be alive) is cleared
    stale = tmpdir / "hami-batch-run-4194305-x" / "wabc" / "hami-bundle-y"
    stale.mkdir(parents=True)
    (stale / "m00001").write_bytes(b"x" * 1000)
    small = [*CLI, "batch", str(tickets / "b-small"), "--out", str(tmp_path / "o2"), "-j", "1"]
    assert subprocess.run(small, env=env, capture_output=True, timeout=120).returncode == 0
    assert list(tmpdir.iterdir()) == []


def test_a_signal_lost_in_a_callback_still_ends_the_run_as_asked():
    """SIGTERM (or Ctrl-C) raised while Python runs a weakref callback or a finaliser cannot
    propagate: Python prints "Exception ignored" and goes on. The run keeps it instead of printing
    a traceback, and ends as terminated (143) or interrupted (130); other errors there are printed
    as Python does. (A CI run lost a SIGTERM inside a WeakSet's callback and exited 1.)"""
    from types import SimpleNamespace

    from analyzer import cli

    for exc in (cli._Terminated(15), KeyboardInterrupt()):
        lost: list[BaseException] = []
        printed: list[object] = []
        cli._ctrl_c_in_a_callback(lost, printed.append, SimpleNamespace(exc_value=exc))
        assert lost == [exc] and printed == []
    lost, printed = [], []
    other = SimpleNamespace(exc_value=ValueError("x"))
    cli._ctrl_c_in_a_callback(lost, printed.append, other)
    assert lost == [] and printed == [other]
