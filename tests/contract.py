"""The contract every run of `hami-analyzer` keeps, whatever the input: an exit status the README
documents, errors on one line, no traceback, the input untouched, nothing on the terminal that a
terminal would act on (no ESC, C1 or other control character), and output that is valid and
inert (no markup, handlers or links from the bundle in HTML, no mentions, references or unclosed
fences in Markdown). An input under 1 MB also costs at most 5 s of CPU and 512 MiB, measured on
the console script in a child process (`run_bounded`). Shared by the hostile-input and fuzz
tests."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import jsonschema

from analyzer.cli import run
from conftest import CLI, REPO

DOCUMENTED_EXITS = {0, 1, 2, 4}
TIME_LIMIT_S = 60  # one analysis of a small mutated sample takes well under a second
MEMORY_LIMIT_KIB = 2 << 20  # peak RSS of the test process (2 GiB); a bomb grows far past it
# a run of the console script on an input under 1 MB: CPU seconds (user + system, the process
# and its workers; wall time on a shared machine says more about the neighbours) and peak RSS
CPU_LIMIT_S = 5.0
RSS_LIMIT_MIB = 512
WALL_LIMIT_S = 120  # a hang is killed here and fails the contract
# what a terminal acts on: C0 controls but tab and newline, DEL and the C1 controls
TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SCHEMA = json.loads((REPO / "analyzer" / "schema" / "diagnosis.schema.json").read_text())


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


class _Hang(Exception):
    pass


def _alarm(_sig, _frame):
    raise _Hang


def tree_digest(path: Path) -> str:
    """Names, sizes and contents of every regular file under path (or of the file itself; a
    file past 64 MiB, such as a sparse one, by its size, times, head and tail)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(os.fsencode(f.relative_to(path) if path.is_dir() else f.name))
        if not f.is_file():
            continue
        st = f.stat()
        if st.st_size <= 64 << 20:
            h.update(f.read_bytes())
            continue
        h.update(f"{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}".encode())
        with f.open("rb") as fh:
            h.update(fh.read(1 << 20))
            fh.seek(-(1 << 20), 2)
            h.update(fh.read())
    return h.hexdigest()


def run_in_process(args: list[str]) -> Outcome:
    """`hami-analyzer ARGS` in this process (the CLI's own `run`), bounded in time."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run(args)
    except _Hang:
        raise AssertionError(f"hami-analyzer {' '.join(args)} ran past {TIME_LIMIT_S}s") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(code, out.getvalue(), err.getvalue())


def assert_contract(args: list[str], inputs: list[Path], check: str) -> Outcome:
    """Run and check the contract (`check` names the output check in CHECKS); returns the
    outcome for further checks."""
    before = {p: tree_digest(p) for p in inputs}
    outcome = run_in_process(args)
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.code in DOCUMENTED_EXITS, (outcome.code, outcome.stderr)
    if outcome.code == 2:
        assert len(outcome.stderr.strip().splitlines()) == 1, outcome.stderr
        assert outcome.stderr.startswith("error: ")
    assert_terminal_safe(outcome.stdout, outcome.stderr)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert peak < MEMORY_LIMIT_KIB, f"peak RSS {peak >> 10} MiB"
    assert {p: tree_digest(p) for p in inputs} == before, "an input was modified"
    if outcome.code != 2:
        CHECKS[check](outcome.stdout)
    return outcome


def assert_terminal_safe(*texts: str) -> None:
    """Nothing printed holds a character a terminal would act on (ESC starts every escape
    sequence; C1 controls are one-byte ones; backspace and CR overwrite what was shown)."""
    for text in texts:
        bad = TERMINAL_CONTROL.search(text)
        assert bad is None, (
            f"control character {bad.group()!r} in output: {text[max(0, bad.start() - 60) : bad.end() + 20]!r}"
        )


@dataclass
class Bounded:
    """A run of the console script in a child process, with what it cost."""

    code: int
    stdout: str
    stderr: str
    cpu_s: float  # user + system seconds of the process and the children it waited for
    wall_s: float
    peak_mib: float  # the largest resident set among them

    def summary(self) -> str:
        return f"exit {self.code}, {self.cpu_s:.2f} s CPU, {self.wall_s:.2f} s wall, {self.peak_mib:.0f} MiB"


# Measures the command it runs: forks it from this small process (a child forked from the big
# test process would count the test's memory as its own), waits for it and writes its CPU time
# and peak RSS (with those of its workers, which it waits for) to the file named first.
_MEASURE = """
import json, os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    json.dump([usage.ru_utime + usage.ru_stime, usage.ru_maxrss], fh)
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def run_bounded(
    args: list[str],
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
    command: list[str] | None = None,
    wall_limit: float = WALL_LIMIT_S,
) -> Bounded:
    """`hami-analyzer ARGS` (or `command ARGS`, after `prefix`) in a new session, killed with its
    workers past `wall_limit`, with its CPU time and peak RSS."""
    environ = {k: v for k, v in os.environ.items() if k != "HAMI_ANALYZER_DEBUG"}
    environ.update(env or {})
    with tempfile.TemporaryDirectory() as tmp:
        usage = Path(tmp) / "usage.json"
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        argv = [sys.executable, "-c", _MEASURE, str(usage), *(prefix or []), *(command or CLI)]
        start = time.monotonic()
        with out.open("wb") as fo, err.open("wb") as fe:
            proc = subprocess.Popen(
                [*argv, *args],
                stdin=subprocess.DEVNULL,
                stdout=fo,
                stderr=fe,
                env=environ,
                start_new_session=True,
            )
            try:
                code = proc.wait(timeout=wall_limit)
                killed = False
            except subprocess.TimeoutExpired:
                killed = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # its workers too, if one outlived it
            code = proc.wait()
        wall = time.monotonic() - start
        cpu, peak = json.loads(usage.read_text()) if usage.exists() else (float("nan"), 0)
        outcome = Bounded(
            code,
            out.read_bytes().decode("utf-8", "replace"),
            err.read_bytes().decode("utf-8", "replace"),
            cpu,
            wall,
            peak / 1024,
        )
    assert not killed, f"ran past {wall_limit:.0f} s and was killed ({outcome.summary()})"
    return outcome


def assert_bounded_contract(
    outcome: Bounded, inputs: list[Path], before: dict, cpu_limit_s: float = CPU_LIMIT_S
) -> None:
    """The contract for a run of `run_bounded` on an input under 1 MB (a bigger one names its
    own CPU budget, `cpu_limit_s`)."""
    assert "Traceback" not in outcome.stderr, outcome.stderr[-3000:]
    assert outcome.code in DOCUMENTED_EXITS, (outcome.code, outcome.stderr[-3000:])
    if outcome.code == 2:
        assert len(outcome.stderr.strip().splitlines()) == 1, outcome.stderr
        assert outcome.stderr.startswith("error: ")
    assert_terminal_safe(outcome.stdout, outcome.stderr)
    assert outcome.cpu_s <= cpu_limit_s, outcome.summary()
    assert outcome.peak_mib <= RSS_LIMIT_MIB, outcome.summary()
    assert {p: tree_digest(p) for p in inputs} == before, "an input was modified"


def check_json(text: str) -> None:
    jsonschema.validate(json.loads(text), SCHEMA)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts = 0
        self.handlers: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        for k, v in attrs:
            if k.startswith("on"):
                self.handlers.append(f"{tag} {k}")
            if k in ("href", "src", "action", "xlink:href", "formaction") and v:
                self.urls.append(v)


def check_html(text: str) -> None:
    page = _Page()
    page.feed(text)
    assert page.scripts == 1, "a script besides the report's own"
    assert page.handlers == [], page.handlers
    external = ("http:", "https:", "javascript:", "data:", "//")
    assert not [u for u in page.urls if u.strip().lower().startswith(external)], page.urls


_MENTION = re.compile(r"(?<![\w`/.@-])@[A-Za-z0-9][A-Za-z0-9-]*")
_REFERENCE = re.compile(r"(?<![\w&/])(?:#\d+|GH-\d+)\b")


def gfm_cells(row: str) -> list[str]:
    """A table row's cells as GFM splits them: at every `|` that no backslash escapes (a code
    span does not protect a `|`), each cell's `\\|` then read as `|`."""
    cells, cur, i = [], [], 0
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row):
            cur.append(row[i : i + 2])
            i += 2
            continue
        if row[i] == "|":
            cells.append("".join(cur))
            cur = []
        else:
            cur.append(row[i])
        i += 1
    cells.append("".join(cur))
    return [c.replace("\\|", "|") for c in cells]


def outside_code(md: str) -> str:
    """The Markdown a reader sees as text: fenced blocks and inline code spans removed (in a
    table row, span by span within each cell, as GFM reads it)."""
    out, fence = [], None
    span = re.compile(r"(`+)(?:(?!\1).)+?\1")
    for line in md.split("\n"):
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = re.match(r"[`~]+", stripped).group()
            continue
        if fence is not None:
            if stripped == fence:
                fence = None
            continue
        cells = gfm_cells(line) if stripped.startswith("|") else [line]
        out.extend(span.sub("", cell) for cell in cells)
    assert fence is None, "a code fence is never closed"
    return "\n".join(out)


_OUR_TAGS = re.compile(r"</?(?:details|summary|sub)>")
_RAW_HTML = re.compile(r"<[A-Za-z!/?]")


def check_markdown(text: str) -> None:
    visible = outside_code(text.split("<!-- hami-bundle-analyzer")[0])
    assert not _MENTION.search(visible), _MENTION.search(visible)
    assert not _REFERENCE.search(visible), _REFERENCE.search(visible)
    assert "](javascript:" not in visible.lower()
    raw = _RAW_HTML.search(_OUR_TAGS.sub("", visible))
    assert raw is None, f"raw HTML: {visible[raw.start() : raw.start() + 60]!r}"


def check_batch(text: str) -> None:
    """The summary line of a batch run, and a row in its table for every ticket."""
    import polars as pl

    assert " -> " in text and text.strip().endswith("summary.html"), text
    out = Path(text.split(" -> ", 1)[1].split("/bundles.parquet", 1)[0])
    rows = pl.read_parquet(out / "bundles.parquet")
    assert (
        rows.height == int(text.split(" bundles,", 1)[0]) and rows["id"].n_unique() == rows.height
    )
    special = rows.filter(pl.col("id").str.contains("special-"))
    assert special["error"].is_not_null().all(), special.to_dicts()


CHECKS = {
    "batch": check_batch,
    "json": check_json,
    "inspect-json": json.loads,
    "csv": lambda text: None,
    "html": check_html,
    "markdown": check_markdown,
    "terminal": lambda text: None,
}


# Processes (Linux /proc): for the tests that a stopped command leaves no worker behind


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def running(pid: int) -> bool:
    """Not gone and not a zombie (a killed parent's children wait for init to reap them)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stopped_midway(args: list[str], how: str, big_log: Path) -> tuple[int, bytes, list[int]]:
    """`hami-analyzer ARGS` on `big_log` (written here: a sample log repeated to 192 MiB) in a
    session of its own, stopped once two worker processes of its run, by Ctrl-C from the
    terminal (SIGINT to the whole process group) or `kill -9`: its exit code, its stderr, and
    its workers, once they are gone (or after ten seconds)."""
    from conftest import SAMPLES

    block = (SAMPLES / "annotation-health-omitted" / "bundle" / "device-plugin.log").read_bytes()
    with big_log.open("wb") as fh:
        while fh.tell() < 192 << 20:
            fh.write(block * 64)
    proc = subprocess.Popen(
        [*CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
        workers = children(proc.pid)
    assert len(workers) >= 2, "the run ended before its workers were seen; make the log larger"
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.kill()
    _, err = proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while any(map(running, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.returncode, err, workers
