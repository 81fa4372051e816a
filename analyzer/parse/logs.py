"""Log artefacts into polars frames of kept lines plus whole-file statistics.

Small logs keep every line (for the timeline). Big logs stream through polars in batches: the
literals every signature needs select the candidate lines, per-signature caps (first and last
occurrences, exact counts) bound memory, and severity counts cover every line. No Python-level
work happens per line of a big file.
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
from analyzer.parse.literals import required_literals

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
BATCH_ROWS = 100_000
SMALL_FRAME = 20_000  # below this many rows signatures are attributed line by line


class Matcher:
    """Attributes lines to signatures: literal prefilter (Aho-Corasick), then each candidate
    signature's regex once. Patterns without a usable literal are checked on every row."""

    def __init__(self, sigs: list[SigSpec], prefilters: dict[str, list[str]] | None = None):
        self.sigs = sigs
        self.pattern = dict(sigs)
        self._compiled: dict[str, regex.Pattern] | None = None
        self._lit_re: regex.Pattern | None = None
        prefilters = prefilters or {}
        lit_rows: list[tuple[str, str]] = []
        self.fallback: list[str] = []
        # a pattern that is exactly its literal needs no regex check after the prefilter
        self.pure = {
            sid
            for sid, pat in sigs
            if regex.escape(pat, literal_spaces=True) == pat or _is_plain(pat)
        }
        for sid, pat in sigs:
            lits = prefilters[sid] if sid in prefilters else required_literals(pat)
            if lits is None:
                self.fallback.append(sid)
            else:
                lit_rows.extend((lit, sid) for lit in lits)
        self.literals = sorted({lit for lit, _ in lit_rows})
        self.lit_to_sigs: dict[str, list[str]] = {}
        for lit, sid in lit_rows:
            self.lit_to_sigs.setdefault(lit, [])
            if sid not in self.lit_to_sigs[lit]:
                self.lit_to_sigs[lit].append(sid)
        per_sig: dict[str, int] = {}
        for _lit, sid in set(lit_rows):
            per_sig[sid] = per_sig.get(sid, 0) + 1
        # a line may hold two literals of one signature: then (line, sig) pairs need dedup
        self.multi_literal = any(n > 1 for n in per_sig.values())

    def pure_literals(self) -> dict[str, list[str]]:
        """Plain-literal signatures (the pattern is its own text) and their literal."""
        return {sid: [self.pattern[sid]] for sid in sorted(self.pure) if sid not in self.fallback}

    def keep_expr(self, exclude: set[str] | None = None) -> pl.Expr:
        t = pl.col("text")
        parts = []
        lits = [
            lit for lit, sids in self.lit_to_sigs.items() if not set(sids) <= (exclude or set())
        ]
        if lits:
            parts.append(t.str.contains("|".join(regex.escape(x) for x in sorted(lits))))
        if self.fallback:
            parts.append(
                t.str.contains("|".join(f"(?:{_unname(self.pattern[s])})" for s in self.fallback))
            )
        if not parts:
            return pl.lit(False)
        return pl.any_horizontal(parts) if len(parts) > 1 else parts[0]

    def attribute(self, frame: pl.DataFrame, ordered: bool = True) -> pl.DataFrame:
        """(line, text) rows -> (line, text, sig) for every verified signature match."""
        if frame.height <= SMALL_FRAME and ordered:
            return self._attribute_rows(frame)
        out = []
        if self.literals and frame.height:
            cand = (
                frame.select(
                    "line",
                    "text",
                    pl.col("text")
                    .str.extract_many(self.literals, overlapping=True)
                    .list.unique()
                    .alias("lit"),
                )
                .explode("lit")
                .drop_nulls("lit")
                .with_columns(
                    pl.col("lit")
                    .replace_strict(self.lit_to_sigs, return_dtype=pl.List(pl.String))
                    .alias("sig")
                )
                .explode("sig")
                .drop("lit")
            )
            if self.multi_literal:
                cand = cand.unique(["line", "sig"], maintain_order=True)
            for (sid,), part in cand.partition_by("sig", as_dict=True, maintain_order=True).items():
                out.append(
                    part
                    if sid in self.pure
                    else part.filter(pl.col("text").str.contains(self.pattern[sid]))
                )
        for sid in self.fallback:
            hit = frame.filter(pl.col("text").str.contains(self.pattern[sid]))
            if hit.height:
                out.append(hit.select("line", "text").with_columns(pl.lit(sid).alias("sig")))
        if not out:
            return pl.DataFrame(schema={"line": pl.Int64, "text": pl.String, "sig": pl.String})
        hits = pl.concat(out)
        return hits.sort("line", maintain_order=True) if ordered else hits

    def _attribute_rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Small frames: a Python loop is cheaper than a dozen vectorised passes."""
        if self._compiled is None:
            self._compiled = {sid: regex.compile(p) for sid, p in self.sigs}
            self._lit_re = (
                regex.compile("|".join(regex.escape(x) for x in self.literals))
                if self.literals
                else None
            )
        rows: list[tuple[int, str, str]] = []
        for line, text in frame.select("line", "text").iter_rows():
            if text is None:
                continue
            found: list[str] = []
            if self._lit_re is not None and self._lit_re.search(text):
                for lit, sids in self.lit_to_sigs.items():
                    if lit in text:
                        found.extend(s for s in sids if s not in found)
            for sid in found:
                if sid in self.pure or self._compiled[sid].search(text, timeout=0.25):
                    rows.append((line, text, sid))
            for sid in self.fallback:
                if self._compiled[sid].search(text, timeout=0.25):
                    rows.append((line, text, sid))
        return pl.DataFrame(
            rows, schema={"line": pl.Int64, "text": pl.String, "sig": pl.String}, orient="row"
        )


def _is_plain(pattern: str) -> bool:
    """True when the regex matches exactly its own text (no metacharacters)."""
    return not regex.search(r"[\\.^$*+?{}\[\]|()]", pattern)


def parse_log(artefact: Artefact, matcher: Matcher) -> ParsedLog:
    if artefact.text is not None:
        return _parse_small(artefact, matcher)
    return _parse_streamed(artefact, matcher)


def _with_sigs(frame: pl.DataFrame, hits: pl.DataFrame) -> pl.DataFrame:
    sigs = hits.group_by("line", maintain_order=True).agg(pl.col("sig").alias("sigs"))
    return frame.join(sigs, on="line", how="left").with_columns(
        pl.col("sigs").fill_null(pl.lit([], dtype=pl.List(pl.String)))
    )


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


def _parse_small(artefact: Artefact, matcher: Matcher) -> ParsedLog:
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
    is_log = artefact.kind.endswith("-log") or artefact.kind in ("klog", "text")
    joined, numbers, joins = (
        rejoin_hard_wraps(stripped) if is_log else (stripped, list(range(1, len(stripped) + 1)), 0)
    )
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
    hits = matcher.attribute(frame.select("line", "text"))
    frame = _with_sigs(_with_header(frame), hits)
    stats = LogStats(lines=len(joined), hard_wrap_joins=joins)
    stats.sig_counts = dict(hits.group_by("sig").len().iter_rows())
    sev = frame["sev"].drop_nulls()
    stats.klog_lines = len(sev)
    stats.severities = {k: v for k, v in sev.value_counts().iter_rows()}
    if joined and not KLOG_RE.match(joined[-1]) and regex.match(r"^[IWEF]\d{4}\b", joined[-1]):
        stats.truncated_last_line = True
    _finish_stats(frame, stats)
    return ParsedLog(artefact, stats, frame)


def _profile(path) -> tuple[bool, bool]:
    """(has prefixes, has ANSI) judged from the first block of a big file."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
    text, _warns = decode(head)
    lines = text.split("\n")[:2000]
    has_prefix = any(PREFIX_RE.match(x).end() for x in lines)
    return has_prefix, bool(ANSI_RE.search(text))


def _parse_streamed(artefact: Artefact, matcher: Matcher) -> ParsedLog:
    path = artefact.file.path
    has_prefix, has_ansi = _profile(path)
    try:
        return _stream(artefact, path, matcher, has_prefix, has_ansi)
    except pl.exceptions.ComputeError:
        # invalid UTF-8 somewhere past the head: repair a private copy, then stream it
        repaired = path.with_name(path.name + ".utf8")
        with open(path, "rb") as src, open(repaired, "wb") as dst:
            while chunk := src.read(64 << 20):
                dst.write(chunk.decode("utf-8", errors="replace").encode())
        return _stream(artefact, repaired, matcher, has_prefix, has_ansi)


def _edge_klog(path, first: bool) -> str | None:
    """The first or last klog line of a big file, read from its head or tail only."""
    with open(path, "rb") as fh:
        if not first:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - (1 << 20)))
        chunk = fh.read(1 << 20).decode("utf-8", errors="replace")
    lines = [PREFIX_RE.sub("", x, count=1) for x in chunk.split("\n")]
    for line in lines if first else reversed(lines):
        if KLOG_RE.match(line):
            return line
    return None


def _stream(artefact, path, matcher: Matcher, has_prefix, has_ansi) -> ParsedLog:
    """One streaming pass over the file, then a cheap pass that fetches the sampled lines.

    Per line only cheap expressions run: klog flags, one literal scan per plain-literal signature
    (counted and sampled by line number, their text never materialised in the pass), and the
    literal prefilter of the other signatures, whose candidate lines (few) carry their text and
    are attributed with the regexes."""
    needs_raw = has_prefix or has_ansi
    base = pl.scan_lines(
        path, name="raw" if needs_raw else "text", row_index_name="line", row_index_offset=1
    )
    text = pl.col("raw") if needs_raw else pl.col("text")
    if has_ansi:
        text = text.str.replace_all(ANSI_PATTERN, "")
    if has_prefix:
        text = text.str.replace(LINE_PREFIX_PATTERN, "")
    t = pl.col("text")
    klog = t.str.contains(KLOG_START)
    pure = matcher.pure_literals()  # sid -> literals, for plain-literal signatures
    pure_ids = sorted(pure)
    other = matcher.keep_expr(exclude=set(pure_ids))
    pure_exprs = [
        t.str.contains_any(pure[sid])
        if len(pure[sid]) > 1
        else t.str.contains(pure[sid][0], literal=True)
        for sid in pure_ids
    ]
    flags = [e.alias(f"_p{i}") for i, e in enumerate(pure_exprs)]
    any_pure = pl.any_horizontal(pure_exprs) if pure_exprs else pl.lit(False)
    # unmatched E/F lines (for batch analysis); lines of plain-literal signatures are not "unmatched"
    err = klog & (t.str.starts_with("E") | t.str.starts_with("F")) & ~any_pure
    raw_col = (
        [pl.when(other | err).then(pl.col("raw")).alias("raw")] if has_prefix or has_ansi else []
    )
    lf = (base.with_columns(text.alias("text")) if needs_raw else base).select(
        pl.col("line").cast(pl.Int64),
        pl.when(other | err).then(t).alias("text"),
        *raw_col,
        klog.alias("_klog"),
        (klog & t.str.starts_with("E")).alias("_e"),
        (klog & t.str.starts_with("W")).alias("_w"),
        (klog & t.str.starts_with("F")).alias("_f"),
        other.alias("_keep"),
        *flags,
    )
    cols = ["line", "raw", "text"] if raw_col else ["line", "text"]
    stats = LogStats(all_lines_kept=False)
    counts = stats.sig_counts
    head_lines: dict[str, list[int]] = {}
    tail_lines: dict[str, list[int]] = {}
    pool: list[pl.DataFrame] = []  # text rows of sampled non-plain signature matches
    errors: list[pl.DataFrame] = []
    n_errors = 0
    sums = [pl.len(), *(pl.col(c).sum() for c in ("_klog", "_e", "_w", "_f"))]
    sums += [pl.col(f"_p{i}").sum() for i in range(len(pure_ids))]

    def sample(sid: str, lines: pl.Series, n: int) -> list[int]:
        seen = counts.get(sid, 0)
        counts[sid] = seen + n
        taken: list[int] = []
        if seen < SIG_HEAD_CAP:
            taken = lines.head(SIG_HEAD_CAP - seen).to_list()
            head_lines.setdefault(sid, []).extend(taken)
        tl = lines.tail(SIG_TAIL_CAP).to_list()
        tail_lines[sid] = (tail_lines.get(sid, []) + tl)[-SIG_TAIL_CAP:]
        return taken + tl

    for i, batch in enumerate(lf.collect_batches(chunk_size=BATCH_ROWS)):
        agg = batch.select(sums).row(0)
        stats.lines += agg[0]
        stats.klog_lines += agg[1]
        for letter, n in zip("EWF", agg[2:5], strict=True):
            stats.severities[letter] = stats.severities.get(letter, 0) + n
        for j, sid in enumerate(pure_ids):
            n = agg[5 + j]
            if n:
                sample(sid, batch.filter(pl.col(f"_p{j}"))["line"], n)
        cands = batch.filter(pl.col("text").is_not_null())
        if not cands.height:
            continue
        kept = cands.filter(pl.col("_keep"))
        hit = matcher.attribute(kept.select("line", "text"), ordered=False) if kept.height else None
        if hit is not None and pure_ids:  # plain-literal signatures were counted from their flags
            hit = hit.filter(~pl.col("sig").is_in(pure_ids))
        matched = hit["line"] if hit is not None else pl.Series("line", [], pl.Int64)
        if n_errors < ERROR_LINE_CAP:
            e = cands.filter(~pl.col("line").is_in(matched.implode()) & pl.col("_klog"))
            e = e.filter(pl.col("text").str.contains(r"^[EF]"))
            e = e.select(cols).head(ERROR_LINE_CAP - n_errors)
            n_errors += e.height
            errors.append(e)
        if hit is None or not hit.height:
            continue
        wanted: list[int] = []
        for (sid,), group in hit.partition_by("sig", as_dict=True, maintain_order=True).items():
            wanted.extend(sample(sid, group["line"], group.height))
        pool.append(kept.filter(pl.col("line").is_in(wanted)).select(cols))
        if i % 8 == 7:
            alive = {x for v in head_lines.values() for x in v} | {
                x for v in tail_lines.values() for x in v
            }
            pool = [pl.concat(pool).filter(pl.col("line").is_in(list(alive)))]
    stats.severities["I"] = stats.klog_lines - sum(stats.severities.get(x, 0) for x in "EWF")
    stats.severities = {k: v for k, v in stats.severities.items() if v}
    for edge, which in (
        (_edge_klog(path, True), "first_clock"),
        (_edge_klog(path, False), "last_clock"),
    ):
        m = KLOG_RE.match(edge) if edge else None
        if m:
            setattr(stats, which, f"{m['mm']}{m['dd']} {m['clock']}")
    alive = {x for v in head_lines.values() for x in v} | {
        x for v in tail_lines.values() for x in v
    }
    kept_frames = [p.filter(pl.col("line").is_in(list(alive))) for p in pool] + errors
    have = {x for f in kept_frames for x in f["line"].to_list()}
    missing = sorted(
        alive - have
    )  # sampled plain-literal lines: fetch their text in one cheap pass
    if missing:
        fetch = base.filter(pl.col("line").is_in(pl.Series("m", missing, pl.Int64).implode()))
        fetch = (fetch.with_columns(text.alias("text")) if needs_raw else fetch).select(
            pl.col("line").cast(pl.Int64), *[c for c in cols if c != "line"]
        )
        kept_frames.append(fetch.collect(engine="streaming"))
    empty = pl.DataFrame(schema={"line": pl.Int64, "text": pl.String})
    frame = (
        pl.concat(kept_frames, how="diagonal_relaxed").unique("line").sort("line")
        if kept_frames
        else empty
    )
    if "raw" not in frame.columns:
        frame = frame.with_columns(pl.col("text").alias("raw"))
    frame = frame.with_columns(
        pl.col("raw")
        .str.extract(r"^\[pod/[^/\]\s]+/([^\]\s]+)\] ", 1)
        .fill_null(pl.lit(artefact.container, dtype=pl.String))
        .alias("container"),
        pl.col("raw").str.extract(r"^(?:\[[^\]]*\] )?(\d{4}-\d\d-\d\dT\S+)", 1).alias("rfc"),
    )
    frame = _with_sigs(_with_header(frame), matcher.attribute(frame.select("line", "text")))
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)
    return ParsedLog(artefact, stats, frame)
