"""The timeline stage: one node's time-ordered events (its logs, the shared ones, its Node
object) and the episodes read from them. It evaluates no rule: the report marks the rows its
findings cite (report/build.py); the `timeline` command prints the events as they are."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl
import regex

from analyzer.atomic import atomic_path, write_text
from analyzer.bundle.text import printable
from analyzer.catalogue.datafiles import EpisodeSpec
from analyzer.facts.context import NodeContext
from analyzer.parse.logs import READ_WHOLE_ROWS, ParsedLog, rows_of
from analyzer.parse.times import parse_time as _parse  # one ISO-time parser for all stages

SCHEMA = pl.Schema(  # instances, not classes: typed as polars' data types
    {
        "time": pl.Datetime("us", "UTC"),
        "source": pl.String(),
        "file": pl.String(),
        "line": pl.Int64(),
        "severity": pl.String(),
        "signature": pl.String(),
        "message": pl.String(),
    }
)
SEVERITY_ORDER = {"I": 0, "W": 1, "E": 2, "F": 3}
# polars 2 runs `LazyFrame.collect()` on its streaming engine, whose first query starts threads
# of its own that a few hundred rows do not need
IN_MEMORY: Final = "in-memory"


@dataclass(frozen=True)
class Episode:
    """A moment the timeline stage read from the events: a start, a restart loop, a gap."""

    kind: str
    time: dt.datetime
    text: str
    file: str | None = None
    line: int | None = None
    source: str | None = None


def _node_rows(ctx: NodeContext) -> list[dict[str, Any]]:
    n = ctx.node
    if n is None:
        return []
    rows = []
    created = _parse(n.created)
    if created:
        rows.append({"time": created, "message": f"node {n.name} created"})
    for c in n.conditions:
        t = _parse(c.get("lastTransitionTime"))
        if t:
            rows.append(
                {
                    "time": t,
                    "message": f"condition {c.get('type')} became {c.get('status')} ({c.get('reason', '')})",
                }
            )
    beats = [t for c in n.conditions if (t := _parse(c.get("lastHeartbeatTime")))]
    if beats:
        rows.append({"time": max(beats), "message": "last kubelet heartbeat (collection time)"})
    if ctx.handshake and ctx.handshake.time and ctx.handshake.time.year >= 2000:
        rows.append({"time": ctx.handshake.time, "message": f"handshake {ctx.handshake.text}"})
    for r in rows:
        r.update(source="node", file=n.file, line=n.first_line, severity="I", signature=None)
    return rows


def build_timeline(ctx: NodeContext) -> pl.DataFrame:
    """Every dated line of the node's logs and its Node object's events, in time order."""
    logs = [log for log in ctx.logs if "ts" in log.frame.columns and log.frame.height]
    node_rows = _node_rows(ctx)
    if sum(log.frame.height for log in logs) <= READ_WHOLE_ROWS:  # as rows, sorted in Python
        rows = [*_event_rows(logs), *(tuple(r[c] for c in SCHEMA) for r in node_rows)]
        rows.sort(key=lambda r: r[0])  # stable, as maintain_order: ties stay in this order
        return pl.DataFrame(rows, schema=SCHEMA, orient="row")
    frames = []
    for log in logs:
        columns = {
            "time": pl.col("ts"),
            "source": pl.lit(log.artefact.kind),
            "file": pl.lit(log.artefact.file.name),
            "line": pl.col("line"),
            "severity": pl.col("sev"),
            "signature": pl.col("sigs").list.join(",").replace("", None),
            "message": pl.coalesce(pl.col("msg"), pl.col("text")),
        }
        frames.append(  # in the timeline's types as they are selected (a cast is a call more)
            log.frame.lazy()
            .filter(pl.col("ts").is_not_null())
            .select(x.cast(SCHEMA[name]).alias(name) for name, x in columns.items())
        )
    if node_rows:
        frames.append(pl.DataFrame(node_rows, schema=SCHEMA).lazy())
    if not frames:
        return pl.DataFrame(schema=SCHEMA)
    # one query: a small bundle's logs each filtered and cast, then sorted, cost a query each
    return pl.concat(frames).sort("time", maintain_order=True).collect(engine=IN_MEMORY)


def _event_rows(logs: list[ParsedLog]) -> list[tuple]:
    """The dated lines of these logs as rows in SCHEMA's order, as `build_timeline`'s query
    selects them (a list of signatures joined by commas, the message or else the text)."""
    rows: list[tuple] = []
    for log in logs:
        kind, name = log.artefact.kind, log.artefact.file.name
        columns = ("ts", "line", "sev", "sigs", "msg", "text")
        for ts, line, sev, sigs, msg, text in rows_of(log.frame, columns):
            if ts is not None:
                signature = ",".join(x for x in sigs if x is not None) if sigs else None
                message = msg if msg is not None else text
                rows.append((ts, kind, name, line, sev, signature or None, message))
    return rows


def filter_timeline(frame: pl.DataFrame, sources, severity, since, until) -> pl.DataFrame:
    if sources:
        frame = frame.filter(pl.col("source").is_in(list(sources)))
    if severity:
        if severity.upper() not in SEVERITY_ORDER:
            raise ValueError(f"--severity must be one of I, W, E, F (got {severity!r})")
        allowed = [k for k, v in SEVERITY_ORDER.items() if v >= SEVERITY_ORDER[severity.upper()]]
        frame = frame.filter(pl.col("severity").is_in(allowed))
    for bound, op in ((since, "ge"), (until, "le")):
        if bound:
            t = _parse(bound)
            if t is None:
                raise ValueError(f"bad time {bound!r}: use ISO 8601, e.g. 2026-08-15T09:00:00Z")
            frame = frame.filter(getattr(pl.col("time"), op)(t))
    return frame


def _secs(a: dt.datetime, b: dt.datetime) -> float:
    return (b - a).total_seconds()


def episodes(
    frame: pl.DataFrame, ctx: NodeContext, ep: EpisodeSpec, year_known: bool
) -> tuple[list[Episode], list[str]]:
    """Restarts and restart loops, last annotation update, gaps, leader changes, first fault
    after the last healthy moment; and clock problems, stated rather than hidden."""
    out: list[Episode] = []
    issues: list[str] = []

    def add(kind, time, text, file=None, line=None, source=None):
        out.append(Episode(kind, time, text, file, line, source))

    for source, sid in ep.starts.items():
        starts = [(m.ts, m) for m in ctx.matches(sid) if m.ts is not None]
        for ts, m in starts[1:]:
            add("restart", ts, f"{source} restarted", m.file, m.line, source)
        n, window = ep.restart_count, ep.restart_within
        for i in range(len(starts) - n + 1):
            (first, m), (nth, _) = starts[i], starts[i + n - 1]
            if _secs(first, nth) <= window:
                add(
                    "restart-loop",
                    first,
                    f"{source}: {n} starts within {int(window)}s",
                    m.file,
                    m.line,
                    source,
                )
                break
    upd = [m for m in ctx.matches(ep.annotation_update or "") if m.ts is not None]
    if upd:
        add(
            "last-annotation-update",
            upd[-1].ts,
            "last successful register-annotation update",
            upd[-1].file,
            upd[-1].line,
            "device-plugin-log",
        )
    prev_role = None
    for m in ctx.matches(ep.leader or ""):
        role = m.captures.get("role")
        if role and role != prev_role and m.ts is not None:
            add(
                "leader-change",
                m.ts,
                f"scheduler replica became {role}",
                m.file,
                m.line,
                "scheduler-log",
            )
        prev_role = role or prev_role
    healthy = []
    for sid, where in ep.healthy:
        for m in ctx.matches(sid):
            if m.ts is not None and all(regex.search(p, m.captures.get(c, "")) for c, p in where):
                healthy.append(m.ts)
    last_ok = max(healthy) if healthy else None
    # a small timeline is read as rows, each question answered in Python (two queries cost a
    # small bundle's run ~4 ms); tests/test_episodes.py reads every case both ways
    rows = _rows(frame) if frame.height <= READ_WHOLE_ROWS else None
    # a big log's timeline holds the lines it kept, not all of them
    sampled = frozenset(log.artefact.file.name for log in ctx.logs if not log.stats.all_lines_kept)
    if rows is None:
        flagged, per_file = _flagged_rows(frame, ep.gap_seconds, last_ok, sampled), _clocks(frame)
    else:
        flagged = _flagged_of(rows, ep.gap_seconds, last_ok, sampled)
        per_file = _clocks_of(rows)
    for source in ep.gap_seconds:
        for t, src, file, line, _msg, gap, _fault in flagged:
            if src == source and gap is not None:
                add("gap", t, f"{source} silent for {int(gap)}s before this line", file, line, src)
    if last_ok is not None:
        add("last-healthy", last_ok, "last evidence that registration worked")
    for t, src, file, line, msg, _gap, fault in flagged:
        if fault:
            text = f"first error after the last healthy state: {msg[:160]}"
            add("first-fault", t, text, file, line, src)
    # clock problems
    if not year_known:
        issues.append(
            "klog lines carry no year and the bundle gave no clue: times are shown without a year"
        )
    for file, (back, _a, _b) in per_file.items():
        if back:
            which = f"{back} of the lines kept" if file in sampled else f"{back} line(s)"
            issues.append(
                f"{file}: {which} go back in time (restarts, clock skew or several containers concatenated)"
            )
    # in order of their starts (ties: the one ending first, then by name; polars' order of
    # groups is its hash's, which changes from run to run)
    spans = sorted(
        ((f, a, b) for f, (_back, a, b) in per_file.items()), key=lambda r: (r[1], r[2], r[0])
    )
    for (f1, _a1, b1), (f2, a2, _b2) in itertools.pairwise(spans):
        if a2 > b1:
            issues.append(
                f"{f1} ends ({b1:%m-%d %H:%M:%S}) before {f2} starts ({a2:%m-%d %H:%M:%S}): their times do not overlap"
            )
    out.sort(key=lambda e: e.time)
    return out, issues


GAPS_SHOWN = 20  # per log kind


def _flagged_rows(
    frame: pl.DataFrame,
    gap_seconds: dict[str, float],
    last_ok: dt.datetime | None,
    sampled: frozenset[str] = frozenset(),
) -> list[tuple]:
    """The events that end a gap (a kind of `gap_seconds` silent for longer than its limit
    between two of its lines with a severity; the first GAPS_SHOWN per kind) and the first
    error after `last_ok`, as (time, source, file, line, message, gap, fault) rows in time
    order: one query (a small bundle's run paid a few tenths of a millisecond per query). In a
    `sampled` file (a big log's kept lines) two lines are known to have nothing between them
    only when they are neighbours: others end no gap (the lines between were not kept)."""
    source, severity, file, line = (
        pl.col("source"),
        pl.col("severity"),
        pl.col("file"),
        pl.col("line"),
    )
    limits = {kind: float(seconds) for kind, seconds in gap_seconds.items()}  # YAML: int or float
    limit = source.replace_strict(limits, default=None, return_dtype=pl.Float64)
    dated = severity.is_not_null() & limit.is_not_null()
    gap = pl.when(dated).then(pl.col("time").diff().dt.total_seconds().over(source, dated))
    is_gap = (gap > limit).fill_null(False)
    if sampled:
        before_file, before_line = (
            file.shift().over(source, dated),
            line.shift().over(source, dated),
        )
        neighbours = (file == before_file) & (line == before_line + 1)
        unseen = file.is_in(list(sampled)) | before_file.is_in(list(sampled))
        is_gap = is_gap & (neighbours | ~unseen).fill_null(False)
    fault = severity.is_in(["E", "F"])
    if last_ok is not None:
        fault = fault & (pl.col("time") > last_ok)
    shown = is_gap & (is_gap.cum_sum().over(source) <= GAPS_SHOWN)
    query = (
        frame.lazy()
        .select(
            "time",
            "source",
            "file",
            "line",
            "message",
            pl.when(shown).then(gap).alias("gap"),
            (fault & (fault.cum_sum() == 1)).alias("fault"),
        )
        .filter(pl.col("gap").is_not_null() | pl.col("fault"))
    )
    return query.collect(engine=IN_MEMORY).rows()


# a timeline's row as `_rows` reads it
Row = tuple[dt.datetime, str, str, int, str | None, str | None]


def _rows(frame: pl.DataFrame) -> list[Row]:
    """(time, source, file, line, severity, message) per event, in the timeline's order."""
    return list(rows_of(frame, ("time", "source", "file", "line", "severity", "message")))


def _whole_seconds(delta: dt.timedelta) -> int:
    """A duration's whole seconds, cut toward zero as polars' `dt.total_seconds()` cuts them."""
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1_000_000 if micros >= 0 else -(-micros // 1_000_000)


def _flagged_of(
    rows: list[Row],
    gap_seconds: dict[str, float],
    last_ok: dt.datetime | None,
    sampled: frozenset[str] = frozenset(),
) -> list[tuple]:
    """`_flagged_rows` of a timeline read as rows (a fault that is not the first is False)."""
    limits = {kind: float(seconds) for kind, seconds in gap_seconds.items()}
    # per kind, its last line with a severity: time, file, line
    last: dict[str, tuple[dt.datetime, str, int]] = {}
    gaps: dict[str, int] = {}  # per kind, its gaps so far
    out: list[tuple] = []
    faulted = False
    for time, source, file, line, severity, message in rows:
        gap = None
        limit = limits.get(source)
        if severity is not None and limit is not None:
            before, last[source] = last.get(source), (time, file, line)
            if (
                before is not None
                and (seconds := _whole_seconds(time - before[0])) > limit
                and ((before[1], before[2] + 1) == (file, line) or not {file, before[1]} & sampled)
            ):
                gaps[source] = gaps.get(source, 0) + 1
                gap = seconds if gaps[source] <= GAPS_SHOWN else None
        fault = not faulted and severity in ("E", "F") and (last_ok is None or time > last_ok)
        faulted = faulted or fault
        if gap is not None or fault:
            out.append((time, source, file, line, message, gap, fault))
    return out


def _clocks_of(rows: list[Row]) -> dict[str, tuple[int, dt.datetime, dt.datetime]]:
    """`_clocks` of a timeline read as rows."""
    kinds: dict[tuple[str, str], list[tuple[int, dt.datetime]]] = {}
    for time, source, file, line, _severity, _message in rows:
        if source != "node":
            kinds.setdefault((file, source), []).append((line, time))
    per_kind = []
    for (file, kind), lines in kinds.items():
        times = [time for _line, time in sorted(lines, key=lambda x: x[0])]
        back = sum(_whole_seconds(b - a) < -1 for a, b in itertools.pairwise(times))
        per_kind.append((file, kind, back, min(times), max(times)))
    return _per_file(per_kind)


def _clocks(frame: pl.DataFrame) -> dict[str, tuple[int, dt.datetime, dt.datetime]]:
    """Per file of logged events (not the Node object's), in their order: how many of its lines
    are more than a second earlier than the line before them, and its first and last times.
    The lines before are the file's own, of the same log kind (one issue may paste a scheduler
    log dated before the plugin's log it pasted first), in the file's order (the timeline is
    in time order, where none goes back)."""
    per_kind = (
        frame.filter(pl.col("source") != "node")
        .group_by("file", "source", maintain_order=True)
        .agg(
            (pl.col("time").sort_by("line").diff().dt.total_seconds() < -1).sum().alias("back"),
            pl.col("time").min().alias("a"),
            pl.col("time").max().alias("b"),
        )
        .rows()
    )
    return _per_file(per_kind)


def _per_file(per_kind: list[tuple]) -> dict[str, tuple[int, dt.datetime, dt.datetime]]:
    """(file, kind, lines back, first time, last time) per kind of a file, merged per file in
    their order."""
    out: dict[str, tuple[int, dt.datetime, dt.datetime]] = {}
    for file, _kind, back, a, b in per_kind:
        if file in out:
            before, first, last = out[file]
            back, a, b = before + back, min(first, a), max(last, b)
        out[file] = (back, a, b)
    return out


@dataclass(frozen=True)
class NodeTimeline:
    """A node's events, the episodes found in them and the clocks that disagree."""

    frame: pl.DataFrame  # every event (the `timeline` command writes it)
    episodes: tuple[Episode, ...]
    clock_issues: tuple[str, ...]


def node_timeline(ctx: NodeContext, spec: EpisodeSpec) -> NodeTimeline:
    """The node's events and episodes, from its context alone (its logs and matches)."""
    frame = build_timeline(ctx)
    eps, issues = episodes(frame, ctx, spec, ctx.clock.year is not None)
    return NodeTimeline(frame, tuple(eps), tuple(issues))


@dataclass(frozen=True)
class Shown:
    """Whose timeline the `timeline` command prints, and the bundle's nodes it leaves out."""

    node: str | None
    others: tuple[str, ...] = ()

    @property
    def note(self) -> str | None:
        """What a reader of one node's timeline must know of the others, and how to see them.

        >>> Shown("n1", ("n2", "n3")).note.split("; ")
        ["timeline of node n1, the first of the bundle's 3 nodes", 'not shown: n2, n3 (see one with --node NAME, e.g. --node n2)']
        >>> Shown("n1").note is None
        True
        """
        if not self.others:
            return None
        return (
            f"timeline of node {self.node}, the first of the bundle's {len(self.others) + 1} "
            f"nodes; not shown: {', '.join(self.others)} (see one with --node NAME, e.g. "
            f"--node {self.others[0]})"
        )


def write_timeline(
    frame: pl.DataFrame, fmt: str, output: Path | None, shown: Shown | None = None
) -> None:
    """Text: one event a line, after a `# ` line naming the nodes left out. CSV, JSON and
    parquet: each row names its `node`; parquet also keeps `node` and `nodes_not_shown` in the
    file's metadata (a row format has no place for a note: the command says it on stderr)."""
    import sys

    shown = shown or Shown(None)
    if fmt != "text":
        frame = frame.with_columns(pl.lit(shown.node, pl.String).alias("node"))
    if fmt == "parquet":
        if output is None:  # the command line asks for -o first
            raise ValueError("a parquet timeline needs an output file")
        meta = {"node": shown.node or "", "nodes_not_shown": ",".join(shown.others)}
        with atomic_path(output) as tmp:
            frame.write_parquet(tmp, metadata=meta)
        return
    if fmt == "csv":
        from analyzer.csvsafe import csv_safe

        text = csv_safe(frame).write_csv()
    elif fmt == "json":
        text = frame.write_json()
    else:
        lines = [f"# {shown.note}"] if shown.note else []
        for row in frame.iter_rows(named=True):
            t, src, file, line = row["time"], row["source"], row["file"], row["line"]
            sev, sig, msg, fnd = (
                row["severity"],
                row["signature"],
                row["message"],
                row.get("findings"),
            )
            mark = f" <{fnd}>" if fnd else ""
            lines.append(
                f"{t:%Y-%m-%d %H:%M:%S.%f} {sev or '-'} {src:18} {file}:{line} {('[' + sig + '] ') if sig else ''}{msg}{mark}"
            )
        text = "\n".join(lines) + "\n"
    if fmt != "json" or output is None:  # text and CSV are read on a terminal, files included
        text = printable(text)
    if output is None:
        sys.stdout.write(text)
    else:
        write_text(output, text)
