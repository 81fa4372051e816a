"""The contract every run of `hami-analyzer analyze` keeps, whatever the input: an exit status
the README documents, errors on one line, no traceback, the input untouched, and output that is
valid and inert (no markup, handlers or links from the bundle in HTML, no mentions, references
or unclosed fences in Markdown). Shared by the hostile-input and fuzz tests."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import resource
import signal
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import jsonschema

from analyzer.cli import run
from conftest import REPO

DOCUMENTED_EXITS = {0, 1, 2, 4}
TIME_LIMIT_S = 60  # one analysis of a small mutated sample takes well under a second
MEMORY_LIMIT_KIB = 2 << 20  # peak RSS of the test process (2 GiB); a bomb grows far past it
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
    """Names, sizes and contents of every file under path (or of the file itself)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        h.update(f.read_bytes())
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
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert peak < MEMORY_LIMIT_KIB, f"peak RSS {peak >> 10} MiB"
    assert {p: tree_digest(p) for p in inputs} == before, "an input was modified"
    if outcome.code != 2:
        CHECKS[check](outcome.stdout)
    return outcome


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


CHECKS = {
    "json": check_json,
    "inspect-json": json.loads,
    "csv": lambda text: None,
    "html": check_html,
    "markdown": check_markdown,
    "terminal": lambda text: None,
}
