"""Log artefacts into polars frames of kept lines plus whole-file statistics.

Small logs keep every line (for the timeline). Big logs stream through polars in batches: one
combined signature regex decides which lines are kept, per-signature caps bound memory, and
severity counts cover every line. No Python-level work happens per line of a big file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
import regex

from analyzer.bundle.model import Artefact
from analyzer.bundle.text import (
    ANSI_RE,
    KLOG_HEADER_PATTERN,
    KLOG_RE,
    LINE_PREFIX_PATTERN,
    PREFIX_RE,
    decode,
    rejoin_hard_wraps,
)

KEEP_ALL_LINES = 200_000  # below this many lines every line is kept for the timeline
ERROR_LINE_CAP = 5_000  # unmatched E/F lines kept from a big log (batch analysis wants them)
ANSI_PATTERN = r"\x1b\[[0-9;?]*[ -/]*[@-~]"
KLOG_START = r"^[IWEF]\d{4} \d\d:\d\d:\d\d"

LINE_SCHEMA = {
    "line": pl.Int64,
    "raw": pl.String,
    "text": pl.String,
    "container": pl.String,
    "rfc": pl.String,
}


@dataclass
class LogStats:
    lines: int = 0
    klog_lines: int = 0
    severities: dict[str, int] = field(default_factory=dict)
    first_clock: str | None = None  # "MMDD hh:mm:ss.ffffff" of the first klog line
    last_clock: str | None = None
    containers: list[str] = field(default_factory=list)
    hard_wrap_joins: int = 0
    truncated_last_line: bool = False
    all_lines_kept: bool = True
    sig_counts: dict[str, int] = field(default_factory=dict)


@dataclass
class ParsedLog:
    artefact: Artefact
    stats: LogStats
    frame: pl.DataFrame  # kept lines with parsed klog header columns


SigSpec = tuple[str, str]  # (signature id, Rust-compatible pattern)
SIG_HEAD_CAP = 300  # per signature, first occurrences kept from a big log
SIG_TAIL_CAP = 300  # and last occurrences


def parse_log(artefact: Artefact, sigs: list[SigSpec]) -> ParsedLog:
    if artefact.text is not None:
        return _parse_small(artefact, sigs)
    return _parse_streamed(artefact, sigs)


def _sig_column(sigs: list[SigSpec]) -> pl.Expr:
    if not sigs:
        return pl.lit([], dtype=pl.List(pl.String)).alias("sigs")
    parts = [pl.when(pl.col("text").str.contains(p)).then(pl.lit(i)) for i, p in sigs]
    return pl.concat_list(parts).list.drop_nulls().alias("sigs")


def combined_pattern(sigs: list[SigSpec]) -> str | None:
    """One alternation of all patterns with group names removed (Rust forbids duplicates)."""
    if not sigs:
        return None
    return "|".join(f"(?:{_unname(p)})" for _, p in sigs)


def _unname(pattern: str) -> str:
    return regex.sub(r"(?<!\\)\(\?P?<(?![=!])[A-Za-z_]\w*>", "(?:", pattern)


def _with_header(frame: pl.DataFrame) -> pl.DataFrame:
    hdr = pl.col("text").str.extract_groups(KLOG_HEADER_PATTERN)
    return frame.with_columns(hdr.alias("_h")).unnest("_h")


def _finish_stats(frame: pl.DataFrame, stats: LogStats) -> None:
    klog = frame.filter(pl.col("sev").is_not_null())
    if klog.height:
        stats.first_clock = f"{klog['mm'][0]}{klog['dd'][0]} {klog['clock'][0]}"
        stats.last_clock = f"{klog['mm'][-1]}{klog['dd'][-1]} {klog['clock'][-1]}"
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)


def _parse_small(artefact: Artefact, sigs: list[SigSpec]) -> ParsedLog:
    raw_lines = artefact.text.split("\n")
    while raw_lines and not raw_lines[-1].strip():
        raw_lines.pop()
    stripped: list[str] = []
    containers: list[str | None] = []
    rfcs: list[str | None] = []
    for raw in raw_lines:
        m = PREFIX_RE.match(raw)
        stripped.append(raw[m.end() :].rstrip())
        containers.append(m.group("container") or artefact.container)
        rfcs.append(m.group("rfc"))
    joined, numbers, joins = rejoin_hard_wraps(stripped)
    if joins:
        idx = [n - 1 for n in numbers]
        raw_lines = [raw_lines[i] for i in idx]
        containers = [containers[i] for i in idx]
        rfcs = [rfcs[i] for i in idx]
    offset = artefact.first_line - 1
    frame = pl.DataFrame(
        {
            "line": [n + offset for n in numbers],
            "raw": raw_lines,
            "text": joined,
            "container": containers,
            "rfc": rfcs,
        },
        schema=LINE_SCHEMA,
    )
    frame = _with_header(frame).with_columns(_sig_column(sigs))
    stats = LogStats(lines=len(joined), hard_wrap_joins=joins)
    stats.sig_counts = {
        k: v for k, v in frame["sigs"].explode().drop_nulls().value_counts().iter_rows()
    }
    sev = frame["sev"].drop_nulls()
    stats.klog_lines = len(sev)
    stats.severities = {k: v for k, v in sev.value_counts().iter_rows()}
    if joined and not KLOG_RE.match(joined[-1]) and regex.match(r"^[IWEF]\d{4}\b", joined[-1]):
        stats.truncated_last_line = True
    _finish_stats(frame, stats)
    return ParsedLog(artefact, stats, frame)


def _profile(path) -> tuple[bool, bool, bool]:
    """(has prefixes, has ANSI, valid UTF-8) judged from the first block of a big file."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
    text, warns = decode(head)
    lines = text.split("\n")[:2000]
    has_prefix = any(PREFIX_RE.match(x).end() for x in lines)
    return has_prefix, bool(ANSI_RE.search(text)), not warns


def _parse_streamed(artefact: Artefact, sigs: list[SigSpec]) -> ParsedLog:
    path = artefact.file.path
    has_prefix, has_ansi, _ = _profile(path)
    try:
        return _stream(artefact, path, sigs, has_prefix, has_ansi)
    except pl.exceptions.ComputeError:
        # invalid UTF-8 somewhere past the head: repair a private copy, then stream it
        repaired = path.with_name(path.name + ".utf8")
        with open(path, "rb") as src, open(repaired, "wb") as dst:
            while chunk := src.read(64 << 20):
                dst.write(chunk.decode("utf-8", errors="replace").encode())
        return _stream(artefact, repaired, sigs, has_prefix, has_ansi)


def _stream(artefact, path, sigs, has_prefix, has_ansi) -> ParsedLog:
    lf = pl.scan_lines(path, name="raw", row_index_name="line", row_index_offset=1)
    text = pl.col("raw")
    if has_ansi:
        text = text.str.replace_all(ANSI_PATTERN, "")
    if has_prefix:
        text = text.str.replace(LINE_PREFIX_PATTERN, "")
    t = pl.col("text")
    klog = t.str.contains(KLOG_START)
    keep_pattern = combined_pattern(sigs)
    keep = t.str.contains(keep_pattern) if keep_pattern else pl.lit(False)
    lf = lf.with_columns(pl.col("line").cast(pl.Int64), text.alias("text")).with_columns(
        klog.alias("_klog"),
        (klog & t.str.starts_with("E")).alias("_e"),
        (klog & t.str.starts_with("W")).alias("_w"),
        (klog & t.str.starts_with("F")).alias("_f"),
        keep.alias("_keep"),
    )
    cols = ["line", "raw", "text"] if has_prefix else ["line", "text"]
    stats = LogStats(all_lines_kept=False)
    heads: list[pl.DataFrame] = []
    tails: dict[str, pl.DataFrame] = {}
    errors: list[pl.DataFrame] = []
    n_errors = 0
    first_klog: str | None = None
    last_klog: str | None = None
    sig_expr = _sig_column(sigs)
    for batch in lf.collect_batches():
        agg = batch.select(
            pl.len(),
            pl.col("_klog").sum(),
            pl.col("_e").sum(),
            pl.col("_w").sum(),
            pl.col("_f").sum(),
        ).row(0)
        stats.lines += agg[0]
        stats.klog_lines += agg[1]
        for letter, n in zip("EWF", agg[2:], strict=True):
            stats.severities[letter] = stats.severities.get(letter, 0) + n
        if agg[1]:
            k = batch.filter(pl.col("_klog")).select("text")
            first_klog = first_klog or k["text"][0]
            last_klog = k["text"][-1]
        if n_errors < ERROR_LINE_CAP and (agg[2] or agg[4]):
            err = batch.filter(~pl.col("_keep") & (pl.col("_e") | pl.col("_f")))
            err = err.select(cols).head(ERROR_LINE_CAP - n_errors)
            n_errors += err.height
            errors.append(err.with_columns(pl.lit([], dtype=pl.List(pl.String)).alias("sigs")))
        part = batch.filter(pl.col("_keep")).select(cols)
        if not part.height:
            continue
        part = part.with_columns(sig_expr)
        exploded = part.select("line", "sigs").explode("sigs").drop_nulls()
        keep_lines: set[int] = set()
        for sid, group in exploded.group_by("sigs", maintain_order=True):
            sid = sid[0]
            seen = stats.sig_counts.get(sid, 0)
            stats.sig_counts[sid] = seen + group.height
            if seen < SIG_HEAD_CAP:
                keep_lines.update(group["line"].head(SIG_HEAD_CAP - seen).to_list())
            rows = part.filter(pl.col("line").is_in(group["line"].tail(SIG_TAIL_CAP).implode()))
            prev = tails.get(sid)
            tails[sid] = (pl.concat([prev, rows]) if prev is not None else rows).tail(SIG_TAIL_CAP)
        if keep_lines:
            heads.append(part.filter(pl.col("line").is_in(list(keep_lines))))
    stats.severities["I"] = stats.klog_lines - sum(stats.severities.get(x, 0) for x in "EWF")
    stats.severities = {k: v for k, v in stats.severities.items() if v}
    pieces = heads + list(tails.values()) + errors
    empty = pl.DataFrame(schema={"line": pl.Int64, "text": pl.String, "sigs": pl.List(pl.String)})
    frame = pl.concat(pieces, how="diagonal_relaxed") if pieces else empty
    frame = frame.unique("line").sort("line")
    if "raw" not in frame.columns:
        frame = frame.with_columns(pl.col("text").alias("raw"))
    frame = frame.with_columns(
        pl.col("raw")
        .str.extract(r"^\[pod/[^/\]\s]+/([^\]\s]+)\] ", 1)
        .fill_null(pl.lit(artefact.container, dtype=pl.String))
        .alias("container"),
        pl.col("raw").str.extract(r"^(?:\[[^\]]*\] )?(\d{4}-\d\d-\d\dT\S+)", 1).alias("rfc"),
    )
    frame = _with_header(frame)
    for edge, which in ((first_klog, "first_clock"), (last_klog, "last_clock")):
        m = KLOG_RE.match(edge) if edge else None
        if m:
            setattr(stats, which, f"{m['mm']}{m['dd']} {m['clock']}")
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)
    return ParsedLog(artefact, stats, frame)
