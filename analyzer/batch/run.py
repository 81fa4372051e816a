"""`hami-analyzer batch`: thousands of historical bundles into tables and a summary.

Each bundle is analysed by a pure function of its files (`analyze_one`), in worker processes
that load the rules once. Results are written in small atomic parquet parts as they arrive, so
an interrupted run resumes where it stopped; the final tables are assembled from the parts.
Nothing holds more than one bundle's events at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import regex

from analyzer import startup
from analyzer.atomic import atomic_path, write_text
from analyzer.batch import BUNDLE_TIMEOUT
from analyzer.csvsafe import csv_safe
from analyzer.progress import Progress
from analyzer.summary.tickets import report_names, ticket_of

Schema = dict[str, Any]  # column -> polars dtype (a class or an instance such as pl.Datetime)
PART_ROWS = int(os.environ.get("HAMI_BATCH_PART_ROWS", "200"))  # bundles per part file
# ... or fewer: a part is also written once its first row is this old, so a kill loses little
PART_SECONDS = float(os.environ.get("HAMI_BATCH_PART_SECONDS", "10"))
TICK = 1.0  # an executor yields None this often while no bundle finishes (parts by time)
REPORTS = "reports"  # OUT/reports/<ticket>.html with --reports
Task = tuple[str, str, str | None]  # bundle id, path or URL, report file name or None
UNEXPLAINED_LINES = 200  # unmatched error lines taken from one bundle
BUNDLE_SCHEMA: Schema = {
    "id": pl.String,
    "ticket": pl.String,
    "path": pl.String,
    "digest": pl.String,
    "content_digest": pl.String,
    "duplicate_of": pl.String,
    "nodes": pl.String,
    "hami_version": pl.String,
    "category": pl.String,
    "rule_id": pl.String,
    "severity": pl.String,
    "confidence": pl.String,
    "n_faults": pl.Int64,
    "n_findings": pl.Int64,
    "n_not_evaluated": pl.Int64,
    "n_warnings": pl.Int64,  # its rows in warnings.parquet
    "collected_at": pl.Datetime("us", "UTC"),
    "undated_reason": pl.String,
    "unversioned_reason": pl.String,
    "report": pl.String,
    "duration_s": pl.Float64,
    "error": pl.String,
}
NODE_SCHEMA: Schema = {
    "bundle_id": pl.String,
    "node": pl.String,
    "category": pl.String,
    "rule_id": pl.String,
    "severity": pl.String,
    "confidence": pl.String,
    "n_faults": pl.Int64,
}
FINDING_SCHEMA: Schema = {
    "bundle_id": pl.String,
    "node": pl.String,
    "rule_id": pl.String,
    "category": pl.String,
    "severity": pl.String,
    "kind": pl.String,
    "file": pl.String,
    "line": pl.Int64,
    "evidence": pl.String,
}
# one row per input warning of a bundle (what its report lists under "Input warnings", and the
# files no kind matched): `source` is the stage that said it (WARNING_SOURCES)
WARNING_SCHEMA: Schema = {
    "bundle_id": pl.String,
    "source": pl.String,
    "file": pl.String,
    "message": pl.String,
}
# the inventory kinds of a file recognition found no kind for (a `text` file is still scanned)
UNRECOGNISED_KINDS = ("text", "binary", "unrecognised")
UNEXPLAINED_SCHEMA: Schema = {
    "bundle_id": pl.String,
    "template": pl.String,
    "count": pl.Int64,
    "example": pl.String,
}
_MASKS = [
    (regex.compile(r"GPU-[0-9a-fA-F-]{8,}"), "<uuid>"),
    (regex.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (regex.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ "), ""),
    (regex.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (regex.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (regex.compile(r"(?<=(?:node|nodeName|pod|name)[=: ]\"?)[\w.-]+"), "<name>"),
    (regex.compile(r"\b\d+(?:\.\d+)*\b"), "<n>"),
]


def template_of(line: str) -> str:
    """Normalise an error line so that recurring unknown failures group together."""
    for rx, repl in _MASKS:
        line = rx.sub(repl, line)
    return " ".join(line.split())[:300]


# ---- input discovery ----------------------------------------------------------------------
def discover(inputs: list[str]) -> list[str]:
    """A folder of tickets (each entry one bundle), a list file, or several bundle paths; any
    of them may be an fsspec URL (see `analyzer.batch.io`)."""
    from analyzer.batch.io import discover_url, is_url

    out: list[str] = []
    for spec in inputs:
        p = Path(spec)
        if is_url(spec):
            out.extend(discover_url(spec))
        elif p.is_dir() and not _looks_like_bundle(p):
            out.extend(str(x) for x in sorted(p.iterdir()) if not x.name.startswith("."))
        elif p.is_file() and p.suffix in (".txt", ".list") and _is_list_file(p):
            base = p.parent
            for raw in p.read_text(encoding="utf-8", errors="replace").splitlines():
                raw = raw.strip()
                if raw and not raw.startswith("#"):
                    q = Path(raw)
                    out.append(raw if is_url(raw) or q.is_absolute() else str(base / q))
        else:
            out.append(spec)
    return out


def _is_list_file(p: Path) -> bool:
    head = p.read_text(encoding="utf-8", errors="replace")[:4096].splitlines()
    return bool(head) and all(
        line.strip() == ""
        or line.startswith("#")
        or (p.parent / line.strip()).exists()
        or "/" in line
        for line in head[:20]
    )


def _looks_like_bundle(p: Path) -> bool:
    """A folder whose files are bundle files rather than ticket folders/archives."""
    from analyzer.batch.io import ARCHIVE_SUFFIXES

    entries = [x for x in p.iterdir() if not x.name.startswith(".")]
    return (
        bool(entries)
        and all(x.is_file() for x in entries)
        and not any(x.suffix in ARCHIVE_SUFFIXES for x in entries)
    )


def bundle_digest(spec: str) -> str:
    """Fast digest of a bundle path or URL: a folder's file names and contents, an archive's
    bytes (not its name: the same archive under two names is one bundle). Same files re-packed
    are found after analysis by `content_digest`."""
    from analyzer.batch.io import hash_files, is_url, url_digest
    from analyzer.bundle.containers import open_regular

    try:
        if is_url(spec):
            return url_digest(spec)
        p = Path(spec)
        if not p.is_dir():  # a FIFO or /dev/zero is refused here, not read forever
            return hash_files([("", partial(open_regular, p))])
        files = sorted(x for x in p.rglob("*") if x.is_file() and not x.is_symlink())
        return hash_files((str(f.relative_to(p)), partial(open_regular, f)) for f in files)
    except Exception as exc:  # unreadable here; the analysis will say why in the row's error
        said = f"{spec}\0{exc}".encode("utf-8", "surrogateescape")
        return "unreadable:" + hashlib.sha256(said).hexdigest()[:16]


# ---- the per-bundle work (runs in workers) ------------------------------------------------
_RULESET = None


def load_rules():
    """The rules, loaded once per worker process (local pool or Dask worker) and kept."""
    global _RULESET
    if _RULESET is None:
        from analyzer.rules.loader import load_ruleset

        _RULESET = load_ruleset()
        startup.done()  # modules and rules live as long as the worker: keep the collector off them
    return _RULESET


class _Timeout(BaseException):
    """Raised inside the analysing thread; a BaseException so no `except Exception` eats it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise _Timeout in this thread after `seconds`. A timer thread rather than SIGALRM, so
    that it also works in a Dask worker's task thread; like a signal, it lands between bytecodes."""
    tid, lock, armed = threading.get_ident(), threading.Lock(), [True]

    def fire() -> None:
        with lock:
            if armed[0]:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(tid), ctypes.py_object(_Timeout)
                )

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            armed[0] = False
        timer.cancel()


def analyze_one(task: Task, timeout: float = BUNDLE_TIMEOUT) -> dict[str, Any]:
    """Analyse one bundle (a local path or an fsspec URL); never raises. Returns the row,
    node rows, finding rows and unexplained lines, already checked against their schemas, and
    the bundle's HTML report when the task names a report file (the parent writes it)."""
    from analyzer.errors import AnalyzerError

    bundle_id, path, report_name = (*task, None)[:3]
    start = time.perf_counter()
    row: dict[str, Any] = {"id": bundle_id, "ticket": ticket_of(path), "path": path}
    result: dict[str, Any] = {
        "row": row,
        "nodes": [],
        "findings": [],
        "warnings": [],
        "unexplained": [],
    }
    try:
        with time_limit(timeout):
            result.update(_analyze_rows(bundle_id, path, row, report_name))
            _check_types(result)
    except _Timeout:
        result = failed_result(row, f"timed out after {timeout:g}s")
    except AnalyzerError as exc:
        result = failed_result(row, str(exc))
    except (
        Exception
    ) as exc:  # a bug or a bad value must not stop the batch; record it with its type
        result = failed_result(row, f"internal error: {type(exc).__name__}: {exc}"[:500])
    result["row"]["duration_s"] = time.perf_counter() - start
    return result


def failed_result(row: dict[str, Any], error: str) -> dict[str, Any]:
    """The bundle's row with only its error: no half-built verdict or findings."""
    return {
        "row": {
            "id": row["id"],
            "ticket": row.get("ticket") or ticket_of(row["path"]),
            "path": row["path"],
            "error": error,
        },
        "nodes": [],
        "findings": [],
        "warnings": [],
        "unexplained": [],
    }


def _check_types(result: dict[str, Any]) -> None:
    """Type the rows here, in the worker, so a value the tables cannot hold (a date out of
    range, a wrong type) is this bundle's error and not a crash of the run's part writer."""
    _frame([result["row"]], BUNDLE_SCHEMA)
    for key, schema in (
        ("nodes", NODE_SCHEMA),
        ("findings", FINDING_SCHEMA),
        ("warnings", WARNING_SCHEMA),
        ("unexplained", UNEXPLAINED_SCHEMA),
    ):
        _frame(result[key], schema)


def _analyze_rows(
    bundle_id: str, path: str, row: dict[str, Any], report_name: str | None
) -> dict[str, Any]:
    from analyzer.analyze import AnalyzeOptions, analyze
    from analyzer.batch.io import local_copy

    with local_copy(path) as local:  # a URL is fetched to a temporary copy, a path used as is
        result = analyze([local], AnalyzeOptions(ruleset=load_rules(), content_digest=True))
    bundle, report = result.bundle, result.report
    out = _rows(bundle_id, row, bundle, report)
    if report_name:
        from analyzer.render.html import render_html

        row["report"] = f"{REPORTS}/{report_name}"
        out["report_html"] = render_html(report)
    return out


def _rows(bundle_id: str, row: dict[str, Any], bundle, report) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    unexplained: list[dict[str, Any]] = []
    warnings = warning_rows(bundle_id, report)
    d = report.worst
    row.update(
        nodes=",".join(x.node or "" for x in report.nodes),
        hami_version=d.version.range,
        category=d.primary.category,
        rule_id=d.primary.rule_id,
        severity=d.primary.severity,
        confidence=d.primary.confidence,
        n_faults=sum(len(n.faults()) for n in report.nodes),
        n_findings=sum(len(n.all_findings()) for n in report.nodes),
        n_not_evaluated=len(d.not_evaluated),
        n_warnings=len(warnings),
        collected_at=d.clock.collected_at,
        undated_reason=d.clock.missing if d.clock.collected_at is None else None,
        unversioned_reason=d.version.missing if d.version.range is None else None,
        content_digest=bundle.content_digest,
    )
    for n in report.nodes:
        nodes.append(
            {
                "bundle_id": bundle_id,
                "node": n.node,
                "category": n.primary.category,
                "rule_id": n.primary.rule_id,
                "severity": n.primary.severity,
                "confidence": n.primary.confidence,
                "n_faults": len(n.faults()),
            }
        )
        for f in n.all_findings():
            e = f.evidence[0] if f.evidence else None
            findings.append(
                {
                    "bundle_id": bundle_id,
                    "node": n.node,
                    "rule_id": f.rule_id,
                    "category": f.category,
                    "severity": f.severity,
                    "kind": f.kind,
                    "file": e.file if e else None,
                    "line": e.line if e else None,
                    "evidence": (e.text or str(e.value))[:500] if e else None,
                }
            )
    if not any(n.faults() for n in report.nodes):
        unexplained = _unexplained(bundle_id, bundle)
    return {"nodes": nodes, "findings": findings, "warnings": warnings, "unexplained": unexplained}


def warning_rows(bundle_id: str, report) -> list[dict[str, Any]]:
    """The report's input warnings, then one row per file no kind matched: a table keyed by
    bundle (not a column of lists) so that a batch of thousands is grouped by source or file
    with one filter, and the CSV export holds it."""
    rows = [
        {"bundle_id": bundle_id, "source": w.source, "file": w.file, "message": w.text}
        for w in report.input_warnings
    ]
    rows += [
        {
            "bundle_id": bundle_id,
            "source": "unrecognised",
            "file": a.file,
            "message": f"{a.file}: no kind recognised ({a.kind}: {a.reason}); not read as evidence"
            if a.kind != "text"
            else f"{a.file}: no kind recognised ({a.reason}); only scanned for known log lines",
        }
        for a in report.inventory
        if a.kind in UNRECOGNISED_KINDS
    ]
    return rows


def _unexplained(bundle_id: str, bundle) -> list[dict[str, Any]]:
    counts: dict[str, list] = {}
    for log in bundle.logs:
        f = log.frame
        if "sev" not in f.columns:
            continue
        errs = f.filter(pl.col("sev").is_in(["E", "F"]) & (pl.col("sigs").list.len() == 0))
        for text in errs["text"].head(UNEXPLAINED_LINES).to_list():
            t = template_of(text)
            counts.setdefault(t, [0, text[:300]])[0] += 1
    return [
        {"bundle_id": bundle_id, "template": t, "count": c, "example": ex}
        for t, (c, ex) in counts.items()
    ]


# ---- the run ------------------------------------------------------------------------------
def _write_atomic(frame: pl.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp)


def _printable(value: object) -> object:
    r"""A string with a file name's bytes that are not UTF-8 (Python's surrogate escapes, which
    polars cannot store) shown as `\xfe`: the row keeps naming its bundle, one per name.

    >>> _printable("arc\udcfe.tar.gz"), _printable("ok"), _printable(3)
    ('arc\\xfe.tar.gz', 'ok', 3)
    """
    if isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


def _frame(rows: list[dict], schema: dict) -> pl.DataFrame:
    fixed = []
    for r in rows:
        r = {k: _printable(r.get(k)) for k in schema}
        if "collected_at" in r and not isinstance(r["collected_at"], dt.datetime):
            r["collected_at"] = None  # typed end to end; anything else is no time at all
        fixed.append(r)
    return (
        pl.DataFrame(fixed, schema=schema, orient="row") if fixed else pl.DataFrame(schema=schema)
    )


def _done_ids(parts: Path) -> set[str]:
    files = sorted(parts.glob("bundles-*.parquet"))
    if not files:
        return set()
    return set(pl.scan_parquet(files).select("id").collect()["id"].to_list())


def bundle_ids(paths: list[str]) -> Iterator[tuple[str, str]]:
    seen: dict[str, int] = {}
    for p in paths:
        base = str(p)
        n = seen.get(base, 0)
        seen[base] = n + 1
        yield (base if n == 0 else f"{base}#{n}", str(p))


def run_batch(
    inputs: list[str],
    out: str,
    executor: Executor,
    force: bool,
    csv: bool,
    bundle_timeout: float = BUNDLE_TIMEOUT,
    reports: bool = False,
    tickets: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The one run for every executor: discovery, duplicates, resume, parts and tables."""
    from analyzer.batch.io import OutDir
    from analyzer.errors import AnalyzerError

    tasks = list(bundle_ids(discover(inputs)))
    if not tasks:  # before the output folder is made: nothing to analyse is a usage error
        raise AnalyzerError(
            f"{', '.join(inputs)}: no bundle to analyse (expected a folder of tickets, "
            "list files or bundle paths)"
        )
    with OutDir(out) as outdir:
        if force:
            outdir.clear_parts()
        parts = outdir.local / "parts"
        done = _done_ids(parts)
        # identical bundles are analysed once; their rows point at the first copy
        digests = dict(
            zip([t[0] for t in tasks], executor.digests([t[1] for t in tasks]), strict=True)
        )
        first_of: dict[str, str] = {}
        report_of = report_names(tasks) if reports else {}
        dup_rows, todo = [], []
        for bid, p in tasks:
            dg = digests[bid]
            if dg in first_of:
                if bid not in done:
                    dup = {"id": bid, "ticket": ticket_of(p), "path": p, "digest": dg}
                    dup_rows.append(dup | {"duplicate_of": first_of[dg]})
                continue
            first_of[dg] = bid
            if bid not in done:
                todo.append((bid, p, report_of.get(bid)))
        progress = Progress("batch", total=len(todo), unit="bundles")
        sys.stderr.write(
            f"{len(tasks)} bundles: {len(done)} already analysed, {len(dup_rows)} duplicates, {len(todo)} to analyse\n"
        )
        writer = _PartWriter(parts, outdir.push)
        writer.rows.extend(dup_rows)
        try:
            rule_ids = _prepared_summary()
            writer.consume(executor.results(todo, bundle_timeout), digests, progress)
        except KeyboardInterrupt:
            writer.flush()
            sys.stderr.write("\ninterrupted: finished bundles are saved; run again to resume\n")
            raise
        writer.flush()
        if tickets is not None:
            store_tickets(tickets, outdir.local)
        counts = assemble(outdir.local, csv, rule_ids())
        outdir.push(sorted(f for f in outdir.local.iterdir() if f.is_file()))
    return counts


class Executor(Protocol):
    """Runs `analyze_one` over bundles somewhere (local processes, a Dask cluster)."""

    def digests(self, paths: list[str]) -> list[str]:
        """`bundle_digest` of each path, in order."""
        ...

    def results(self, tasks: list[Task], timeout: float) -> Iterator[dict | None]:
        """`analyze_one(task, timeout)` of every task exactly once, in any order; None now and
        then while nothing has finished, so that the writer can flush parts by time."""
        ...


class _PartWriter:
    """Buffers results and writes them as atomic part files of PART_ROWS bundles, or of what
    arrived in PART_SECONDS; `push` gets each written file (uploaded when the output is a URL)."""

    def __init__(self, parts: Path, push: Callable[[list[Path]], None]):
        self.parts = parts
        self.push = push
        self.part_no = len(list(parts.glob("bundles-*.parquet")))
        self.rows: list[dict] = []
        self.nodes: list[dict] = []
        self.findings: list[dict] = []
        self.warnings: list[dict] = []
        self.unexplained: list[dict] = []
        self.since = time.monotonic()

    def consume(
        self, results: Iterable[dict | None], digests: dict[str, str], progress: Progress
    ) -> None:
        for res in results:
            if res is not None:
                row = res["row"]
                row["digest"] = digests[row["id"]]
                if not self.rows:
                    self.since = time.monotonic()
                self.rows.append(row)
                self.nodes.extend(res["nodes"])
                self.findings.extend(res["findings"])
                self.warnings.extend(res["warnings"])
                self.unexplained.extend(res["unexplained"])
                if "report_html" in res:
                    self._write_report(row["report"], res["report_html"])
                progress.advance(failed=bool(row.get("error")))
            if len(self.rows) >= PART_ROWS or (
                self.rows and time.monotonic() - self.since >= PART_SECONDS
            ):
                self.flush()

    def _write_report(self, name: str, html: str) -> None:
        """A bundle's HTML report under OUT/reports/, written here in the parent so that
        workers anywhere (a Dask cluster) need no access to the output folder."""
        path = self.parts.parent / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, html)
        self.push([path])

    def flush(self) -> None:
        if not self.rows:
            return
        tag = f"{self.part_no:06d}-{os.getpid()}"
        # a part counts only once its bundles file exists, so that one is written last
        written = []
        for name, rows, schema in (
            ("findings", self.findings, FINDING_SCHEMA),
            ("nodes", self.nodes, NODE_SCHEMA),
            ("warnings", self.warnings, WARNING_SCHEMA),
            ("unexplained", self.unexplained, UNEXPLAINED_SCHEMA),
            ("bundles", self.rows, BUNDLE_SCHEMA),
        ):
            path = self.parts / f"{name}-{tag}.parquet"
            _write_atomic(_frame(rows, schema), path)
            written.append(path)
        self.push(written)
        self.part_no += 1
        self.rows, self.nodes, self.findings, self.unexplained = [], [], [], []
        self.warnings = []


def assemble(out: Path, csv: bool = False, rule_ids: list[str] | None = None) -> dict[str, Any]:
    parts = out / "parts"
    tags = sorted(
        f.name[len("bundles-") : -len(".parquet")] for f in parts.glob("bundles-*.parquet")
    )
    tables: dict[str, pl.DataFrame] = {}
    for name, schema in (
        ("bundles", BUNDLE_SCHEMA),
        ("nodes", NODE_SCHEMA),
        ("findings", FINDING_SCHEMA),
        ("warnings", WARNING_SCHEMA),
        ("unexplained", UNEXPLAINED_SCHEMA),
    ):
        files = [
            parts / f"{name}-{t}.parquet" for t in tags if (parts / f"{name}-{t}.parquet").exists()
        ]
        # parts written by an older version may lack newer columns: they read as null
        frame = (
            _conform(
                pl.concat([pl.scan_parquet(f) for f in files], how="diagonal_relaxed").collect(),
                schema,
            )
            if files
            else pl.DataFrame(schema=schema)
        )
        if name == "bundles":
            frame = frame.unique("id", keep="last").sort("id")
            frame = _fill_duplicates(_content_duplicates(frame))
        else:  # a copy found by content was analysed too: its rows would count it twice
            copies = tables["bundles"].filter(pl.col("duplicate_of").is_not_null())["id"]
            frame = frame.filter(~pl.col("bundle_id").is_in(copies.implode()))
        tables[name] = frame
        _write_atomic(frame, out / f"{name}.parquet")
        if csv:
            with atomic_path(out / f"{name}.csv") as tmp:
                csv_safe(frame).write_csv(tmp)
    write_summary(out, rule_ids)
    return {k: v.height for k, v in tables.items()}


def _conform(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """The schema's columns in its order; those missing (tables of an older run) as null."""
    return frame.with_columns(
        pl.lit(None, dtype).alias(c) for c, dtype in schema.items() if c not in frame.columns
    ).select(list(schema))


TICKETS = "tickets.parquet"  # the ticket metadata of `batch --tickets CSV`, kept for the summary
TABLES = ("bundles", "nodes", "findings", "warnings", "unexplained")


def written_by_batch(out: Path, path: Path) -> bool:
    """Whether a run writing OUT writes (or with --force, removes) `path`: its tables (.parquet
    and --csv), summary.html, the kept ticket metadata, and everything under parts/ and
    reports/. A file of the user's in OUT under another name is left alone."""
    out, path = out.resolve(), path.resolve()
    if path.parent == out:
        names = {f"{t}.{ext}" for t in TABLES for ext in ("parquet", "csv")}
        return path.name in names | {"summary.html", TICKETS}
    return any(out / sub in path.parents for sub in ("parts", REPORTS))


def store_tickets(meta: pl.DataFrame, out: Path) -> None:
    """Keep the ticket metadata beside the tables, so `--summary-only` joins it again."""
    _write_atomic(meta, out / TICKETS)


def _prepared_summary() -> Callable[[], list[str] | None]:
    """What the summary needs and the tables do not (jinja2, the page's compiled template, the
    rules' ids), made ready in a thread while the workers analyse: at the run's end, with every
    worker done, it took ~60 ms of one core. Gives a function that waits for the thread and
    returns the rules' ids (None where it failed: `write_summary` then does it again, and
    reports what fails)."""
    found: list[list[str]] = []

    def load() -> None:
        with contextlib.suppress(Exception):
            from analyzer.render.summary import prepare
            from analyzer.rules.loader import load_ruleset

            prepare()
            found.append(sorted(load_ruleset().rules))

    thread = threading.Thread(target=load, name="summary", daemon=True)
    thread.start()

    def rule_ids() -> list[str] | None:
        thread.join()
        return found[0] if found else None

    return rule_ids


def write_summary(out: Path, rule_ids: list[str] | None = None) -> Path:
    """summary.html from the tables in `out`; `rule_ids`: every rule's id, when known."""
    from analyzer.render.summary import render_summary
    from analyzer.rules.loader import load_ruleset

    bundles = _conform(pl.read_parquet(out / "bundles.parquet"), BUNDLE_SCHEMA)
    bundles = bundles.with_columns(  # a report link needs its file
        pl.Series(
            "report",
            [r if r and (out / r).is_file() else None for r in bundles["report"]],
            dtype=pl.String,
        )
    )
    findings = pl.read_parquet(out / "findings.parquet")
    unexplained = pl.read_parquet(out / "unexplained.parquet")
    warned = out / "warnings.parquet"  # absent in the tables of a run before it existed
    warnings = pl.read_parquet(warned) if warned.is_file() else _frame([], WARNING_SCHEMA)
    meta = pl.read_parquet(out / TICKETS) if (out / TICKETS).is_file() else None
    every_rule = sorted(load_ruleset().rules) if rule_ids is None else rule_ids
    html = render_summary(bundles, findings, unexplained, every_rule, meta, warnings)
    path = out / "summary.html"
    write_text(path, html)
    return path


def _content_duplicates(frame: pl.DataFrame) -> pl.DataFrame:
    """Bundles with the same files (renamed, re-zipped, other member times) are duplicates of
    the first of them by id; copies of a copy then point at that first one too."""
    first = (
        frame.filter(pl.col("duplicate_of").is_null() & pl.col("content_digest").is_not_null())
        .group_by("content_digest")
        .agg(pl.col("id").min().alias("_first"), pl.col("id").alias("_ids"))
        .explode("_ids")
        .filter(pl.col("_ids") != pl.col("_first"))
    )
    moved = dict(zip(first["_ids"].to_list(), first["_first"].to_list(), strict=True))
    if not moved:
        return frame
    return frame.with_columns(
        pl.when(pl.col("id").is_in(list(moved)))
        .then(pl.col("id").replace_strict(moved, default=None))
        .otherwise(pl.col("duplicate_of").replace(moved))
        .alias("duplicate_of")
    )


def _fill_duplicates(frame: pl.DataFrame) -> pl.DataFrame:
    """A duplicate's row carries the verdict of the copy that was analysed (not its findings)."""
    own = ("id", "ticket", "path", "digest", "duplicate_of", "duration_s")
    copied = [c for c in BUNDLE_SCHEMA if c not in own]
    originals = frame.filter(pl.col("duplicate_of").is_null()).select(
        pl.col("id").alias("duplicate_of"), *[pl.col(c).alias(f"_o_{c}") for c in copied]
    )
    joined = frame.join(originals, on="duplicate_of", how="left", maintain_order="left")
    return joined.with_columns(
        [
            pl.when(pl.col("duplicate_of").is_not_null())
            .then(pl.col(f"_o_{c}"))
            .otherwise(pl.col(c))
            .alias(c)
            for c in copied
        ]
    ).select(list(BUNDLE_SCHEMA))
