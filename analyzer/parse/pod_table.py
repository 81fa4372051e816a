"""`kubectl get pods` tables (the `pods-list` kind) into keyed rows: with or without `-A` (a
NAMESPACE column), with or without `-o wide` (IP, NODE, NOMINATED NODE, READINESS GATES), a
RESTARTS cell like `3 (2m ago)`, several tables in one paste, and rows whose header was cut off
by a `grep`. Attribution and the facts read these rows; the signature scan still reads the same
lines as text (a pasted row in an issue is matched the same way)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

import regex

from analyzer.bundle.model import Artefact

NONE = "<none>"
_HEADER = regex.compile(
    r"^\s*(?P<ns>NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE(?P<rest>.*)$"
)
_CELL = r"[^\s]+"
_IP = r"(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F]*:[0-9a-fA-F:]+|<none>)"
# NAME READY STATUS RESTARTS AGE, then (-o wide) IP NODE [NOMINATED NODE [READINESS GATES]]
_ROW = (
    r"(?P<name>[a-z0-9][\w.-]*)\s+(?P<ready>\d+/\d+)\s+(?P<status>\S+)\s+"
    r"(?P<restarts>\d+)(?:\s+\((?P<last_restart>[^()]*?)\s+ago\))?\s+(?P<age>\S+)"
    rf"(?:\s+(?P<ip>{_IP})\s+(?P<node>{_CELL})(?:\s+(?P<nominated>{_CELL})"
    rf"(?:\s+(?P<gates>{_CELL}))?)?)?"
    r"(?:\s+(?P<more>\S.*?))?\s*$"
)
_WITH_NS = regex.compile(rf"^\s*(?P<namespace>[a-z0-9][\w.-]*)\s+{_ROW}")
_WITHOUT_NS = regex.compile(rf"^\s*{_ROW}")


@dataclass(frozen=True)
class PodRow:
    """One pod as `kubectl get pods` printed it. Cells kubectl left out (no `-A`, no `-o wide`)
    or printed as `<none>` are None."""

    file: str
    line: int  # 1-based line in the file
    name: str
    ready: str  # "1/2"
    status: str  # Running, CrashLoopBackOff, Init:0/1, ...
    restarts: int
    age: str
    namespace: str | None = None
    last_restart: str | None = None  # "2m" of "3 (2m ago)"
    ip: str | None = None
    node: str | None = None
    nominated_node: str | None = None
    readiness_gates: str | None = None
    headed: bool = True  # under its header line (False: rows a grep cut from their header)


@dataclass(frozen=True)
class PodTable:
    """The rows of one `pods-list` artefact."""

    file: str
    first_line: int
    rows: tuple[PodRow, ...]


def _cell(value: str | None) -> str | None:
    return None if value in (None, NONE) else value


def _row(m: regex.Match, file: str, line: int, headed: bool) -> PodRow:
    return PodRow(
        file=file,
        line=line,
        name=m["name"],
        ready=m["ready"],
        status=m["status"],
        restarts=int(m["restarts"]),
        age=m["age"],
        namespace=m.groupdict().get("namespace"),
        last_restart=m["last_restart"],
        ip=_cell(m["ip"]),
        node=_cell(m["node"]),
        nominated_node=_cell(m["nominated"]),
        readiness_gates=_cell(m["gates"]),
        headed=headed,
    )


def pod_rows(lines: Iterable[str], file: str, first_line: int = 1) -> Iterator[PodRow]:
    """The rows of every table in `lines`. Under a header, its columns decide (NAMESPACE
    first or not; IP and NODE only when the header has them); a row with no header above it is
    read by where its READY cell is.

    >>> text = '''NAMESPACE     NAME                       READY   STATUS             RESTARTS        AGE   IP           NODE         NOMINATED NODE   READINESS GATES
    ... hami-system   hami-device-plugin-7xk2p   1/2     CrashLoopBackOff   12 (2m ago)     3d    10.0.0.12    gpu-node-1   <none>           <none>
    ... kube-system   hami-scheduler-5d9f-abcde  2/2     Running            0               3d    10.0.0.13    gpu-node-2   <none>           <none>'''
    >>> [(r.namespace, r.name, r.status, r.restarts, r.last_restart, r.node) for r in pod_rows(text.splitlines(), "p.txt")]
    [('hami-system', 'hami-device-plugin-7xk2p', 'CrashLoopBackOff', 12, '2m', 'gpu-node-1'), ('kube-system', 'hami-scheduler-5d9f-abcde', 'Running', 0, None, 'gpu-node-2')]
    >>> rows = list(pod_rows(["NAME  READY  STATUS  RESTARTS  AGE", "vgpu-pod-1  0/1  Pending  0  5s"], "p.txt", 10))
    >>> [(r.namespace, r.name, r.status, r.node, r.line) for r in rows]
    [(None, 'vgpu-pod-1', 'Pending', None, 11)]
    >>> [(r.namespace, r.name, r.headed) for r in pod_rows(["kube-system  hami-device-plugin-x9z8q  2/2  Running  0  1d"], "p.txt")]
    [('kube-system', 'hami-device-plugin-x9z8q', False)]
    """
    pattern: regex.Pattern | None = None
    wide = False
    for offset, text in enumerate(lines):
        text = (text or "").rstrip("\r\n")
        if h := _HEADER.match(text):
            pattern = _WITH_NS if h["ns"] else _WITHOUT_NS
            wide = "NODE" in h["rest"].split()
            continue
        if not text.strip():
            pattern = None  # a table ends at a blank line; the next needs its header
            continue
        headed = pattern is not None
        chosen = pattern or _guess(text)
        m = chosen.match(text) if chosen is not None else None
        if m is None:
            pattern = None if headed else pattern
            continue
        row = _row(m, file, first_line + offset, headed)
        if headed and not wide:
            # no -o wide: what follows AGE is some other column (--show-labels), not IP/NODE
            row = replace(row, ip=None, node=None, nominated_node=None, readiness_gates=None)
        yield row


def _guess(text: str) -> regex.Pattern | None:
    """A headerless row: NAMESPACE NAME READY ... or NAME READY ..., told by READY's place."""
    tokens = text.split()
    if len(tokens) > 2 and regex.fullmatch(r"\d+/\d+", tokens[2]):
        return _WITH_NS
    if len(tokens) > 1 and regex.fullmatch(r"\d+/\d+", tokens[1]):
        return _WITHOUT_NS
    return None


def parse_pod_table(artefact: Artefact) -> PodTable:
    """The artefact's rows (its decoded text, or its file read line by line when too large to
    be held whole)."""
    name = artefact.file.name
    if artefact.text is not None:
        rows = tuple(pod_rows(artefact.text.split("\n"), name, artefact.first_line))
    else:
        with artefact.file.path.open(encoding="utf-8", errors="replace") as fh:
            rows = tuple(pod_rows(fh, name, artefact.first_line))
    return PodTable(name, artefact.first_line, rows)
