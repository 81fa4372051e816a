"""Redacting text with a run's redactors, in two passes over a bundle.

`Learner` (first pass): the values to replace everywhere (the names `find` redactors read, the
values of `everywhere` redactors) and the token-shaped words the original already holds.
`Redaction` (second pass) replaces, in this order: `multiline` and `block` redactors over the
whole piece of text; then, line by line, the names found, as literals; then every other
redactor in catalogue order.

A per-line redactor searches only the lines its prefilter selects (see `lines.py`), all at once
(joined by newlines: its patterns must not match across a line end; one that does is run line by
line): on a big log that is one fast polars scan instead of twenty slow regex scans, and Python
work only on the few lines that may hold something. The first pass also keeps, per piece, the
lines the second pass's redactors need (`Plan`), so each piece is scanned once. Every regex call
has a timeout."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial

import polars as pl
import regex

from analyzer.errors import AnalyzerError
from analyzer.parse.bytescan import line_end
from analyzer.redact.alternation import names_alternation
from analyzer.redact.arrow import rows_bytes, text_rows
from analyzer.redact.blocks import block_spans
from analyzer.redact.lineends import LineEnds, join_ends, joined_parts, split_ends
from analyzer.redact.lines import Lines
from analyzer.redact.output import Parts, parts
from analyzer.redact.redactors import TIMEOUT, TIMEOUT_PER_MIB, Redactor
from analyzer.redact.runs import as_column, distinct_runs, replace_runs
from analyzer.redact.tokens import TokenMap

STRETCH = 256 << 10  # bytes of a row of text between planned lines (see `Stretches`)
# planned lines from which a piece's plan is not kept (the second pass selects its lines again):
# a log with an address on every line planned them all, and the plans of a 256 MB one held
# 300 MB until the second pass
PLANNED_MAX = 16_384
MIN_EVERYWHERE = 8  # characters a pattern's value needs to be replaced beyond where it was found
# ... and at most: a longer one is replaced where it is found only (a key's value read to its
# line's end, `password: ` and a megabyte, made the names search of every piece crawl: minutes,
# 1 GB; `regex` looks for a long literal of repeated characters in time that grows with its
# cube, 21 s for 4,096). Values that long and secret have patterns of their own that find them
# anywhere (JWTs, base64 keys)
MAX_EVERYWHERE = 256
# a name is a whole word, but may be joined to others by - _ . / (device-plugin-gpu-1.log,
# kube-apiserver-gpu-1, gpu-1.example.com-): gpu-1 is not in gpu-10 nor in agpu-1
WORD = r"(?<![A-Za-z0-9])(?:{alts})(?![A-Za-z0-9])"
TOKEN_WORD = r"(?<![\w.-])(?:{alts})(?![\w-])"  # a token-shaped word (gpu-node-1 holds none)


def timeout_for(text: str | bytes) -> float:
    return TIMEOUT + TIMEOUT_PER_MIB * len(text) / (1 << 20)


def _timed_out(r_id: str, where: str) -> AnalyzerError:
    return AnalyzerError(
        f"redactor {r_id} timed out on {where} (a pattern that backtracks badly?); nothing was written"
    )


def literal_prefilter(values: list[str]) -> str:
    """A prefilter (Rust regex) for lines holding any of `values`. A byte of invalid UTF-8 in a
    value (read as a lone surrogate: Rust's regex and Hyperscan take no such character) is any
    character there: only a line that is not UTF-8 holds such a value, and polars holds none."""
    return "|".join(
        "".join("." if _SURROGATE.match(c) else regex.escape(c) for c in v)
        for v in sorted(values, key=len, reverse=True)
    )


_SURROGATE = regex.compile("[\udc80-\udcff]")


def token_shapes(redactors: list[Redactor]) -> tuple[regex.Pattern, str]:
    """What a token looks like (to find those the original already holds), and its prefilter."""
    prefixes = "|".join(sorted({regex.escape(r.token) for r in redactors}))
    word = TOKEN_WORD.format(alts=f"(?:{prefixes})-\\d+")
    return regex.compile(word), f"(?:^|[^\\w.-])(?:{prefixes})-[0-9]+(?:[^\\w-]|$)"


def value_spans(
    r: Redactor, p: regex.Pattern, text: str, limit: float
) -> Iterator[tuple[int, int]]:
    """Where a pattern's values are: each match's `value` group, or the whole match. The group
    may sit in a lookbehind, so a pattern can be anchored on a rare part (`.internal`, `/`) and
    look back for the rest: scanning from every word start costs ten times more on a big log."""
    if r.mode == "block":
        yield from block_spans(r, p, text, limit)
        return
    group = "value" if "value" in p.groupindex else 0
    # concurrent: the match runs without Python's lock, beside the other pieces' scans; one call
    # into the match a span (a hot loop: a log can hold an address on every line)
    for m in p.finditer(text, concurrent=True, timeout=limit):
        span = m.span(group)
        yield span if span[0] >= 0 else m.span()


def _values(r: Redactor, text: str, where: str) -> Iterator[tuple[int, str]]:
    """(where, value) of each value `r` would replace in `text` (not kept). Names lose a
    trailing `.` or `-` (the end of a sentence)."""
    limit = timeout_for(text)
    try:
        for p in r.patterns:
            for start, end in value_spans(r, p, text, limit):
                value = text[start:end]
                if r.mode == "find":
                    value = value.rstrip(".-_")
                if value and not r.kept(value):
                    yield start, value
    except TimeoutError:
        raise _timed_out(r.id, where) from None


def find_values(r: Redactor, text: str, where: str) -> dict[str, str]:
    """value -> token prefix for the values `r` finds in `text` that are replaced everywhere:
    the names a `find` redactor reads, and what an `everywhere` redactor matches if long enough
    not to be a common word (a password `nvidia` replaced everywhere would rewrite every resource
    name)."""
    out: dict[str, str] = {}
    for _, value in _values(r, text, where):
        if _everywhere(r, value):
            out.setdefault(value, r.token)
    return out


def _everywhere(r: Redactor, value: str) -> bool:
    """Whether a value `r` found is replaced wherever it is (a name always, if not too long)."""
    return (1 if r.mode == "find" else MIN_EVERYWHERE) <= len(value) <= MAX_EVERYWHERE


def lines_values(
    r: Redactor, text: str, where: str, holding: bool = True
) -> tuple[dict[str, str], list[int]]:
    """`find_values` of a per-line redactor over some lines (`text`: them joined by newlines,
    `Lines.joined`), all at once, and which of the lines hold a value it would replace: the
    second pass needs only those (`holding`: when it plans the piece), and never a `find`
    redactor's (its values are replaced as names, wherever they are), so of it only the values
    are read."""
    listed = _listed_values(r, text, where)
    holds = holding and r.mode != "find"
    if listed is not None and not holds:
        return _found_listed(r, listed), []
    if listed is not None and _kept_all(r, listed):
        return {}, []
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    found: dict[str, str] = {}
    held: set[int] = set()
    for start, value in _values(r, text, where):
        if "\n" in value:  # a pattern that crosses a line end: line by line
            found, every = _line_by_line(r, lines, where)
            return found, every if holds else []
        held.add(bisect_right(starts, start) - 1)
        if _everywhere(r, value):
            found.setdefault(value, r.token)
    return found, sorted(held) if holds else []


def dense_values(r: Redactor, text: str | bytes, where: str) -> dict[str, str] | None:
    """`find_values` of a `runs` redactor over a whole piece, read from its distinct runs
    (`runs.py`): a run lies within a line and holds a prefilter match, so the lines the
    prefilter selects hold them all, and a value first found in a run is first found in that
    run's first occurrence. None when runs do not pay here, or polars cannot hold the text."""
    assert r.runs is not None and r.prefilter is not None
    column = as_column(text)
    runs = None if column is None else distinct_runs(r.runs, r.prefilter, column)
    listed = None if runs is None else _listed_values(r, "\n".join(runs.texts), where)
    return None if listed is None else _found_listed(r, listed)


def _selecting(r: Redactor) -> str:
    """A per-line redactor's prefilter as the first pass asks it: which lines it selects. One
    whose values may fill every line (`runs`) and whose matches' ends do not matter (no kept
    shape) reads on to the line's end, so Hyperscan reports a line once, not each value on it
    (an address twice on every line of a scheduler's loop: 218,000 reports a 16 MiB piece, a
    Python call each; its scan 111 against 90 ms, the same on other logs; MAC's and IPv6's
    prefilters read so cost 16-18 ms a piece more)."""
    if r.runs is None or r.kept_prefilter is not None:
        return str(r.prefilter)
    return f"(?:{r.prefilter})[^\\n]*$"


def _listed_values(r: Redactor, text: str, where: str) -> list[str] | None:
    """The values `r`'s patterns find in `text`, each once, in the order found, as the
    `findall` of each lists them in C: on a big log a Python step per match cost as much as the
    match (the registry pattern on client-go's `k8s.io/...` lines; a node name on every line of
    a loop). None when unsure (a block redactor; a pattern whose list does not tell a missing
    `value` group from an empty one, or with other groups; a value across a line end): the
    caller then looks at each."""
    if r.mode == "block":
        return None
    limit = timeout_for(text)
    listed: dict[str, None] = {}
    try:
        for p in r.patterns:
            if p.groups > 1 or (p.groups == 1 and "value" not in p.groupindex):
                return None
            # not `concurrent`: findall takes Python's lock back for every match it lists, and
            # waited for it most of the time while the other worker held it
            found = p.findall(text, concurrent=False, timeout=limit)
            if found and not isinstance(found[0], str):  # the one group in several places
                found = [v[0] for v in found]  # (`(?P<value>..)|(?P<value>..)`): 1-tuples
            listed.update(dict.fromkeys(found))
    except TimeoutError:
        raise _timed_out(r.id, where) from None
    if "" in listed or any("\n" in v for v in listed):  # an empty value, or no `value` taken
        return None
    return list(listed)


def _kept_all(r: Redactor, listed: list[str]) -> bool:
    """Whether every listed value is kept (then `_values` would yield none)."""
    for value in set(listed):
        if r.mode == "find":
            value = value.rstrip(".-_")
        if value and not r.kept(value):
            return False
    return True


def _found_listed(r: Redactor, listed: list[str]) -> dict[str, str]:
    """`find_values` made from the listed values as `_values` makes them (a name's trailing
    `.`, `-` or `_` dropped, kept values left out), in the order found."""
    out: dict[str, str] = {}
    for value in dict.fromkeys(listed):
        if r.mode == "find":
            value = value.rstrip(".-_")
        if _everywhere(r, value) and value not in out and not r.kept(value):
            out[value] = r.token
    return out


def _line_by_line(r: Redactor, lines: list[str], where: str) -> tuple[dict[str, str], list[int]]:
    found: dict[str, str] = {}
    for line in lines:
        for value, prefix in find_values(r, line, where).items():
            found.setdefault(value, prefix)
    return found, [] if r.mode == "find" else list(range(len(lines)))


@dataclass
class Plan:
    """What the first pass saw in one piece, for the second: the whole-text redactors some line
    calls for, and the lines each per-line redactor of the second pass needs."""

    whole: set[str] = field(default_factory=set)
    lines: dict[str, list[int]] = field(default_factory=dict)
    # the per-line redactors that redact the whole piece run by run (`Learner.lesson`): their
    # lines are not planned
    dense: frozenset[str] = frozenset()
    starts: dict[int, int] = field(default_factory=dict)  # where those lines start in the piece
    # the piece's size when the first pass kept it as bytes (valid UTF-8 without a carriage
    # return): the second pass's piece of that size is not read through again to check
    kept_as_bytes: int = field(default=-1, compare=False)

    def planned(self) -> list[int]:
        return sorted({i for idx in self.lines.values() for i in idx})


@dataclass(frozen=True)
class Lesson:
    """What one piece of the first pass teaches, found without touching the learner's state
    (`Learner.lesson`; a worker may find it): the piece's size, the token-shaped words it holds,
    the values to replace everywhere in the order the learner takes them (the first found keeps
    its prefix), and the piece's plan for the second pass. It holds no text, so a worker process
    hands it back small."""

    size: int
    reserved: list[str]
    found: list[dict[str, str]]
    plan: Plan | None  # None: more than PLANNED_MAX lines planned
    # (place in `found`, redactor id, part) of the values a forked worker left to its caller
    # (`dense_values` runs polars, which a forked process must not)
    deferred: tuple[tuple[int, str, int], ...] = ()


@dataclass(frozen=True)
class NamesSplit:
    """A piece's name lines: those polars replaces (the names in them, how many) and the rest."""

    rows: list[int]
    present: list[str]
    count: int
    by_regex: list[int]


@dataclass(frozen=True)
class Stretches:
    """A piece of the second pass cut around the lines a per-line redactor needs: `texts`, the
    piece in order, each such line a row of its own (at `rows`) and the stretches between them
    in rows of about STRETCH bytes cut after a newline; `present`, the names in them, in order,
    and how many times they occur."""

    lines: list[int]  # the planned lines, in order
    rows: list[int]  # the row of each
    texts: pl.Series
    present: list[str]
    count: int


@dataclass(frozen=True)
class Prepared:
    """A piece of the second pass, split and scanned ahead of its redaction. A crowded piece
    (`Redaction._names_whole`) whose text no whole-text redactor rewrites first has its names cut
    ahead too (`ahead`: the cut, or None where a name touches a letter or digit, in a tuple)."""

    lines: Lines
    plan: Plan | None
    names: NamesSplit | Stretches | None
    ahead: tuple[Stretches | None] | None = None
    ends: LineEnds | None = None  # the piece's carriage returns, put back by `finish`


class Learner:
    """The first pass (see the module's docstring)."""

    def __init__(self, redactors: list[Redactor]):
        self.learn = [r for r in redactors if r.everywhere]
        # what the second pass runs: whole-text redactors gated by a line, per-line redactors
        self.gates = [r for r in redactors if not r.per_line and r.prefilter is not None]
        self.per_line = [r for r in redactors if r.per_line and (r.everywhere or r.mode != "find")]
        self.shapes, self.shapes_prefilter = token_shapes(redactors)
        # per per-line redactor, the redactors its patterns make alone, each with its own
        # prefilter (one, with the redactor's, when it declares none per pattern): a node name's
        # fourteen patterns read every line one of them selects, on a log where `nodeName=` is on
        # every other line 1.2 s a 16 MiB piece
        self.parts = {
            r.id: [
                replace(r, patterns=(p,), prefilter=f, pattern_prefilters=())
                for p, f in zip(r.patterns, pf, strict=True)
            ]
            if (pf := r.pattern_prefilters)
            else [r]
            for r in self.per_line
        }
        self.names: dict[str, str] = {}
        self.reserved: set[str] = set()

    def text(self, text: str, where: str) -> Plan | None:
        return self.take(self.lesson(Lines(split_ends(text)[0]), where))

    def piece(self, raw: bytes, where: str) -> Plan | None:
        return self.take(self.prepare(raw, where))

    def prepare(self, raw: bytes, where: str, plain: bool = False, forked: bool = False) -> Lesson:
        """A piece split, scanned and studied (no state is touched: a worker may do it);
        `plain`: see `Lines.of_bytes`; `forked`: in a forked process (see `Lesson.deferred`)."""
        size = len(raw)
        raw = split_ends(raw)[0]  # the second pass splits the same piece alike
        lines = Lines.of_bytes(raw, plain)
        lines.size = size
        lesson = self.lesson(lines, where, forked)
        if lines.raw is not None and lesson.plan is not None:
            lesson.plan.kept_as_bytes = len(raw)
        return lesson

    def complete(self, lesson: Lesson, raw: bytes, where: str) -> Lesson:
        """A forked worker's lesson with the values it left (`Lesson.deferred`) found in its
        piece; the piece studied here when runs do not pay in it after all."""
        found = list(lesson.found)
        piece = split_ends(raw)[0]  # as the worker read it
        for place, r_id, k in lesson.deferred:
            values = dense_values(self.parts[r_id][k], piece, where)
            if values is None:
                return self.prepare(raw, where)
            found[place] = values
        return replace(lesson, found=found, deferred=())

    @property
    def prefilters(self) -> list[str]:
        parts = [part for r in self.per_line for part in self.parts[r.id]]
        gates = [str(r.prefilter) for r in self.gates]
        return [self.shapes_prefilter, *gates, *(_selecting(part) for part in parts)]

    @property
    def kept(self) -> tuple[str | None, ...]:
        """Each prefilter's kept shape (`hyper.py`; a per-line redactor's only): the lines only
        it would select hold only values the first pass would find kept, and plan for nothing."""
        parts = [part for r in self.per_line for part in self.parts[r.id]]
        return (None, *(None for _ in self.gates), *(r.kept_prefilter for r in parts))

    def lesson(self, lines: Lines, where: str, forked: bool = False) -> Lesson:
        """What the lines teach, found without touching the learner's state: the per-line
        redactors' values are a piece's costliest Python, and a worker that finds them frees
        the thread that learns (in order: the first value found keeps its prefix)."""
        hits = lines.hits(self.prefilters, self.kept)
        reserved: list[str] = []
        for line in lines.get(hits[0]):
            reserved += self.shapes.findall(line)
        plan = Plan({r.id for r, h in zip(self.gates, hits[1:], strict=False) if h})
        selected = iter(hits[1 + len(self.gates) :])
        parts = {r.id: [(part, next(selected)) for part in self.parts[r.id]] for r in self.per_line}
        plan.lines = {
            i: sorted({n for _, idx in pairs for n in idx}) if len(pairs) > 1 else pairs[0][1]
            for i, pairs in parts.items()
        }
        whole = [r for r in self.learn if not r.per_line]
        whole = [r for r in whole if r.prefilter is None or r.id in plan.whole]
        text = lines.text() if whole else ""
        found = [find_values(r, text, where) for r in whole]
        # a redactor declaring runs whose prefilter selects more lines than a plan may hold (an
        # address on every line) redacts the whole piece run by run in the second pass, and
        # its values are read here from the runs too (`dense_values`)
        plan.dense = frozenset(
            r.id
            for r in self.per_line
            if r.runs is not None and r.mode != "find" and len(plan.lines[r.id]) > PLANNED_MAX
        )
        # a piece whose other lines the second pass's redactors select by the tens of thousands
        # keeps no plan: the second pass selects them itself, and the lines holding a value are
        # not sought here (a step per match, most of such a piece's first pass)
        crowded = {
            n
            for r in self.per_line
            if r.mode != "find" and r.id not in plan.dense
            for n in plan.lines[r.id]
        }
        keep_plan = len(crowded) <= PLANNED_MAX
        deferred: list[tuple[int, str, int]] = []
        for r in self.learn:
            if r.per_line and r.id in plan.dense:
                for j, (part, idx) in enumerate(parts[r.id]):
                    if not idx:
                        continue
                    if forked:  # its caller reads them (`complete`)
                        deferred.append((len(found), r.id, j))
                        found.append({})
                        continue
                    piece = lines.raw if lines.raw is not None else lines.text()
                    values = dense_values(part, piece, where)
                    if values is None:  # runs do not pay here: line by line
                        values, _ = lines_values(part, lines.joined(idx), where, False)
                    found.append(values)
            elif r.per_line and plan.lines.get(r.id):
                # beside a dense redactor, the second pass reads every line selected (the whole
                # piece is rewritten anyway), as it does a piece it plans itself: a name it
                # replaces there may make a value of what was none (`gpu_a.acme.internal`)
                holding = keep_plan and not plan.dense
                holds: set[int] = set()
                for part, idx in parts[r.id]:
                    if not idx:  # each pattern on the lines its own prefilter selects
                        continue
                    values, held = lines_values(part, lines.joined(idx), where, holding)
                    found.append(values)
                    holds.update(idx[k] for k in held)
                if holding or r.mode == "find":  # a name is replaced wherever it is
                    plan.lines[r.id] = sorted(holds)  # the second pass needs no other
        for r_id in plan.dense:
            del plan.lines[r_id]  # the second pass reads the whole piece
        planned = plan.planned()
        if not keep_plan or len(planned) > PLANNED_MAX:
            return Lesson(lines.size, reserved, found, None, tuple(deferred))
        plan.starts = lines.starts(planned)
        return Lesson(lines.size, reserved, found, plan, tuple(deferred))

    def take(self, lesson: Lesson) -> Plan | None:
        """What a piece taught, taken in order; the piece's plan (None: the second pass makes
        it)."""
        self.reserved.update(lesson.reserved)
        for found in lesson.found:
            self._add(found)
        return lesson.plan

    def _add(self, found: dict[str, str]) -> None:
        for value, prefix in found.items():
            self.names.setdefault(value, prefix)


class Redaction:
    """The second pass: the names found in the whole bundle and the token map every file shares."""

    def __init__(self, redactors: list[Redactor], names: dict[str, str], tokens: TokenMap):
        others = [r for r in redactors if r.mode != "find"]  # find: all in `names`
        self.whole = [r for r in others if not r.per_line]
        self.per_line = [r for r in others if r.per_line]
        self.ids = [r.id for r in self.per_line]
        self.names = {n: p for n, p in names.items() if n and "\n" not in n}
        self.tokens = tokens
        self.counts: Counter[str] = Counter()
        ordered = sorted(self.names, key=len, reverse=True)
        alts = "|".join(regex.escape(n) for n in ordered)
        self.literal = (
            regex.compile(WORD.format(alts=names_alternation(ordered))) if self.names else None
        )
        self.names_prefilter = literal_prefilter(ordered) if self.names else None
        # a name with the letter or digit it may touch (gpu-1 in gpu-10: the regex is needed)
        self.names_touching = f"[A-Za-z0-9]?(?:{alts})[A-Za-z0-9]?"
        # a name holding a byte of invalid UTF-8 (a secret cut mid-character) is in no text
        # polars holds: the names are then replaced by the regex alone
        utf8 = not any(_SURROGATE.search(n) for n in self.names)
        self.names_list = pl.Series(list(self.names) if utf8 else [], dtype=pl.String)
        self.names_clear = utf8 and _clear(set(self.names))

    def text(self, text: str, where: str) -> str:
        text, ends = split_ends(text)
        return join_ends(self._run(Lines(text), where, None, None).text(), ends)

    def piece(self, raw: bytes, where: str, plan: Plan | None = None) -> bytes:
        """A piece of a file; `plan`: what the first pass saw in this very piece."""
        return b"".join(parts(self.finish(self.prepare(raw, plan), where)))

    def prepare(self, raw: bytes, plan: Plan | None) -> Prepared:
        """A piece split and scanned for names (no state is touched: a background thread may do
        it; `finish` assigns the tokens, in order)."""
        size = len(raw)
        # a piece the first pass kept as bytes at this length held no carriage return at all
        plain = plan is not None and plan.kept_as_bytes == size
        raw, ends = (raw, None) if plain else split_ends(raw)
        prepared = self._prepare(raw, plan)
        prepared.lines.size = size
        return replace(prepared, ends=ends) if ends is not None else prepared

    def _prepare(self, raw: bytes, plan: Plan | None) -> Prepared:
        lines = Lines.of_bytes(raw, plan is not None and plan.kept_as_bytes == len(raw))
        if plan is None or plan.dense or plan.whole & {r.id for r in self.whole if r.prefilter}:
            if self._crowded_as_is(lines, plan):  # its names cut here, beside the last piece's
                return Prepared(lines, plan, None, (self._stretches(lines, []),))
            return Prepared(lines, plan, None)
        planned = plan.planned()
        if lines.raw is not None and all(i in plan.starts for i in planned):
            lines.know(plan.starts)  # the lines the first pass kept: no split, no scan
            if not self.names:
                return Prepared(lines, plan, None)
            if all(r.prefilter is not None for r in self.whole):  # none runs on the whole piece
                cut = self._stretches(lines, planned)
                if cut is not None:
                    return Prepared(lines, plan, cut)
        idx = lines.hits([self.names_prefilter])[0] if self.names_prefilter else []
        return Prepared(lines, plan, self._names_split(lines, idx) if idx else None)

    def finish(self, prepared: Prepared, where: str) -> Parts:
        """The piece redacted, in parts to write in order (joining them would copy the piece);
        or, for a piece cut in stretches, a function that makes them: the tokens are assigned
        here, in order, and the names replaced in the stretches by whoever calls it (the
        writer's thread, while the next piece is redacted)."""
        return joined_parts(self._finish(prepared, where), prepared.ends)

    def _finish(self, prepared: Prepared, where: str) -> Parts:
        cut, plan = prepared.names, prepared.plan
        if isinstance(cut, Stretches) and plan is not None:
            render = self._names_stretches(prepared.lines, cut)
            lines = self._per_line(prepared.lines, prepared.lines, plan, where)
            done = [line.encode("utf-8") for line in lines.get(cut.lines)]
            return partial(_spliced, render, cut.rows, done)
        split = cut if isinstance(cut, NamesSplit) else None
        return [self._run(prepared.lines, where, plan, split, prepared.ahead).bytes()]

    def _crowded_as_is(self, lines: Lines, plan: Plan | None) -> bool:
        """Whether a piece is crowded (`_names_whole`: no plan, or a dense one), held as bytes,
        holds names to look for, and is left as it is by the whole-text redactors, which run
        before the names (each has a prefilter, and none selects a line of it)."""
        if (
            self.names_prefilter is None
            or lines.raw is None
            or (plan is not None and not plan.dense)
            or any(r.prefilter is None for r in self.whole)
        ):
            return False
        whole = (self._plan_of(lines) if plan is None else plan).whole
        return not whole & {r.id for r in self.whole}

    def _plan_of(self, lines: Lines) -> Plan:
        """A piece's plan where the first pass kept none: the whole-text redactors whose
        prefilter selects a line, and the lines each per-line redactor needs, selected at once
        (`Lines.hits` keeps them: `prepare` and `_run` ask alike)."""
        gates = [r for r in self.whole if r.prefilter is not None]
        hits = lines.hits([str(r.prefilter) for r in [*gates, *self.per_line]])
        plan = Plan({r.id for r, h in zip(gates, hits, strict=False) if h})
        plan.lines = dict(zip(self.ids, hits[len(gates) :], strict=True))
        return plan

    def _stretches(self, lines: Lines, planned: list[int]) -> Stretches | None:
        """The piece cut for the names (see `Stretches`), or None when a name touches a letter or
        digit in it (then it is split into lines, see `_names_split`). Where none touches,
        Aho-Corasick (leftmost-first, longest name first) replaces what the regex would, so the
        stretches between the planned lines go through polars whole, never split into lines;
        whether one touches is asked as `_names_split` asks it of each line."""
        raw = lines.raw
        assert raw is not None
        if not self.names_clear:
            return None
        starts = lines.starts(planned)
        bounds: list[int] = [0]  # row k is raw[bounds[k] : bounds[k + 1]]
        rows: list[int] = []
        pos = 0
        for i in [*planned, None]:
            stop = len(raw) if i is None else starts[i]
            while stop - pos > STRETCH and (cut := raw.find(b"\n", pos + STRETCH, stop)) >= 0:
                pos = cut + 1  # polars reads a long text slower
                bounds.append(pos)
            bounds.append(stop)
            if i is not None:
                rows.append(len(bounds) - 1)
                pos = line_end(raw, stop)
                bounds.append(pos)
        try:  # valid UTF-8 (a piece held as bytes is), cut after newlines: in place, no copy
            series = text_rows(raw, bounds)
            found = series.str.extract_all(self.names_touching).explode().drop_nulls()
            if not found.is_in(self.names_list.implode()).all():
                return None
        except pl.exceptions.PolarsError:
            return None
        present = found.unique(maintain_order=True).to_list()
        return Stretches(planned, rows, series, present, len(found))

    def _names_stretches(self, lines: Lines, cut: Stretches) -> Callable[[], list[bytes]]:
        """The names replaced in the planned lines (put), and a function that replaces them in
        the piece's rows (row by row, so the planned rows alone give what they give among the
        others) and returns these as bytes."""
        texts = cut.texts
        if not cut.present:
            lines.put(cut.lines, texts.gather(cut.rows).to_list())
            return partial(_as_bytes, texts)
        tokens = {v: self.tokens.token(self.names[v], v) for v in cut.present}
        order = sorted(cut.present, key=len, reverse=True)
        values = [tokens[v] for v in order]
        self.counts["names"] += cut.count
        planned = texts.gather(cut.rows).str.replace_many(order, values, leftmost=True)
        lines.put(cut.lines, planned.to_list())
        return partial(_replaced, texts, order, values)

    def _run(
        self,
        lines: Lines,
        where: str,
        plan: Plan | None,
        names: NamesSplit | None,
        ahead: tuple[Stretches | None] | None = None,
    ) -> Lines:
        """`ahead`: a crowded piece's names as `prepare` cut them (`Prepared.ahead`)."""
        unplanned = plan is None
        if plan is None:
            plan = self._plan_of(lines)
        run = [r for r in self.whole if r.prefilter is None or r.id in plan.whole]
        if run:
            original = text = lines.text()
            for r in run:
                text = self._redact(r, text, where)
            if text != original:  # rare: a key, a Secret; the lines are selected again
                lines, names, ahead = Lines(text), None, None
                hits = lines.hits([str(r.prefilter) for r in self.per_line])
                plan = Plan(plan.whole, dict(zip(self.ids, hits, strict=True)))
        selected = lines  # the lines as the prefilters selected them
        if self.names_prefilter is not None:  # first: the lines are still as polars holds them
            crowded = unplanned or plan.dense
            whole = self._names_whole(lines, ahead) if crowded and lines.raw is not None else None
            if whole is not None:
                lines = whole
            elif idx := lines.hits([self.names_prefilter])[0]:
                split = names if isinstance(names, NamesSplit) else None
                self._names_lines(lines, split or self._names_split(lines, idx), where)
        return self._per_line(lines, selected, plan, where)

    def _names_whole(self, lines: Lines, ahead: tuple[Stretches | None] | None) -> Lines | None:
        """A crowded piece's names (`Learner.lesson`: a value on most lines) replaced in the
        whole piece at once, without selecting a line (`_stretches`, without planned lines, or
        `ahead`, the cut `prepare` made): new lines, or these when none is there; None when a
        name touches a letter or digit (then the lines holding one are selected as in any
        piece)."""
        cut = ahead[0] if ahead is not None else self._stretches(lines, [])
        if cut is None:
            return None
        if not cut.present:
            return lines
        rows = self._names_stretches(lines, cut)()
        return Lines.of_bytes(b"".join(rows), plain=True)

    def _per_line(self, lines: Lines, selected: Lines, plan: Plan, where: str) -> Lines:
        """The per-line redactors in order, each on the lines `plan` says it needs (selected
        in `selected`, which has as many lines), or on the whole piece run by run where its
        values are on most lines (`Plan.dense`, or so many selected here)."""
        for r in self.per_line:
            idx = plan.lines.get(r.id)
            if r.runs is not None and (idx is None or len(idx) > PLANNED_MAX):
                dense = self._dense(r, lines, where)
                if dense is not None:
                    lines = dense
                    continue
            if idx is None:  # runs do not pay here after all: the lines it needs
                idx = selected.hits([str(r.prefilter)])[0]
            if idx:
                before = lines.get(idx)
                after = self._redact(r, "\n".join(before), where).split("\n")
                if len(after) != len(before):  # a pattern that crosses a line end
                    after = [self._redact(r, line, where) for line in before]
                changed = [k for k, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
                lines.put([idx[k] for k in changed], [after[k] for k in changed])
        return lines

    def _names_split(self, lines: Lines, idx: list[int]) -> NamesSplit:
        """Which of the selected lines polars can replace the names of: those where no name
        touches a letter or digit (there Aho-Corasick, leftmost-first, longest name first, does
        what the regex does), found by extracting each name with the character on either side:
        a match that is not exactly a name (gpu-1 of gpu-10 when gpu-10 is none) touches. The
        others go through the regex, all at once (a name never spans a line end)."""
        if len(idx) < 64 or lines.small or not lines.exact or not self.names_clear:
            return NamesSplit([], [], 0, idx)
        try:
            found = (
                pl.DataFrame({"t": lines.series.gather(idx)})
                .with_row_index("j")
                .select("j", pl.col("t").str.extract_all(self.names_touching).alias("m"))
                .explode("m")
                .drop_nulls("m")
            )
            bad = found.filter(~pl.col("m").is_in(self.names_list.implode())).get_column("j")
            clean = found.filter(~pl.col("j").is_in(bad.unique().implode()))
            rows = clean.get_column("j").unique(maintain_order=True).to_list()
            present = clean.get_column("m").unique(maintain_order=True).to_list()
        except pl.exceptions.PolarsError:
            return NamesSplit([], [], 0, idx)
        regex_rows = sorted(set(range(len(idx))) - set(rows))
        return NamesSplit(
            [idx[j] for j in rows], present, clean.height, [idx[j] for j in regex_rows]
        )

    def _names_lines(self, lines: Lines, split: NamesSplit, where: str) -> None:
        if split.rows:
            tokens = [self.tokens.token(self.names[v], v) for v in split.present]
            order = sorted(range(len(tokens)), key=lambda k: len(split.present[k]), reverse=True)
            done = (
                lines.series.gather(split.rows)
                .str.replace_many(
                    [split.present[k] for k in order], [tokens[k] for k in order], leftmost=True
                )
                .to_list()
            )
            self.counts["names"] += split.count
            lines.put(split.rows, done)
        self._names_joined(lines, split.by_regex, where)

    def _names_joined(self, lines: Lines, idx: list[int], where: str) -> None:
        if idx:
            lines.put(idx, self._names(lines.joined(idx), where).split("\n"))

    def _names(self, text: str, where: str) -> str:
        assert self.literal is not None
        try:
            return self.literal.sub(self._name, text, concurrent=True, timeout=timeout_for(text))
        except TimeoutError:
            raise _timed_out("(names found)", where) from None

    def _name(self, m: regex.Match) -> str:
        self.counts["names"] += 1
        return self.tokens.token(self.names[m.group()], m.group())

    def _redact(self, r: Redactor, text: str, where: str) -> str:
        try:
            text, replaced = self._redacted(r, text, timeout_for(text))
        except TimeoutError:
            raise _timed_out(r.id, where) from None
        if replaced:
            self.counts[r.id] += replaced
        return text

    def _dense(self, r: Redactor, lines: Lines, where: str) -> Lines | None:
        """The whole piece redacted by `r` run by run (`runs.py`: each distinct run once), as
        new lines; the same lines when nothing changed; None when runs do not pay here (most
        are distinct) or polars cannot hold the text. A run lies within a line and holds a
        prefilter match, so the lines the prefilter selects hold them all."""
        assert r.runs is not None and r.prefilter is not None
        raw = lines.bytes()
        column = as_column(raw)
        runs = None if column is None else distinct_runs(r.runs, r.prefilter, column)
        if column is None or runs is None:
            return None
        limit = timeout_for(raw)
        redacted = list(runs.texts)
        try:  # each regex over every run, then the next, as over the lines: tokens in that order
            for p in r.patterns:
                for k, count in enumerate(runs.counts):
                    redacted[k], replaced = self._replace(r, p, redacted[k], limit)
                    if replaced:
                        self.counts[r.id] += replaced * count
        except TimeoutError:
            raise _timed_out(r.id, where) from None
        if redacted == runs.texts:
            return lines
        done = replace_runs(column, runs.texts, redacted).cast(pl.Binary).item()
        return Lines.of_bytes(done, plain=lines.raw is not None)

    def _redacted(self, r: Redactor, text: str, limit: float) -> tuple[str, int]:
        """`text` redacted by each of `r`'s patterns in turn, and how many values were replaced."""
        replaced = 0
        for p in r.patterns:
            text, count = self._replace(r, p, text, limit)
            replaced += count
        return text, replaced

    def _replace(self, r: Redactor, p: regex.Pattern, text: str, limit: float) -> tuple[str, int]:
        """Each value replaced by its token (the same value, the same token). Each value's
        token (or that it stays) is asked once: a log with an address on every line has a few
        thousand of them in a piece's 300,000 matches, and the asking was most of the time."""
        out: list[str] = []
        pos = replaced = 0
        tokens: dict[str, str] = {}
        stays: set[str] = {""}
        for start, end in value_spans(r, p, text, limit):
            value = text[start:end]
            if start < pos or value in stays or self.tokens.is_token(value):
                continue
            token = tokens.get(value)
            if token is None:
                if r.kept(value):
                    stays.add(value)
                    continue
                token = tokens[value] = self.tokens.token(r.token, value)
            replaced += 1
            out += (text[pos:start], token)
            pos = end
        return ("".join(out) + text[pos:] if out else text), replaced


def _as_bytes(texts: pl.Series) -> list[bytes]:
    return rows_bytes(texts.cast(pl.Binary))


def _replaced(texts: pl.Series, names: list[str], tokens: list[str]) -> list[bytes]:
    """The rows with the names replaced (leftmost-first, in the order given), as bytes."""
    return _as_bytes(texts.str.replace_many(names, tokens, leftmost=True))


def _spliced(render: Callable[[], list[bytes]], rows: list[int], lines: list[bytes]) -> list[bytes]:
    """The rows `render` makes, with the planned lines (redacted already) at their rows."""
    out = render()
    for row, line in zip(rows, lines, strict=True):
        out[row] = line
    return out


def _clear(names: set[str]) -> bool:
    """Whether a name extracted with the letter or digit it may touch tells the truth: not when
    a name is another one with a letter or digit before it (and maybe one after): with `aa-10`
    and `a-1`, `[A-Za-z0-9]?` takes the first `a` of `aa-10.lab` and the match reads `aa-10`, a
    name, although the name there is `aa-10.lab`; then the names are replaced by the regex. A
    letter or digit only after (`gpu-1`, `gpu-10`) is harmless: the longer name is tried first."""
    for name in names:
        if name[:1].isascii() and name[:1].isalnum():
            tail = name[-1:].isascii() and name[-1:].isalnum()
            if name[1:] in names or (tail and name[1:-1] in names):
                return False
    return True


def redact_text_alone(r: Redactor, text: str) -> str:
    """A text as this one redactor would leave it (its examples are checked this way).

    >>> from analyzer.redact.redactors import load_redactors
    >>> ip = next(r for r in load_redactors() if r.id == "ipv4")
    >>> redact_text_alone(ip, "Node: gpu-node-2/10.30.15.55, listen on 0.0.0.0:443")
    'Node: gpu-node-2/ip-1, listen on 0.0.0.0:443'
    """
    learner = Learner([r])
    learner.text(text, "an example")
    return Redaction([r], learner.names, TokenMap()).text(text, "an example")


def example_failure(r: Redactor) -> str | None:
    """Why the redactor fails one of its own examples (None when all pass): a `redact` example
    must change, a `keep` example must not, each redacted by this redactor alone."""
    if not r.examples_redact:
        return "has no 'examples: {redact: [...]}'"
    for want_change, examples in ((True, r.examples_redact), (False, r.examples_keep)):
        for ex in examples:
            try:
                changed = redact_text_alone(r, ex) != ex
            except AnalyzerError as exc:
                return str(exc)
            if changed != want_change:
                verb = "did not redact" if want_change else "redacted"
                return f"{verb} its example {ex[:80]!r}"
    return None
