"""`hami-analyzer batch`: thousands of historical bundles into tables and a summary.

Each bundle is analysed by a pure function of its files (`analyze_one`), in worker processes
that load the rules once. Results are written in small atomic parquet parts as they arrive, so
an interrupted run resumes where it stopped; the final tables are assembled from the parts.
Nothing holds more than one bundle's events at a time.
"""

from __future__ import annotations

import datetime as dt
import gc
import hashlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import regex

from analyzer.summary.tickets import report_names, ticket_of

PART_ROWS = int(os.environ.get("HAMI_BATCH_PART_ROWS", "200"))  # bundles per part file
BUNDLE_TIMEOUT = 300  # seconds one bundle may take before it is recorded as an error
UNEXPLAINED_LINES = 200  # unmatched error lines taken from one bundle
BUNDLE_SCHEMA = {
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
    "collected_at": pl.Datetime("us", "UTC"),
    "undated_reason": pl.String,
    "unversioned_reason": pl.String,
    "report": pl.String,
    "duration_s": pl.Float64,
    "error": pl.String,
}
NODE_SCHEMA = {
    "bundle_id": pl.String,
    "node": pl.String,
    "category": pl.String,
    "rule_id": pl.String,
    "severity": pl.String,
    "confidence": pl.String,
    "n_faults": pl.Int64,
}
FINDING_SCHEMA = {
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
UNEXPLAINED_SCHEMA = {
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
def discover(inputs: list[str]) -> list[Path]:
    """A folder of tickets (each entry one bundle), a list file, or several bundle paths."""
    out: list[Path] = []
    for spec in inputs:
        p = Path(spec)
        if p.is_dir() and not _looks_like_bundle(p):
            out.extend(sorted(x for x in p.iterdir() if not x.name.startswith(".")))
        elif p.is_file() and p.suffix in (".txt", ".list") and _is_list_file(p):
            base = p.parent
            for raw in p.read_text(encoding="utf-8", errors="replace").splitlines():
                raw = raw.strip()
                if raw and not raw.startswith("#"):
                    q = Path(raw)
                    out.append(q if q.is_absolute() else base / q)
        else:
            out.append(p)
    return out


def _is_list_file(p: Path) -> bool:
    head = p.read_text(encoding="utf-8", errors="replace")[:4096].splitlines()
    return bool(head) and all(
        line.strip() == "" or line.startswith("#") or Path(line.strip()).exists() or "/" in line
        for line in head[:20]
    )


def _looks_like_bundle(p: Path) -> bool:
    """A folder whose files are bundle files rather than ticket folders/archives."""
    entries = [x for x in p.iterdir() if not x.name.startswith(".")]
    return (
        bool(entries)
        and all(x.is_file() for x in entries)
        and not any(x.suffix in (".tgz", ".zip", ".tar", ".gz") for x in entries)
    )


def bundle_digest(p: Path) -> str:
    """Fast digest of a bundle path: a folder's file names and contents, an archive's bytes (not
    its name: the same archive under two names is one bundle). Same files re-packed are found
    after analysis by `content_digest`."""
    h = hashlib.sha256()
    try:
        files = (
            sorted(x for x in p.rglob("*") if x.is_file() and not x.is_symlink())
            if p.is_dir()
            else [p]
        )
        for f in files:
            if p.is_dir():
                h.update(str(f.relative_to(p)).encode())
            with f.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
    except OSError as exc:
        return "unreadable:" + hashlib.sha256(str(exc).encode()).hexdigest()[:16]
    return h.hexdigest()


# ---- the per-bundle work (runs in workers) ------------------------------------------------
_RULESET = None


def _init_worker() -> None:
    global _RULESET
    from analyzer.rules.loader import load_ruleset

    _RULESET = load_ruleset()
    gc.freeze()  # modules and rules live as long as the worker: keep the collector off them
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C


class _Timeout(Exception):
    pass


def _alarm(_sig, _frame):
    raise _Timeout


def analyze_one(task: tuple[str, str] | tuple[str, str, str | None]) -> dict[str, Any]:
    """Analyse one bundle; never raises. Returns the row, finding rows, unexplained lines.
    A third task element names the file where the bundle's HTML report is written."""
    from analyzer.analyze import analyze_parsed, load_bundle
    from analyzer.errors import AnalyzerError

    bundle_id, path, reports = (*task, None)[:3]
    start = time.perf_counter()
    row: dict[str, Any] = {"id": bundle_id, "ticket": ticket_of(path), "path": path}
    nodes: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    unexplained: list[dict[str, Any]] = []
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BUNDLE_TIMEOUT)
    try:
        ruleset = _RULESET
        if ruleset is None:
            _init_worker()
            ruleset = _RULESET
        bundle = load_bundle([path], ruleset, content=True)
        report = analyze_parsed(bundle, ruleset)
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
            collected_at=d.clock.collected_at,
            undated_reason=d.clock.missing if d.clock.collected_at is None else None,
            unversioned_reason=d.version.missing if d.version.range is None else None,
            content_digest=bundle.content_digest,
        )
        if reports:
            row["report"] = _write_report(report, Path(reports))
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
    except _Timeout:
        row["error"] = f"timed out after {BUNDLE_TIMEOUT}s"
    except AnalyzerError as exc:
        row["error"] = str(exc)
    except Exception as exc:  # a bug must not stop the batch; record it with its type
        row["error"] = f"internal error: {type(exc).__name__}: {exc}"[:500]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    row["duration_s"] = time.perf_counter() - start
    return {"row": row, "nodes": nodes, "findings": findings, "unexplained": unexplained}


def _write_report(report, path: Path) -> str:
    """The bundle's HTML report in OUT/reports/; returns its path relative to OUT."""
    from analyzer.render.html import render_html

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(render_html(report), encoding="utf-8")
    tmp.replace(path)
    return f"{path.parent.name}/{path.name}"


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
@dataclass
class Progress:
    total: int
    done: int = 0
    failed: int = 0
    start: float = 0.0
    last: float = 0.0
    tty: bool = False

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if (
            (self.tty and now - self.last >= 0.2)
            or (not self.tty and now - self.last >= 10)
            or self.done == self.total
        ):
            self.last = now
            rate = self.done / max(now - self.start, 1e-6)
            eta = (self.total - self.done) / rate if rate else 0
            msg = f"[{self.done}/{self.total}] {rate:.1f} bundles/s, ETA {int(eta)}s, {self.failed} failed"
            if self.tty:
                width = 30
                fill = int(width * self.done / max(self.total, 1))
                sys.stderr.write(f"\r{'#' * fill}{'.' * (width - fill)} {msg}   ")
                if self.done == self.total:
                    sys.stderr.write("\n")
            else:
                sys.stderr.write(msg + "\n")
            sys.stderr.flush()


def _write_atomic(frame: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    frame.write_parquet(tmp)
    tmp.replace(path)


def _frame(rows: list[dict], schema: dict) -> pl.DataFrame:
    fixed = []
    for r in rows:
        r = {k: r.get(k) for k in schema}
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


def bundle_ids(paths: list[Path]) -> Iterator[tuple[str, str]]:
    seen: dict[str, int] = {}
    for p in paths:
        base = str(p)
        n = seen.get(base, 0)
        seen[base] = n + 1
        yield (base if n == 0 else f"{base}#{n}", str(p))


def run_batch(
    inputs: list[str], out: Path, jobs: int | None, force: bool, csv: bool, reports: bool = False
) -> dict[str, Any]:
    from multiprocessing import get_context

    out.mkdir(parents=True, exist_ok=True)
    parts = out / "parts"
    if force and parts.exists():
        for f in parts.iterdir():
            f.unlink()
    parts.mkdir(exist_ok=True)
    tasks = list(bundle_ids(discover(inputs)))
    done = _done_ids(parts)
    # identical bundles are analysed once; their rows point at the first copy
    digests = {bid: bundle_digest(Path(p)) for bid, p in tasks}
    first_of: dict[str, str] = {}
    report_of = {bid: str(out / "reports" / n) for bid, n in report_names(tasks).items()}
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
            todo.append((bid, p, report_of[bid] if reports else None))
    progress = Progress(total=len(todo), start=time.monotonic(), tty=sys.stderr.isatty())
    sys.stderr.write(
        f"{len(tasks)} bundles: {len(done)} already analysed, {len(dup_rows)} duplicates, {len(todo)} to analyse\n"
    )
    writer = _PartWriter(parts)
    writer.rows.extend(dup_rows)
    jobs = jobs or os.cpu_count() or 1
    try:
        if jobs == 1:
            _init_worker()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            writer.consume(map(analyze_one, todo), digests, progress)
        else:
            with get_context("spawn").Pool(
                jobs, initializer=_init_worker, maxtasksperchild=500
            ) as pool:
                writer.consume(
                    pool.imap_unordered(analyze_one, todo, chunksize=4), digests, progress
                )
    except KeyboardInterrupt:
        writer.flush()
        sys.stderr.write("\ninterrupted: finished bundles are saved; run again to resume\n")
        raise
    writer.flush()
    return assemble(out, csv)


class _PartWriter:
    """Buffers results and writes them as atomic part files of PART_ROWS bundles."""

    def __init__(self, parts: Path):
        self.parts = parts
        self.part_no = len(list(parts.glob("bundles-*.parquet")))
        self.rows: list[dict] = []
        self.nodes: list[dict] = []
        self.findings: list[dict] = []
        self.unexplained: list[dict] = []

    def consume(self, results, digests: dict[str, str], progress: Progress) -> None:
        for res in results:
            row = res["row"]
            row["digest"] = digests[row["id"]]
            self.rows.append(row)
            self.nodes.extend(res.get("nodes", []))
            self.findings.extend(res["findings"])
            self.unexplained.extend(res["unexplained"])
            progress.update(bool(row.get("error")))
            if len(self.rows) >= PART_ROWS:
                self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        tag = f"{self.part_no:06d}-{os.getpid()}"
        # a part counts only once its bundles file exists, so that one is written last
        _write_atomic(_frame(self.findings, FINDING_SCHEMA), self.parts / f"findings-{tag}.parquet")
        _write_atomic(_frame(self.nodes, NODE_SCHEMA), self.parts / f"nodes-{tag}.parquet")
        _write_atomic(
            _frame(self.unexplained, UNEXPLAINED_SCHEMA), self.parts / f"unexplained-{tag}.parquet"
        )
        _write_atomic(_frame(self.rows, BUNDLE_SCHEMA), self.parts / f"bundles-{tag}.parquet")
        self.part_no += 1
        self.rows, self.nodes, self.findings, self.unexplained = [], [], [], []


def assemble(out: Path, csv: bool = False) -> dict[str, Any]:
    parts = out / "parts"
    tags = sorted(
        f.name[len("bundles-") : -len(".parquet")] for f in parts.glob("bundles-*.parquet")
    )
    tables: dict[str, pl.DataFrame] = {}
    for name, schema in (
        ("bundles", BUNDLE_SCHEMA),
        ("nodes", NODE_SCHEMA),
        ("findings", FINDING_SCHEMA),
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
            tmp = out / f".{name}.csv.tmp"
            frame.write_csv(tmp)
            tmp.replace(out / f"{name}.csv")
    write_summary(out)
    return {k: v.height for k, v in tables.items()}


def _conform(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """The schema's columns in its order; those missing (tables of an older run) as null."""
    return frame.with_columns(
        pl.lit(None, dtype).alias(c) for c, dtype in schema.items() if c not in frame.columns
    ).select(list(schema))


def write_summary(out: Path) -> Path:
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
    html = render_summary(bundles, findings, unexplained, sorted(load_ruleset().rules))
    path = out / "summary.html"
    tmp = path.with_name("summary.html.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
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
