"""Log artefacts into polars frames of kept lines plus whole-file statistics.

Small logs keep every line (for the timeline). A big log is read once, by the byte scan
(`parse.bigscan`, with the plan of `parse.scanplan`) or, where the scan cannot stand in for it
(colours, kubectl's `[pod/...]` prefixes), by polars' line reader in batches: the literals every
signature needs select the candidate lines (`parse.matcher`), per-signature caps (first and last
occurrences, exact counts) bound memory, and severity counts cover every line. Python does no
work per line of a big file, only per candidate.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import regex
from polars.datatypes import DataTypeClass

from analyzer.atomic import private_folder
from analyzer.bundle.model import Artefact
from analyzer.bundle.text import (
    ANSI_RE,
    KLOG_HEADER_PATTERN,
    KLOG_RE,
    LINE_PREFIX_PATTERN,
    PREFIX_RE,
    decode,
    line_prefix,
    printable,
    rejoin_hard_wraps,
)
from analyzer.parse import smalllog
from analyzer.parse.batch import (
    ERROR_EXAMINED,
    ERROR_LINE_CAP,
    KLOG_START,
    SIG_HEAD_CAP,
    SIG_TAIL_CAP,
    Batch,
    PrefixUnsettled,
)
from analyzer.parse.matcher import Matched, Matcher
from analyzer.progress import Progress, progress_for

ANSI_PATTERN = r"\x1b\[[0-9;?]*[ -/]*[@-~]"

LINE_SCHEMA = {
    "line": pl.Int64,
    "raw": pl.String,
    "text": pl.String,
    "container": pl.String,
    "rfc": pl.String,
}


@dataclass
class LogStats:
    """Whole-file statistics of a log, for the report and the facts of its lines."""

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
    """A log artefact's kept lines (a polars frame) and its statistics."""

    artefact: Artefact
    stats: LogStats
    frame: pl.DataFrame  # kept lines with parsed klog header columns
    # (line, signature) -> the span and groups of the signature's match in the line's text, where
    # the parse stage's own regex check found them: the facts stage reads them instead of
    # searching that line again
    matched: Matched = field(default_factory=dict)


BATCH_ROWS = 100_000  # per streamed batch: memory vs. per-batch overhead (1 GB: 80 batches)
BATCH_BYTES = 16 << 20  # and about this much text, so that long lines do not blow memory up
# a frame of at most this many rows is read by the later stages as Python values rather than
# queried: a query costs ~0.3-3 ms whatever its size (a small bundle's logs: ~50 rows each)
READ_WHOLE_ROWS = 2_000
# a big log's first bytes, whose lines choose its literals, its hot signatures and where its
# literals are cut: a MiB (~8,000 klog lines) cost ~25 ms more before the scan's first chunk
# than a quarter of it (Aho-Corasick over the head for ~600 literals, 13 ms; the head's read,
# decoding and splitting 6 ms); on the bench's logs it chose the same hot signatures, and the
# same literals but one of 589
PROFILE_BYTES = 256 << 10
POOL_BYTES = 8 << 20  # candidate lines of a big log attributed together (1 GB bench: 2 calls)


def rows_of(frame: pl.DataFrame, names: Sequence[str]) -> Iterator[tuple]:
    """The frame's rows of these columns as Python values, in order, without a query (a frame
    of at most READ_WHOLE_ROWS rows)."""
    return zip(*(frame.get_column(name).to_list() for name in names), strict=True)


def parse_log(
    artefact: Artefact, matcher: Matcher, record_start: regex.Pattern | None = None
) -> ParsedLog:
    """`record_start`: the catalogue's (a pasted line it matches is never rejoined onto the line
    above; a streamed log is not rejoined at all)."""
    matcher = matcher.for_kind(artefact.kind)
    if artefact.text is not None:
        return _parse_small(artefact, artefact.text, matcher, record_start)
    return _parse_streamed(artefact, matcher)


def _with_sigs(frame: pl.DataFrame, hits: pl.DataFrame) -> pl.DataFrame:
    sigs = hits.group_by("line", maintain_order=True).agg(pl.col("sig").alias("sigs"))
    return frame.join(sigs, on="line", how="left").with_columns(
        pl.col("sigs").fill_null(pl.lit([], dtype=pl.List(pl.String)))
    )


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
    rows = frame["raw"].head(smalllog.PREFIX_POD_ROWS)
    pods = rows.str.extract(smalllog.POD_PREFIX, 1).drop_nulls()
    return sorted(pods.unique().to_list())[: smalllog.PREFIX_PODS]


def _parse_small(
    artefact: Artefact, text: str, matcher: Matcher, record_start: regex.Pattern | None
) -> ParsedLog:
    raw_lines = text.split("\n")
    while raw_lines and not raw_lines[-1].strip():
        raw_lines.pop()
    stripped: list[str] = []
    containers: list[str | None] = []
    rfcs: list[str | None] = []
    for raw in raw_lines:
        m = line_prefix(raw)
        stripped.append(raw[m.end() :].rstrip())
        containers.append(m.group("container") or artefact.container)
        rfcs.append(m.group("rfc"))
    is_log = artefact.kind.endswith("-log") or artefact.kind in ("klog", "text")
    joined, numbers, joins = (
        rejoin_hard_wraps(stripped, is_log, record_start)
        if is_log or artefact.kind == "issue-text"
        else (stripped, list(range(1, len(stripped) + 1)), 0)
    )
    if joins:
        idx = [n - 1 for n in numbers]
        raw_lines = [raw_lines[i] for i in idx]
        containers = [containers[i] for i in idx]
        rfcs = [rfcs[i] for i in idx]
    offset = artefact.first_line - 1
    columns: dict[str, list] = {
        "line": [n + offset for n in numbers],
        "raw": raw_lines,
        "text": joined,
        "container": containers,
        "rfc": rfcs,
    }
    stats = LogStats(lines=len(joined), hard_wrap_joins=joins, truncated_last_line=_cut(joined))
    matched: Matched = {}
    if smalllog.fits(text):
        return ParsedLog(artefact, stats, _short_frame(columns, matcher, stats, matched), matched)
    frame = pl.DataFrame(columns, schema=LINE_SCHEMA)
    hits = matcher.attribute(frame.select("line", "text"), timeouts=stats.timeouts, matched=matched)
    frame = _with_sigs(_with_header(frame), hits)
    stats.sig_counts = dict(hits.group_by("sig", maintain_order=True).len().iter_rows())
    sev = frame["sev"].drop_nulls()
    stats.klog_lines = len(sev)
    stats.severities = dict(sorted(sev.value_counts().iter_rows()))  # the same order each run
    _finish_stats(frame, stats)
    return ParsedLog(artefact, stats, frame, matched)


def _cut(lines: list[str]) -> bool:
    """The last line looks like the start of a klog header cut short."""
    return bool(
        lines and not KLOG_RE.match(lines[-1]) and regex.match(r"^[IWEF]\d{4}\b", lines[-1])
    )


SHORT_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    **LINE_SCHEMA,
    **dict.fromkeys(smalllog.KLOG_FIELDS, pl.String),
    "sigs": pl.List(pl.String),
}


def _short_frame(
    columns: dict[str, list], matcher: Matcher, stats: LogStats, matched: Matched
) -> pl.DataFrame:
    """A short plain text's frame and statistics (`smalllog.fits`) built in Python: the same as
    polars builds them for other texts, in one polars call rather than ~30."""
    hits = matcher.attribute_short(columns["line"], columns["text"], stats.timeouts, matched)
    header = smalllog.klog_columns(columns["text"])
    stats.sig_counts = smalllog.sig_counts(hits)
    stats.klog_lines = sum(x is not None for x in header["sev"])
    stats.severities = smalllog.severities(header["sev"])
    stats.first_clock = smalllog.clock(header, 0)
    stats.last_clock = smalllog.clock(header, -1)
    stats.containers = smalllog.containers(columns["container"])
    stats.pods = smalllog.prefix_pods(columns["raw"])
    sigs = smalllog.sigs_per_line(columns["line"], hits)
    return pl.DataFrame({**columns, **header, "sigs": sigs}, schema=SHORT_SCHEMA)


@dataclass
class _Profile:
    """What the first block of a big file says about all of it."""

    has_prefix: bool  # kubectl --prefix / --timestamps / CRI prefixes to strip
    has_ansi: bool
    batch_rows: int  # rows per streamed batch: about BATCH_BYTES of text, at most BATCH_ROWS
    lines: list[str]  # the first lines, as read


def _profile(path) -> _Profile:
    with open(path, "rb") as fh:
        head = fh.read(PROFILE_BYTES)
    text, _warns = decode(head)
    lines = text.split("\n")[:-1] or [text]
    has_prefix = any(line_prefix(x).end() for x in lines[:2000])
    mean_len = max(1, len(head) // max(1, text.count("\n")))
    rows = max(1, min(BATCH_ROWS, BATCH_BYTES // mean_len))
    return _Profile(has_prefix, bool(ANSI_RE.search(text)), rows, lines)


def _parse_streamed(artefact: Artefact, matcher: Matcher) -> ParsedLog:
    path = artefact.file.path
    profile = _profile(path)
    size = artefact.file.size or Path(path).stat().st_size

    def scanning() -> Progress | None:
        return progress_for(f"scanning {printable(artefact.file.name)}", size, "bytes")

    progress = scanning()
    by_bytes = True
    try:
        try:
            return _stream(artefact, path, matcher, profile, progress)
        except PrefixUnsettled:  # a prefix only polars' Unicode tables tell: the line reader
            by_bytes = False
            if progress:
                progress = scanning()
            return _stream(artefact, path, matcher, profile, progress, by_bytes)
    except pl.exceptions.ComputeError:
        # invalid UTF-8 somewhere past the head: stream a repaired copy kept in a private folder
        # (the input may be the user's own directory, which is never written to)
        with private_folder("hami-utf8-") as tmp:
            repaired = tmp / "repaired.log"
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            with open(path, "rb") as src, open(repaired, "wb") as dst:
                while chunk := src.read(64 << 20):
                    dst.write(decoder.decode(chunk).encode())
                dst.write(decoder.decode(b"", final=True).encode())
            if progress:
                progress = scanning()
            return _stream(artefact, repaired, matcher, profile, progress, by_bytes)
    finally:
        if progress:
            progress.close()


def _edge_klog(path, first: bool) -> str | None:
    """The first or last klog line of a big file, read from its head or tail only."""
    with open(path, "rb") as fh:
        if not first:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - (1 << 20)))
        chunk = fh.read(1 << 20).decode("utf-8", errors="replace")
    lines = chunk.split("\n")
    for line in lines if first else reversed(lines):
        line = PREFIX_RE.sub("", line, count=1)
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

    def add(self, sid: str, rows: pl.DataFrame | None, n: int) -> None:
        """`rows`: new occurrences in line order, at least the first `wanted(sid, n)` (None: no
        rows), the last SIG_TAIL_CAP of all of them in these or later rows; `n`: how many new
        occurrences there were."""
        need = self.wanted(sid, n)
        self.counts[sid] = self.counts.get(sid, 0) + n
        if rows is None:
            return
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


def _total(batch: pl.DataFrame) -> Callable[[str], int]:
    """The sum of a numeric or boolean column of the batch."""
    return lambda name: int(batch.get_column(name).sum())


def _rows(batch: pl.DataFrame, cols: list[str], mask: pl.Series, *extra: pl.Series) -> pl.DataFrame:
    """`cols` of the rows of `batch` where `mask` is true (views of the batch's strings), and
    the same rows of the `extra` series."""
    return pl.DataFrame([s.filter(mask) for s in [*map(batch.get_column, cols), *extra]])


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


def _line_batches(
    path, matcher: Matcher, hot: list[str], profile: _Profile
) -> tuple[list[str], Iterator[Batch]]:
    """The big log's lines through polars' streaming engine: the reader for logs whose lines
    carry prefixes or colours to remove (and wherever the byte scan is not available). Per line
    only cheap expressions run: klog flags, one prefilter regex for all signatures but the hot
    ones, and one regex per hot signature."""
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
    rest = matcher.without(hot)
    flags = [f"_h{i}" for i in range(len(hot))]
    cols = ["line", "raw", "text"] if needs_raw else ["line", "text"]
    # E/F lines of no hot signature (those are matched); without a candidate literal they cannot
    # match any other one either: unmatched (batch analysis wants them)
    err = (pl.col("_e") | pl.col("_f")) & ~pl.any_horizontal(pl.lit(False), *flags)
    lf = (
        (base.with_columns(text.alias("text")) if needs_raw else base)
        .select(
            pl.col("line").cast(pl.Int64),
            *cols[1:],
            pl.col(cols[1]).str.len_bytes().alias("_bytes"),  # for the progress line
            klog.alias("_klog"),
            (klog & t.str.starts_with("E")).alias("_e"),
            (klog & t.str.starts_with("W")).alias("_w"),
            (klog & t.str.starts_with("F")).alias("_f"),
            rest.keep_expr(profile.lines).alias("_keep"),
            *(t.str.contains(matcher.pattern[s]).alias(f) for s, f in zip(hot, flags, strict=True)),
        )
        .with_columns(err.alias("_err"))
        .with_columns((pl.col("_err") & ~pl.col("_keep")).alias("_loose"))
    )

    def batches() -> Iterator[Batch]:
        # Series operations only: a DataFrame's filter or select is a query of its own, which
        # waits for the thread pool that the streaming engine keeps busy
        examined = 0  # E/F lines before the batch
        for batch in lf.collect_batches(chunk_size=profile.batch_rows):
            column = batch.get_column
            total = _total(batch)
            ef = column("_e") | column("_f")
            examinable = ef.cum_sum() + examined <= ERROR_EXAMINED  # among the first E/F lines
            loose = column("_loose") & examinable
            keep = column("_keep")
            examined += int(ef.sum())
            yield Batch(
                lines=batch.height,
                bytes=total("_bytes") + batch.height,  # the text and its newlines
                klog_lines=total("_klog"),
                severities={x: total(f"_{x.lower()}") for x in "EWF"},
                hot=[
                    (sid, _rows(batch, cols, column(f)), total(f))
                    for f, sid in zip(flags, hot, strict=True)
                    if column(f).any()
                ],
                loose=_rows(batch, cols, loose) if loose.any() else None,
                # a candidate no signature takes is a loose line: among the first ones only
                candidates=_own(
                    _rows(batch, cols, keep, (column("_err") & examinable).alias("_err"))
                )
                if keep.any()
                else None,
                hot_ids=tuple(hot),
            )

    return cols, batches()


def _stream(
    artefact,
    path,
    matcher: Matcher,
    profile: _Profile,
    progress: Progress | None,
    by_bytes: bool = True,
) -> ParsedLog:
    """One pass over the file by the byte scan (plain logs) or polars' line reader, then the
    pooled candidates attributed with the signatures' regexes. Sampled rows keep their text, so
    nothing is read twice."""
    from analyzer.parse import scanplan  # a big log's only

    # the first lines as every line is read: a prefixed log's without their prefixes
    prefixed = profile.has_prefix
    head = [x[line_prefix(x).end() :] for x in profile.lines] if prefixed else profile.lines
    matcher = matcher.adapted(head)
    hot = scanplan.hot_signatures(matcher, head)
    # the byte scan reads a log as it is or without its time prefixes (`kubectl logs
    # --timestamps`, CRI); the line reader, colours and kubectl's `[pod/...]` prefixes
    by_bytes = (
        by_bytes
        and not profile.has_ansi
        and not any(line_prefix(x)["container"] for x in profile.lines)
    )
    byte_scan = scanplan.byte_scan(matcher, hot, head, prefixed=prefixed) if by_bytes else None
    if byte_scan is not None:
        cols = ["line", "raw", "text"] if prefixed else ["line", "text"]
        batches = byte_scan.batches(path, replan=scanplan.replanner(matcher, head, prefixed))
    else:
        cols, batches = _line_batches(path, matcher, hot, profile)
    rest = matcher  # the attribution of every signature the batch's scan did not count
    current: tuple[str, ...] | None = None
    stats = LogStats(all_lines_kept=False)
    samples = _Samples()
    errors: list[pl.DataFrame] = []
    n_errors = 0
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
        hit = rest.attribute(kept.select(cols), bulk=True)
        for (sid,), group in hit.partition_by("sig", as_dict=True, maintain_order=True).items():
            samples.add(sid, group.select(cols), group.height)
        e = kept.filter(pl.col("_err") & ~pl.col("line").is_in(hit["line"].implode()))
        errors.append(_own(e.select(cols).head(ERROR_LINE_CAP)))
        if sum(f.height for f in errors) > 2 * ERROR_LINE_CAP:  # keep the first ones only
            errors[:] = [pl.concat(errors).sort("line").head(ERROR_LINE_CAP)]

    for batch in batches:
        if batch.hot_ids != current:  # a scan with more hot signatures from here on
            flush()
            current = batch.hot_ids
            rest = matcher.without(list(current))
        if progress:
            progress.advance(batch.bytes)
        stats.lines += batch.lines
        stats.klog_lines += batch.klog_lines
        for letter, k in batch.severities.items():
            stats.severities[letter] = stats.severities.get(letter, 0) + k
        for sid, rows, k in batch.hot:
            samples.add(sid, rows, k)
        if batch.loose is not None and n_errors < ERROR_LINE_CAP:
            e = _own(batch.loose.head(ERROR_LINE_CAP - n_errors))
            n_errors += e.height
            errors.append(e)
        if batch.candidates is not None:
            pool.append(batch.candidates)
            pooled += int(batch.candidates.estimated_size())
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
    matched: Matched = {}
    hits = matcher.attribute(frame.select("line", "text"), timeouts=stats.timeouts, matched=matched)
    frame = _with_sigs(_with_header(frame), hits)
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)
    stats.pods = _prefix_pods(frame)
    return ParsedLog(artefact, stats, frame, matched)
