"""Log artefacts into polars frames of kept lines plus whole-file statistics.

Small logs keep every line (for the timeline). Big logs stream through polars in batches: the
literals every signature needs select the candidate lines, per-signature caps (first and last
occurrences, exact counts) bound memory, and severity counts cover every line. No Python-level
work happens per line of a big file.
"""

from __future__ import annotations

import codecs
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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
from analyzer.facts.model import MATCH_TIMEOUT
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
    pods: list[str] = field(default_factory=list)  # from `kubectl logs --prefix` lines
    hard_wrap_joins: int = 0
    truncated_last_line: bool = False
    all_lines_kept: bool = True
    sig_counts: dict[str, int] = field(default_factory=dict)
    timeouts: list[tuple[str, int]] = field(default_factory=list)  # (signature, line): no match


@dataclass
class ParsedLog:
    artefact: Artefact
    stats: LogStats
    frame: pl.DataFrame  # kept lines with parsed klog header columns


SigSpec = tuple[str, str]  # (signature id, Rust-compatible pattern)
SIG_HEAD_CAP = 300  # per signature, first occurrences kept from a big log
SIG_TAIL_CAP = 300  # and last occurrences
BATCH_ROWS = 100_000  # per streamed batch: memory vs. per-batch overhead (1 GB: 80 batches)
BATCH_BYTES = 16 << 20  # and about this much text, so that long lines do not blow memory up
SMALL_FRAME = 20_000  # below this many rows signatures are attributed line by line
POOL_BYTES = 8 << 20  # candidate lines of a big log attributed together (1 GB bench: 2 calls)


FALLBACK_PER_SCAN = 8  # literal-less patterns joined into one regex scan


class Matcher:
    """Attributes lines to signatures: literal prefilter (one Rust-regex alternation), then each
    candidate signature's regex once. Patterns without a usable literal are checked on every row.

    `compile` returns a signature's compiled pattern (the rule set's own, compiled on first use:
    compiling every pattern would cost a small bundle more than analysing it)."""

    def __init__(
        self,
        sigs: list[SigSpec],
        prefilters: dict[str, list[str] | None] | None = None,
        compile: Callable[[str], regex.Pattern] | None = None,
    ):
        self.sigs = sigs
        self.pattern = dict(sigs)
        self._compile = compile or (lambda sid: regex.compile(self.pattern[sid]))
        self._keep: dict[frozenset[str], pl.Expr] = {}
        prefilters = prefilters or {}
        lit_rows: list[tuple[str, str]] = []
        self.fallback: list[str] = []
        # a pattern that is exactly its literal needs no regex check after the prefilter
        self.pure = {sid for sid, pat in sigs if _is_plain(pat)}
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
        """True for lines that may match a signature (not counting those in `exclude`)."""
        key = frozenset(exclude or ())
        if key not in self._keep:
            self._keep[key] = self._build_keep_expr(key)
        return self._keep[key]

    def _build_keep_expr(self, exclude: frozenset[str]) -> pl.Expr:
        t = pl.col("text")
        parts = []
        lits = [lit for lit, sids in self.lit_to_sigs.items() if not set(sids) <= exclude]
        if lits:
            parts.append(t.str.contains("|".join(regex.escape(x) for x in sorted(lits))))
        # a few patterns per alternation: all of them in one outgrow the regex engine's lazy DFA
        # cache (each is (?i) with bounded repeats), and the scan then gets hundreds of times slower
        for i in range(0, len(self.fallback), FALLBACK_PER_SCAN):
            chunk = self.fallback[i : i + FALLBACK_PER_SCAN]
            parts.append(t.str.contains("|".join(f"(?:{_unname(self.pattern[s])})" for s in chunk)))
        if not parts:
            return pl.lit(False)
        return pl.any_horizontal(parts) if len(parts) > 1 else parts[0]

    def attribute(
        self,
        frame: pl.DataFrame,
        bulk: bool = False,
        timeouts: list[tuple[str, int]] | None = None,
    ) -> pl.DataFrame:
        """(line, text, ...) rows -> the same rows plus `sig`, once per verified signature match,
        in line order. `bulk`: candidates pooled from a big log, always vectorised (their lines
        may be long, and a Python loop costs per byte). A regex that runs past its time on a
        line is no match there, and (signature, line) is added to `timeouts`."""
        if frame.height <= SMALL_FRAME and not bulk:
            return self._attribute_rows(frame, [] if timeouts is None else timeouts)
        out = []
        if self.literals and frame.height:
            cand = (
                frame.with_columns(
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
                out.append(hit.with_columns(pl.lit(sid).alias("sig")))
        if not out:
            return pl.DataFrame(schema={"line": pl.Int64, "text": pl.String, "sig": pl.String})
        hits = pl.concat(out)
        return hits.sort("line", maintain_order=True)

    def regex(self, sid: str) -> regex.Pattern:
        return self._compile(sid)

    def _attribute_rows(self, frame: pl.DataFrame, timeouts: list[tuple[str, int]]) -> pl.DataFrame:
        """Small frames: the prefilter in polars, then a Python loop over the candidates is
        cheaper than a dozen vectorised passes."""
        rows: list[tuple] = []
        at, line_at = frame.columns.index("text"), frame.columns.index("line")
        for row in frame.filter(self.keep_expr()).iter_rows():
            text = row[at]
            found: list[str] = []
            for lit, sids in self.lit_to_sigs.items():
                if lit in text:
                    found.extend(s for s in sids if s not in found)
            for sid in [*found, *self.fallback]:
                if sid in self.pure and sid in found:
                    rows.append((*row, sid))
                    continue
                try:
                    if self.regex(sid).search(text, timeout=MATCH_TIMEOUT):
                        rows.append((*row, sid))
                except TimeoutError:
                    timeouts.append((sid, row[line_at]))
        return pl.DataFrame(rows, schema={**frame.schema, "sig": pl.String}, orient="row")


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
    stats.pods = _prefix_pods(frame)


def _prefix_pods(frame: pl.DataFrame) -> list[str]:
    pods = frame["raw"].head(20_000).str.extract(r"^\[pod/([^/\]\s]+)/", 1).drop_nulls()
    return sorted(pods.unique().to_list())[:20]


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
        rejoin_hard_wraps(stripped, by_width=is_log)
        if is_log or artefact.kind == "issue-text"
        else (stripped, list(range(1, len(stripped) + 1)), 0)
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
    timeouts: list[tuple[str, int]] = []
    hits = matcher.attribute(frame.select("line", "text"), timeouts=timeouts)
    frame = _with_sigs(_with_header(frame), hits)
    stats = LogStats(lines=len(joined), hard_wrap_joins=joins, timeouts=timeouts)
    stats.sig_counts = dict(hits.group_by("sig").len().iter_rows())
    sev = frame["sev"].drop_nulls()
    stats.klog_lines = len(sev)
    stats.severities = {k: v for k, v in sev.value_counts().iter_rows()}
    if joined and not KLOG_RE.match(joined[-1]) and regex.match(r"^[IWEF]\d{4}\b", joined[-1]):
        stats.truncated_last_line = True
    _finish_stats(frame, stats)
    return ParsedLog(artefact, stats, frame)


@dataclass
class _Profile:
    """What the first block of a big file says about all of it."""

    has_prefix: bool  # kubectl --prefix / --timestamps / CRI prefixes to strip
    has_ansi: bool
    batch_rows: int  # rows per streamed batch: about BATCH_BYTES of text, at most BATCH_ROWS


def _profile(path) -> _Profile:
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
    text, _warns = decode(head)
    lines = text.split("\n")[:2000]
    has_prefix = any(PREFIX_RE.match(x).end() for x in lines)
    mean_len = max(1, len(head) // max(1, text.count("\n")))
    rows = max(1, min(BATCH_ROWS, BATCH_BYTES // mean_len))
    return _Profile(has_prefix, bool(ANSI_RE.search(text)), rows)


def _parse_streamed(artefact: Artefact, matcher: Matcher) -> ParsedLog:
    path = artefact.file.path
    profile = _profile(path)
    try:
        return _stream(artefact, path, matcher, profile)
    except pl.exceptions.ComputeError:
        # invalid UTF-8 somewhere past the head: stream a repaired copy kept in a private folder
        # (the input may be the user's own directory, which is never written to)
        with tempfile.TemporaryDirectory(prefix="hami-utf8-") as tmp:
            repaired = Path(tmp) / "repaired.log"
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            with open(path, "rb") as src, open(repaired, "wb") as dst:
                while chunk := src.read(64 << 20):
                    dst.write(decoder.decode(chunk).encode())
                dst.write(decoder.decode(b"", final=True).encode())
            return _stream(artefact, repaired, matcher, profile)


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


class _Samples:
    """Exact counts, and the first and last occurrences (with their text) of each signature.

    `rows` handed in are compact copies of a batch's kept rows; what is held longer than one batch
    is copied again so that it does not pin them."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.head: dict[str, list[pl.DataFrame]] = {}
        self.tail: dict[str, pl.DataFrame] = {}

    def wanted(self, sid: str, n: int) -> int:
        """How many of the first of `n` new occurrences the head still takes."""
        return max(0, SIG_HEAD_CAP - self.counts.get(sid, 0)) if n else 0

    def add(self, sid: str, rows: pl.DataFrame, n: int) -> None:
        """`rows`: the new occurrences in line order, at least the first `wanted(sid, n)` and the
        last SIG_TAIL_CAP of them; `n`: how many there were in all."""
        need = self.wanted(sid, n)
        self.counts[sid] = self.counts.get(sid, 0) + n
        if need:
            self.head.setdefault(sid, []).append(_own(rows.head(need)))
        tail = rows.tail(SIG_TAIL_CAP)
        prev = self.tail.get(sid)
        if prev is not None and tail.height < SIG_TAIL_CAP:
            # a rare signature: its last occurrences come from several batches
            tail = pl.concat([prev, tail]).tail(SIG_TAIL_CAP)
        self.tail[sid] = _own(tail)

    def frames(self) -> list[pl.DataFrame]:
        return [f for fs in self.head.values() for f in fs] + list(self.tail.values())


def _own(frame: pl.DataFrame) -> pl.DataFrame:
    """A compact copy: the string views of a slice or filter share the whole batch's buffers
    and would keep it alive. Concatenation writes new strings (casts and rechunks do not). Small
    frames are rebuilt from Python values instead: an eager polars call waits for the thread
    pool that the streaming engine keeps busy, which costs more than copying a few hundred rows."""
    if frame.height <= SIG_HEAD_CAP + SIG_TAIL_CAP:
        return pl.DataFrame(
            {c: frame.get_column(c).to_list() for c in frame.columns}, schema=frame.schema
        )
    return frame.with_columns(pl.col(pl.String) + "")


def _stream(artefact, path, matcher: Matcher, profile: _Profile) -> ParsedLog:
    """One streaming pass over the file; only cheap expressions run per line.

    Per line: klog flags, one literal scan per plain-literal signature (those are counted from
    their flags and sampled by position), and the literal prefilter of the other signatures, whose
    candidate lines (few) are attributed with the regexes. Sampled rows keep their text, so
    nothing is read twice."""
    has_prefix, has_ansi = profile.has_prefix, profile.has_ansi
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
    any_pure = pl.any_horizontal(pure_exprs) if pure_exprs else pl.lit(False)
    # unmatched E/F lines (for batch analysis); lines of plain-literal signatures are not "unmatched"
    err = klog & (t.str.starts_with("E") | t.str.starts_with("F")) & ~any_pure
    cols = ["line", "raw", "text"] if needs_raw else ["line", "text"]
    lf = (base.with_columns(text.alias("text")) if needs_raw else base).select(
        pl.col("line").cast(pl.Int64),
        *cols[1:],
        klog.alias("_klog"),
        (klog & t.str.starts_with("E")).alias("_e"),
        (klog & t.str.starts_with("W")).alias("_w"),
        (klog & t.str.starts_with("F")).alias("_f"),
        other.alias("_keep"),
        err.alias("_err"),
        *(e.alias(f"_p{i}") for i, e in enumerate(pure_exprs)),
    )
    stats = LogStats(all_lines_kept=False)
    samples = _Samples()
    errors: list[pl.DataFrame] = []
    n_errors = 0
    sums = [pl.len(), *(pl.col(c).sum() for c in ("_klog", "_e", "_w", "_f", "_keep", "_err"))]
    sums += [pl.col(f"_p{i}").sum() for i in range(len(pure_ids))]
    pool: list[pl.DataFrame] = []  # candidate lines of the other signatures, not yet attributed
    pooled = 0

    def flush() -> None:
        """Attribute the pooled candidates at once: few big calls beat many small ones while
        the streaming engine keeps the thread pool busy."""
        nonlocal pooled
        if not pool:
            return
        kept = pl.concat(pool, rechunk=True)  # many small chunks make every later call slow
        pool.clear()
        pooled = 0
        hit = matcher.attribute(kept.select(cols), bulk=True)
        if pure_ids:  # plain-literal signatures were counted from their flags
            hit = hit.filter(~pl.col("sig").is_in(pure_ids))
        for (sid,), group in hit.partition_by("sig", as_dict=True, maintain_order=True).items():
            samples.add(sid, group.select(cols), group.height)
        e = kept.filter(pl.col("_err") & ~pl.col("line").is_in(hit["line"].implode()))
        errors.append(_own(e.select(cols).head(ERROR_LINE_CAP)))
        if sum(f.height for f in errors) > 2 * ERROR_LINE_CAP:  # keep the first ones only
            errors[:] = [pl.concat(errors).sort("line").head(ERROR_LINE_CAP)]

    for batch in lf.collect_batches(chunk_size=profile.batch_rows):
        agg = batch.select(sums).row(0)
        stats.lines += agg[0]
        stats.klog_lines += agg[1]
        for letter, n in zip("EWF", agg[2:5], strict=True):
            stats.severities[letter] = stats.severities.get(letter, 0) + n
        # one filter per batch picks every row kept from it: the first and last occurrences of
        # each plain-literal signature, candidates of the others, unmatched errors
        present = [(j, sid, agg[7 + j]) for j, sid in enumerate(pure_ids) if agg[7 + j]]
        want = []
        for j, sid, n in present:
            flag = pl.col(f"_p{j}")
            first = samples.wanted(sid, n)
            last = flag.cum_sum(reverse=True) <= SIG_TAIL_CAP
            want.append(flag & ((flag.cum_sum() <= first) | last if first else last))
        take_errors = agg[6] and n_errors < ERROR_LINE_CAP
        if take_errors:  # lines without a candidate literal cannot match a signature
            want.append(pl.col("_err") & ~pl.col("_keep"))
        if agg[5]:
            want.append(pl.col("_keep"))
        if not want:
            continue
        rows = _own(batch.filter(pl.any_horizontal(want)))
        for j, sid, n in present:
            samples.add(sid, rows.filter(pl.col(f"_p{j}")).select(cols), n)
        if take_errors:
            e = rows.filter(pl.col("_err") & ~pl.col("_keep")).select(cols)
            e = _own(e.head(ERROR_LINE_CAP - n_errors))
            n_errors += e.height
            errors.append(e)
        if agg[5]:
            pool.append(rows.filter(pl.col("_keep")).select(*cols, "_err"))
            pooled += pool[-1].estimated_size()
            if pooled >= POOL_BYTES:
                flush()
    flush()
    errors = [pl.concat(errors).sort("line").head(ERROR_LINE_CAP)] if errors else []
    stats.sig_counts = samples.counts
    stats.severities["I"] = stats.klog_lines - sum(stats.severities.get(x, 0) for x in "EWF")
    stats.severities = {k: v for k, v in stats.severities.items() if v}
    for edge, which in (
        (_edge_klog(path, True), "first_clock"),
        (_edge_klog(path, False), "last_clock"),
    ):
        m = KLOG_RE.match(edge) if edge else None
        if m:
            setattr(stats, which, f"{m['mm']}{m['dd']} {m['clock']}")
    kept_frames = samples.frames() + errors
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
    hits = matcher.attribute(frame.select("line", "text"), timeouts=stats.timeouts)
    frame = _with_sigs(_with_header(frame), hits)
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)
    stats.pods = _prefix_pods(frame)
    return ParsedLog(artefact, stats, frame)
