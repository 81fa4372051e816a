"""Exit codes of `hami-analyzer analyze` in a real process: 0 no fault, 1 a fault (at or above
--fail-on), 2 usage or input error (one line on stderr, no traceback), 3 internal error,
4 inconclusive."""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest
import yaml

from conftest import SAMPLES, run_cli

HEALTHY = SAMPLES / "healthy-single-gpu" / "bundle"
WARNING_ONLY = SAMPLES / "handshake-deleted-stuck" / "bundle"  # one warning-level fault
ERROR_ONLY = SAMPLES / "annotation-health-omitted" / "bundle"  # error-level faults
CRITICAL = SAMPLES / "rbac-patch-forbidden" / "bundle"  # a critical fault


run = run_cli


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HAMI_ANALYZER_DEBUG"}
    env.update(extra)
    return env


def expected(sample: str) -> dict:
    return yaml.safe_load((SAMPLES / sample / "expected.yaml").read_text())


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int = 2) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip(), "an error must say something on stderr"
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert proc.stdout == ""


def fault_severities(doc: dict) -> set[str]:
    return {f["severity"] for n in doc["nodes"] for f in n["findings"] if f["kind"] == "fault"}


def png_bytes() -> bytes:
    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 4 for _ in range(4))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def tgz_of(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for f in sorted(folder.iterdir()):
            tf.add(f, arcname=f"ticket/{f.name}")
    return buf.getvalue()


def tree_digest(path: Path) -> dict[str, str]:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


# ---- 0 and 1 ---------------------------------------------------------------------------------
HEALTHY_SAMPLES = sorted(
    p.parent.name
    for p in SAMPLES.glob("*/expected.yaml")
    if yaml.safe_load(p.read_text())["primary_category"] == "healthy"
)


@pytest.mark.parametrize("sample", HEALTHY_SAMPLES)
def test_healthy_sample_exits_0(sample):
    """A sample whose expected diagnosis is healthy exits 0 and says nothing on stderr."""
    proc = run("analyze", str(SAMPLES / sample / "bundle"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert fault_severities(json.loads(proc.stdout)) == set()


@pytest.mark.parametrize(
    "sample", ["rbac-patch-forbidden", "annotation-health-omitted", "handshake-deleted-stuck"]
)
def test_faulty_sample_exits_1(sample):
    """A sample whose expected diagnosis is a fault exits 1 with its expected verdict on stdout."""
    exp = expected(sample)
    assert exp["primary_category"] != "healthy"
    proc = run("analyze", str(SAMPLES / sample / "bundle"), "-f", "json")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["primary"]["category"] == exp["primary_category"]


def test_healthy_node_yaml_on_stdin_exits_0():
    """`-` reads the bundle from stdin: a healthy node object alone exits 0."""
    proc = run("analyze", "-", stdin=(HEALTHY / "node.yaml").read_bytes())
    assert proc.returncode == 0, proc.stderr


def test_output_file_keeps_the_exit_code(tmp_path):
    """With -o the report goes to the file, stdout stays empty and the exit code is the verdict's."""
    out = tmp_path / "report.html"
    proc = run("analyze", str(CRITICAL), "-f", "html", "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert out.read_text().rstrip().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left behind


# ---- --fail-on -------------------------------------------------------------------------------
def test_fail_on_values_are_the_four_severities():
    """--fail-on takes exactly the rule severities, default info (any fault fails)."""
    from analyzer.cli import Severity
    from analyzer.report.model import SEVERITY_RANK

    assert [s.value for s in Severity] == ["critical", "error", "warning", "info"]
    assert set(SEVERITY_RANK) == {s.value for s in Severity}
    text = run("analyze", "--help").stdout
    entry = " ".join(text[text.index("--fail-on") : text.index("--lang")].split())
    assert "<critical|error|warning|info>" in entry and "[default: info]" in entry


def test_warning_fault_exits_0_below_threshold_and_1_at_it():
    """A warning-only bundle exits 1 at --fail-on info/warning and 0 at --fail-on error/critical."""
    default = run("analyze", str(WARNING_ONLY), "-f", "json")
    assert default.returncode == 1, default.stderr
    assert fault_severities(json.loads(default.stdout)) == {"warning"}
    assert run("analyze", str(WARNING_ONLY), "--fail-on", "warning").returncode == 1
    assert run("analyze", str(WARNING_ONLY), "--fail-on", "info").returncode == 1
    assert run("analyze", str(WARNING_ONLY), "--fail-on", "error").returncode == 0
    assert run("analyze", str(WARNING_ONLY), "--fail-on", "critical").returncode == 0


def test_error_fault_against_error_and_critical_thresholds():
    """An error-level fault (no critical) exits 1 with --fail-on error, 0 with --fail-on critical."""
    doc = json.loads(run("analyze", str(ERROR_ONLY), "-f", "json").stdout)
    assert "critical" not in fault_severities(doc) and "error" in fault_severities(doc)
    assert run("analyze", str(ERROR_ONLY), "--fail-on", "error").returncode == 1
    assert run("analyze", str(ERROR_ONLY), "--fail-on", "critical").returncode == 0


def test_critical_fault_fails_at_every_threshold():
    """A critical fault exits 1 even with the strictest threshold, --fail-on critical."""
    assert run("analyze", str(CRITICAL), "--fail-on", "critical").returncode == 1


def test_fail_on_does_not_change_healthy():
    """A healthy bundle exits 0 whatever the threshold."""
    for level in ("critical", "info"):
        assert run("analyze", str(HEALTHY), "--fail-on", level).returncode == 0


# ---- 4 inconclusive --------------------------------------------------------------------------
def test_prose_only_is_inconclusive(tmp_path):
    """A bundle holding only a user's words: nothing to confirm or blame, exit 4."""
    (tmp_path / "notes.txt").write_text("My GPU node does not work with HAMi, please help.\n")
    proc = run("analyze", str(tmp_path), "-f", "json")
    assert proc.returncode == 4, proc.stderr
    assert json.loads(proc.stdout)["primary"]["category"] == "inconclusive"


def test_healthy_log_without_node_object_is_inconclusive(tmp_path):
    """A healthy device-plugin log alone cannot confirm the spec link: exit 4, not 0."""
    (tmp_path / "device-plugin.log").write_bytes((HEALTHY / "device-plugin.log").read_bytes())
    assert run("analyze", str(tmp_path)).returncode == 4


def test_a_finding_that_claims_no_cause_is_inconclusive(tmp_path):
    """Every node short of a GPU (taken, or none advertised): the finding is shown, and the
    verdict and the exit say inconclusive, not a fault."""
    (tmp_path / "events.txt").write_text(
        "  Warning  FailedScheduling  2m  default-scheduler  0/3 nodes are available: "
        "3 Insufficient nvidia.com/gpu.\n"
    )
    proc = run("analyze", str(tmp_path), "-f", "json")
    assert proc.returncode == 4, proc.stderr
    primary = json.loads(proc.stdout)["primary"]
    assert (primary["category"], primary["rule_id"]) == ("inconclusive", "no-node-offers-a-gpu")


def test_inconclusive_is_not_hidden_by_fail_on(tmp_path):
    """--fail-on only filters faults: an inconclusive bundle still exits 4."""
    (tmp_path / "notes.txt").write_text("nvidia.com/gpu does not show up on my node\n")
    assert run("analyze", str(tmp_path), "--fail-on", "critical").returncode == 4


# ---- 2 input and usage errors ----------------------------------------------------------------
def test_nonexistent_path(tmp_path):
    """A path that does not exist: exit 2, one line naming it."""
    missing = tmp_path / "no-such-bundle"
    proc = run("analyze", str(missing))
    assert_one_line_error(proc)
    assert str(missing) in proc.stderr


def test_nonexistent_path_among_valid_inputs(tmp_path):
    """One missing input among good ones is still an input error, not a partial analysis."""
    missing = tmp_path / "gone.log"
    proc = run("analyze", str(HEALTHY), str(missing))
    assert_one_line_error(proc)
    assert str(missing) in proc.stderr


def test_empty_directory(tmp_path):
    """An empty folder has nothing to analyse: exit 2, not a healthy verdict."""
    empty = tmp_path / "ticket"
    empty.mkdir()
    assert_one_line_error(run("analyze", str(empty)))


def test_empty_stdin():
    """Nothing on stdin: exit 2."""
    assert_one_line_error(run("analyze", "-", stdin=b""))


@pytest.mark.parametrize("in_folder", [False, True])
def test_png_renamed_node_yaml(tmp_path, in_folder):
    """A PNG named node.yaml, alone (as the file or as the only file of a folder): exit 2."""
    folder = tmp_path / "ticket"
    folder.mkdir()
    png = folder / "node.yaml"
    png.write_bytes(png_bytes())
    proc = run("analyze", str(folder if in_folder else png))
    assert_one_line_error(proc)
    assert "binary" in proc.stderr


@pytest.mark.parametrize("keep", [0.5, 0.98])
def test_truncated_tar_gz(tmp_path, keep):
    """A .tar.gz cut short (half of it, or just its tail): exit 2, one line naming the archive."""
    data = tgz_of(HEALTHY)
    archive = tmp_path / "ticket-4711.tar.gz"
    archive.write_bytes(data[: int(len(data) * keep)])
    proc = run("analyze", str(archive))
    assert_one_line_error(proc)
    assert "ticket-4711.tar.gz" in proc.stderr


def test_unknown_node(tmp_path):
    """`--node NAME` that the bundle does not hold: exit 2, one line naming it."""
    proc = run("analyze", str(HEALTHY), "--node", "gpu-node-99")
    assert_one_line_error(proc)
    assert "gpu-node-99" in proc.stderr


@pytest.mark.parametrize("where", ["missing-dir", "proc", "is-a-dir"])
def test_unwritable_output(tmp_path, where):
    """-o into a folder that does not exist, into /proc, or onto a folder: exit 2, no file made."""
    target = {
        "missing-dir": tmp_path / "nowhere" / "report.json",
        "proc": Path("/proc/hami-analyzer-report.json"),
        "is-a-dir": tmp_path,
    }[where]
    if where == "proc" and not Path("/proc").is_dir():
        pytest.skip("no /proc on this system")
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run("analyze", str(HEALTHY), "-f", "json", "-o", str(target))
    assert_one_line_error(proc)
    assert "cannot write" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not target.with_name(target.name + ".tmp").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", str(HEALTHY), "--fail-on", "fatal"],
        ["analyze", str(HEALTHY), "--format", "pdf"],
        ["analyze", str(HEALTHY), "--no-such-option"],
        ["analyze"],
    ],
    ids=["bad-fail-on", "bad-format", "unknown-option", "no-input"],
)
def test_usage_errors_are_one_line(args):
    """A usage error (bad option value, unknown option, no input) exits 2 with one line."""
    assert_one_line_error(run(*args))


# ---- 3 internal error ------------------------------------------------------------------------
_BOOM = (
    "import sys, analyzer.analyze as a\n"
    "def boom(*_a, **_k):\n"
    "    raise RuntimeError('synthetic failure')\n"
    "a.analyze = boom\n"
    "sys.argv = ['hami-analyzer', 'analyze', sys.argv[1]]\n"
    "from analyzer.cli import main\n"
    "main()\n"
)


def test_internal_error_exits_3_with_one_line():
    """A bug inside the analysis exits 3 with one `internal error` line, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-c", _BOOM, str(HEALTHY)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert_one_line_error(proc, code=3)
    assert "internal error (RuntimeError: synthetic failure)" in proc.stderr


def test_debug_variable_shows_the_traceback():
    """HAMI_ANALYZER_DEBUG=1 shows the traceback, and the exit code stays 3 (internal error)."""
    proc = subprocess.run(
        [sys.executable, "-c", _BOOM, str(HEALTHY)],
        capture_output=True,
        text=True,
        env=_env(HAMI_ANALYZER_DEBUG="1"),
        timeout=120,
    )
    assert "Traceback" in proc.stderr and "synthetic failure" in proc.stderr
    assert proc.returncode == 3  # still an internal error, not 1 ("a fault was found")


# ---- inputs are only read --------------------------------------------------------------------
def test_inputs_are_not_modified(tmp_path):
    """Analysing a folder and an archive changes no input byte and adds no file next to them."""
    archive_dir = tmp_path / "tickets"
    archive_dir.mkdir()
    archive = archive_dir / "ticket.tgz"
    archive.write_bytes(tgz_of(ERROR_ONLY))
    out = tmp_path / "out"
    out.mkdir()
    before = (tree_digest(HEALTHY), tree_digest(archive_dir))
    assert run("analyze", str(HEALTHY), "-o", str(out / "a.txt")).returncode == 0
    assert run("analyze", str(archive), "-f", "html", "-o", str(out / "b.html")).returncode == 1
    assert (tree_digest(HEALTHY), tree_digest(archive_dir)) == before
    assert sorted(p.name for p in archive_dir.iterdir()) == ["ticket.tgz"]
