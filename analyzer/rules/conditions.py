"""The rule condition language, parsed once at load time into typed nodes.

Every node evaluates to an Outcome with three states: TRUE (with the evidence that makes it so),
FALSE, or UNKNOWN (the artefact that would decide it is not in the bundle; `missing` names its
kinds). UNKNOWN is never evidence of absence: `not` of UNKNOWN is UNKNOWN, and a signature that
did not match counts as absent only when the bundle holds a log where it would have been printed.

    all: [c, ...]        FALSE if any is FALSE, else UNKNOWN if any is UNKNOWN, else TRUE
    any: [c, ...]        TRUE if any is TRUE, else UNKNOWN if any is UNKNOWN, else FALSE
    not: c               swaps TRUE and FALSE, keeps UNKNOWN
    signature: ID        where: {capture: regex}, count_ge: N (default 1), count_le: N,
                         in: [kind, ...] (only lines found in artefacts of these kinds),
                         equal: [capture, capture, ...] (only lines where these captures were
                         all made and agree), tally: {of: capture, equals: capture} (only
                         lines where the numbers opening the comma-separated items of `of` add
                         up to `equals`: "0/4 nodes are available: 1 ..., 3 ..." accounts for
                         every node), after: ID or {signature: ID, same: [capture, ...]}
                         (only lines later than the last line of signature ID, of those whose
                         `same` captures have this line's values: by their times, else by the
                         klog times they hold, else by their place in one file)
    fact: PATH           eq ne gt ge lt le in not_in matches contains not_contains exists;
                         an operand may be {fact: OTHER_PATH}
    age_of: PATH         gt/ge/lt/le with a duration (90s, 5m, 2h, 1d) against the collection time

Each node class owns its keys: it parses itself from YAML (`parse`), states its JSON Schema
(`schema`), describes itself for rule pages (`describe`) and checks itself against the fact
registry and the kind catalogue (`check`, run by the linter). `CONDITIONS` lists them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import regex

from analyzer.bundle.text import KLOG_TIME_RE, item_counts
from analyzer.catalogue.fields import LINE_KEY
from analyzer.catalogue.signatures import MATCH_TIMEOUT
from analyzer.facts.clock import PLACEHOLDER_YEAR
from analyzer.facts.model import (
    STRENGTHS,
    Evidence,
    Fact,
    Match,
    strongest,
    weakest,
)
from analyzer.facts.registry import sources_of, spec_of
from analyzer.rules.compare import (
    COMPARATORS,
    ORDERING,
    compare,
    human_duration,
    operand_problems,
    parse_duration,
)
from analyzer.rules.issues import Issue
from analyzer.rules.node import (
    FALSE,
    Cond,
    EvalContext,
    Outcome,
    ParseProblems,
    Tri,
    unknown,
)

MAX_EVIDENCE_LINES = 3
_STR = {"type": "string"}
_REF = {"$ref": "#/$defs/condition"}


@dataclass(frozen=True)
class _Group(Cond):
    """all/any: a list of conditions."""

    items: tuple[Cond, ...]
    line: int = 0
    WORD: ClassVar[str] = ""

    def children(self) -> tuple[Cond, ...]:
        return self.items

    @classmethod
    def parse(cls, raw, keys, here, problems, signatures) -> Cond | None:
        if keys != {cls.HEAD}:
            problems.add(here, f"'{cls.HEAD}' must stand alone (also: {sorted(keys)})")
        items = raw[cls.HEAD]
        if not isinstance(items, list) or not items:
            problems.add(here, f"'{cls.HEAD}' needs a non-empty list")
            return None
        parsed = [parse_condition(c, here, problems, signatures) for c in items]
        if any(p is None for p in parsed):
            return None
        return cls(tuple(parsed), here)  # type: ignore[arg-type]

    @classmethod
    def schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "required": [cls.HEAD],
            "additionalProperties": False,
            "properties": {cls.HEAD: {"type": "array", "minItems": 1, "items": _REF}},
        }

    def describe(self, indent: str = "") -> list[str]:
        out = [f"{indent}{self.WORD}:"]
        for c in self.items:
            out.extend(c.describe(indent + "  "))
        return out


@dataclass(frozen=True)
class AllOf(_Group):
    """`all:` true when every item is."""

    HEAD: ClassVar[str] = "all"
    WORD: ClassVar[str] = "all of"

    def evaluate(self, ctx: EvalContext) -> Outcome:
        evidence: list[Evidence] = []
        strengths: list[str] = []
        missing: set[str] = set()
        undecided = False
        for c in self.items:
            o = c.evaluate(ctx)
            if o.state is Tri.FALSE:
                return FALSE
            if o.state is Tri.UNKNOWN:
                undecided = True
                missing |= o.missing
            else:
                evidence.extend(o.evidence)
                strengths.append(o.strength)
        if undecided:
            return unknown(missing)
        return Outcome(Tri.TRUE, tuple(evidence), strength=weakest(*strengths))


@dataclass(frozen=True)
class AnyOf(_Group):
    """`any:` true when one item is."""

    HEAD: ClassVar[str] = "any"
    WORD: ClassVar[str] = "any of"

    def evaluate(self, ctx: EvalContext) -> Outcome:
        evidence: list[Evidence] = []
        missing: set[str] = set()
        hit = undecided = False
        best = "low"
        for c in self.items:
            o = c.evaluate(ctx)
            if o.state is Tri.TRUE:
                hit = True
                evidence.extend(o.evidence)
                best = strongest(best, o.strength)
            elif o.state is Tri.UNKNOWN:
                undecided = True
                missing |= o.missing
        if hit:
            return Outcome(Tri.TRUE, tuple(evidence), strength=best)
        return unknown(missing) if undecided else FALSE


@dataclass(frozen=True)
class Not(Cond):
    """`not:` its item negated (UNKNOWN stays UNKNOWN; a log line's absence is weak evidence, a
    reporter's words not said are none: the rule's other conditions carry its weight)."""

    item: Cond
    line: int = 0
    HEAD: ClassVar[str] = "not"

    def children(self) -> tuple[Cond, ...]:
        return (self.item,)

    @classmethod
    def parse(cls, raw, keys, here, problems, signatures) -> Cond | None:
        if keys != {"not"}:
            problems.add(here, "'not' must stand alone")
        inner = parse_condition(raw["not"], here, problems, signatures)
        return cls(inner, here) if inner else None

    @classmethod
    def schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["not"],
            "additionalProperties": False,
            "properties": {"not": _REF},
        }

    def describe(self, indent: str = "") -> list[str]:
        return [f"{indent}not:", *self.item.describe(indent + "  ")]

    def evaluate(self, ctx: EvalContext) -> Outcome:
        o = self.item.evaluate(ctx)
        if o.state is Tri.UNKNOWN:
            return o
        if o.state is Tri.TRUE:
            return FALSE
        if isinstance(self.item, SignatureCond):
            if self.item.symptom:  # a reporter not saying something is a guard, not evidence
                return Outcome(Tri.TRUE)
            return _absent(ctx, self.item.signature)
        return Outcome(Tri.TRUE, strength="low")


def _absent(ctx: EvalContext, sid: str) -> Outcome:
    """TRUE from the known absence of a line: weak evidence, cited as such."""
    text = f"no line matches '{sid}' ({ctx.meaning(sid)})"
    return Outcome(
        Tri.TRUE, (Evidence("absence", text=text, signature=sid, strength="low"),), strength="low"
    )


@dataclass(frozen=True)
class SignatureCond(Cond):
    """`signature:` a log line was seen (or counted, or absent where it is expected)."""

    signature: str
    where: tuple[tuple[str, str], ...] = ()  # (capture, regex) pairs
    count_ge: int = 1
    count_le: int | None = None
    line: int = 0
    kinds: frozenset[str] = frozenset()  # `in:` only lines found in artefacts of these kinds
    equal: tuple[str, ...] = ()  # only lines where these captures were made and have one value
    after: str | None = None  # only lines later than the last line of this signature
    same: tuple[str, ...] = ()  # ... of its lines whose these captures have this line's values
    tally: tuple[str, str] | None = None  # (of, equals): the counts `of` lists add up to `equals`
    symptom: bool = False  # the reporter's words (the signature's `symptom: true`)
    HEAD: ClassVar[str] = "signature"
    KEYS: ClassVar[tuple[str, ...]] = (
        "signature",
        "where",
        "count_ge",
        "count_le",
        "in",
        "equal",
        "tally",
        "after",
    )

    @classmethod
    def parse(cls, raw, keys, here, problems, signatures) -> Cond | None:
        sid = raw["signature"]
        bad = keys - set(cls.KEYS)
        if bad:
            problems.add(here, f"unknown keys in a signature condition: {sorted(bad)}")
        if not isinstance(sid, str):
            problems.add(here, f"signature needs one signature id, got {sid!r}")
            return None
        sig = signatures.get(sid)
        if sig is None:
            problems.add(here, f"unknown signature id {sid!r}")
            return None
        captures = sig.compiled.groupindex
        where = _parse_where(raw.get("where") or {}, sid, captures, here, problems)
        counts = {}
        for k in ("count_ge", "count_le"):
            if k in raw:
                v = raw[k]
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    problems.add(here, f"{k} must be a whole number >= 0, got {v!r}")
                    return None
                counts[k] = v
        kinds = raw.get("in") or []
        if isinstance(kinds, str):
            kinds = [kinds]
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            problems.add(here, f"in: needs a list of artefact kinds, got {kinds!r}")
            return None
        equal = _parse_equal(raw.get("equal") or [], sid, captures, here, problems)
        tally = _parse_tally(raw.get("tally"), sid, captures, here, problems)
        after, same = _parse_after(raw.get("after"), captures, signatures, here, problems)
        if after is False:
            return None
        if where is None or equal is None or tally is False:
            return None
        return cls(
            sid,
            where,
            counts.get("count_ge", 1),
            counts.get("count_le"),
            here,
            frozenset(kinds),
            equal,
            after,
            same,
            tally if isinstance(tally, tuple) else None,
            bool(sig.symptom),
        )

    @classmethod
    def schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["signature"],
            "additionalProperties": False,
            "properties": {
                "signature": _STR,
                "where": {"type": "object", "additionalProperties": _STR},
                "count_ge": {"type": "integer", "minimum": 0},
                "count_le": {"type": "integer", "minimum": 0},
                "in": {"type": "array", "items": _STR, "description": "only lines in these kinds"},
                "equal": {
                    "type": "array",
                    "items": _STR,
                    "minItems": 2,
                    "description": "captures that must agree",
                },
                "tally": {
                    "type": "object",
                    "required": ["of", "equals"],
                    "additionalProperties": False,
                    "properties": {"of": _STR, "equals": _STR},
                    "description": "the counts opening the items of `of` add up to `equals`",
                },
                "after": {
                    "description": "only lines later than this signature's last",
                    "oneOf": [
                        _STR,
                        {
                            "type": "object",
                            "required": ["signature"],
                            "additionalProperties": False,
                            "properties": {
                                "signature": _STR,
                                "same": {"type": "array", "items": _STR, "minItems": 1},
                            },
                        },
                    ],
                },
            },
        }

    def describe(self, indent: str = "") -> list[str]:
        extra = []
        if self.count_ge != 1:
            extra.append(f"at least {self.count_ge} lines")
        if self.count_le is not None:
            extra.append(f"at most {self.count_le} lines")
        extra += [f"{c} ~ /{p}/" for c, p in self.where]
        if self.kinds:
            extra.append(f"in {', '.join(sorted(self.kinds))}")
        if self.equal:
            extra.append(" = ".join(self.equal))
        if self.tally:
            extra.append(f"the counts {self.tally[0]} lists add up to {self.tally[1]}")
        if self.after:
            tied = f" with the same {', '.join(self.same)}" if self.same else ""
            extra.append(f"after the last {self.after}{tied}")
        return [f"{indent}signature {self.signature}" + (f" ({', '.join(extra)})" if extra else "")]

    def check(self, rule, catalogue) -> Iterator[Issue]:
        for kid in self.kinds:
            if kid not in catalogue:
                yield Issue(
                    "error", rule.file, self.line, f"rule {rule.id}: in: unknown kind {kid!r}"
                )

    def selected(self, ctx: EvalContext) -> list[Match]:
        ms = ctx.matches(self.signature)
        if self.kinds:
            ms = [m for m in ms if ctx.kind_matches(m.kind, self.kinds)]
        if self.equal:  # a capture the line did not make agrees with nothing
            ms = [m for m in ms if _agree([m.captures.get(c) for c in self.equal])]
        if self.tally:
            of, total = self.tally
            ms = [m for m in ms if _tallies(m.captures.get(of), m.captures.get(total))]
        if self.where:
            ms = [
                m
                for m in ms
                if all(
                    regex.search(p, m.captures.get(c, ""), timeout=MATCH_TIMEOUT)
                    for c, p in self.where
                )
            ]
        if self.after:
            ms = _later_than_all(ms, ctx.matches(self.after), self.same)
        return ms

    def evaluate(self, ctx: EvalContext) -> Outcome:
        ms = self.selected(ctx)
        count = len(ms)
        if not (
            self.where or self.kinds or self.equal or self.tally or self.after
        ):  # big logs keep samples; the scan counted all
            count = max(count, ctx.count(self.signature))
        ok = count >= self.count_ge and (self.count_le is None or count <= self.count_le)
        if count == 0 and not ctx.absence_known(self.signature, self.kinds):
            return unknown(ctx.sources(self.signature, self.kinds))
        if not ok:
            return FALSE
        if count == 0:  # count_le: 0 asks for absence, and absence is known
            return _absent(ctx, self.signature)
        ev = tuple(
            Evidence(
                "log",
                m.file,
                m.line,
                m.text,
                span=m.span,
                signature=m.sig,
                count=count,
                strength=m.strength,
                artefact=m.kind,
            )
            for m in sorted(ms, key=lambda m: STRENGTHS.index(m.strength))[:MAX_EVIDENCE_LINES]
        )
        return Outcome(Tri.TRUE, ev, strength=ev[0].strength if ev else "high")


def _parse_where(raw_where, sid, captures, here, problems) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(raw_where, dict):
        problems.add(here, f"where: needs a mapping of capture to regex, got {raw_where!r}")
        return None
    where = []
    for cap, pat in raw_where.items():
        if cap == LINE_KEY:
            continue
        if cap not in captures:
            problems.add(here, f"signature {sid} has no capture {cap!r}")
        try:
            regex.compile(str(pat))
        except regex.error as exc:
            problems.add(here, f"bad regex in where.{cap}: {exc}")
            continue
        where.append((str(cap), str(pat)))
    return tuple(where)


def _parse_after(raw, captures, signatures, here, problems) -> tuple:
    """`after:` as (signature id, same captures); (None, ()) when absent, (False, ()) when bad."""
    if raw is None:
        return None, ()
    sid, same = (
        (raw.get("signature"), raw.get("same") or []) if isinstance(raw, dict) else (raw, [])
    )
    if not isinstance(sid, str) or sid not in signatures:
        problems.add(here, f"after: needs a known signature id, got {sid!r}")
        return False, ()
    unknown = set(raw) - {"signature", "same", LINE_KEY} if isinstance(raw, dict) else set()
    if unknown:
        problems.add(here, f"after: takes signature and same, not {sorted(unknown)}")
        return False, ()
    theirs = signatures[sid].compiled.groupindex
    if isinstance(raw, dict) and "same" in raw and not same:
        problems.add(here, "after: same needs at least one capture")
        return False, ()
    if not isinstance(same, list) or any(c not in captures or c not in theirs for c in same):
        problems.add(here, f"after: same needs captures both signatures make, got {same!r}")
        return False, ()
    return sid, tuple(same)


def _later_than_all(ms: list[Match], others: list[Match], same: tuple[str, ...]) -> list[Match]:
    """The lines of `ms` later than the last of the `others` whose `same` captures have their
    values (a line that did not make a capture, as an older wording of the message, is tied to
    any). The last line is found once for each set of values, not once for each line: a paste
    of thousands of such pairs took minutes."""
    if not others:
        return []
    lasts: dict[tuple, Match | None] = {}  # without `same`, one key: every line is tied
    out = []
    for m in ms:
        key = tuple(m.captures.get(c) or "" for c in same)
        if key not in lasts:
            lasts[key] = _last([o for o in others if _tied(o, key, same)])
        last = lasts[key]
        if last is not None and _later(m, last):
            out.append(m)
    return out


def _tied(o: Match, key: tuple[str, ...], same: tuple[str, ...]) -> bool:
    """Whether line `o` has the values `key` of the captures `same` (one it did not make, or the
    key's empty value, ties)."""
    pairs = zip(same, key, strict=True)
    return all(not v or not o.captures.get(c) or o.captures.get(c) == v for c, v in pairs)


def _last(ms: list[Match]) -> Match | None:
    """The latest of some lines (`_later`), taken in file order so that lines `_later` cannot
    order (two files without times) give the same answer whatever order they came in."""
    last = None
    for m in sorted(ms, key=lambda m: (m.file, m.line)):
        if last is None or _later(m, last):
            last = m
    return last


def _later(m: Match, last: Match) -> bool:
    """Whether line `m` comes after `last`: by their times when both have one, else by the klog
    times their texts hold (a log without a year, a journal's prefix before the klog header),
    else by their lines in one file; lines of two files without times are not ordered. By time,
    a journal printed newest first (`journalctl -r`) still reads right. Two lines of one file
    more than half a year apart are ordered by their places: the year their times were given is
    most likely wrong across a new year (a log without one, Dec 31 then Jan 1)."""
    in_order = m.file == last.file and m.line > last.line
    if m.ts is not None and last.ts is not None:
        gap = _aware(m.ts) - _aware(last.ts)
        # only a year the clock could not tell (its placeholder) may be wrong across new year
        guessed = PLACEHOLDER_YEAR in (m.ts.year, last.ts.year)
        wrapped = guessed and abs(gap) > dt.timedelta(days=183) and m.file == last.file
        return in_order if wrapped else gap > dt.timedelta(0)
    mine, theirs = _klog_time(m.text), _klog_time(last.text)
    if mine is not None and theirs is not None:
        wrapped = abs(int(mine[:2]) - int(theirs[:2])) > 6 and m.file == last.file
        return in_order if wrapped else mine > theirs
    return in_order


def _klog_time(text: str) -> str | None:
    """A line's klog time as `MMDD HH:MM:SS.ffffff` (sortable within a year), if it has one."""
    m = KLOG_TIME_RE.search(text[:160])
    return None if m is None else f"{m.group('mmdd')} {m.group('clock'):<15}"


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def _agree(values: list) -> bool:
    """Captured values that are all there and all the same (two absent captures are not equal:
    a line of the signature's other form, holding neither count, claimed `0/N: N unregistered`)."""
    return all(v not in (None, "") for v in values) and len(set(values)) == 1


def _tallies(items: str | None, total: str | None) -> bool:
    """Whether the counts opening the comma-separated items of `items` add up to `total`
    (kube-scheduler's "1 node(s) had untolerated taint {...}, 3 node unregistered": an item's
    own commas open no count, and "1/2 CardNotHealth" is a share, not a count).

    >>> _tallies("1 node(s) had taint {a: }, that the pod didn't tolerate, 3 node unregistered", "4")
    True
    >>> _tallies("1 node unregisterd, 6 node(s) didn't match Pod's node affinity/selector", "10")
    False
    >>> _tallies("1 1/2 CardNotHealth, 1/2 CardTimeSlicingExhausted, 1 NodeInsufficientDevice", "2")
    True
    """
    if not items or not total or not total.isdigit() or len(total) > 9:
        return False
    return sum(item_counts(items)) == int(total)


def _parse_tally(raw, sid, captures, here, problems) -> tuple[str, str] | bool | None:
    """`tally: {of, equals}` as (of, equals); None when absent, False when malformed."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {LINE_KEY} != {"of", "equals"}:
        problems.add(here, f"tally: needs {{of: capture, equals: capture}}, got {raw!r}")
        return False
    pair = (str(raw["of"]), str(raw["equals"]))
    for cap in pair:
        if cap not in captures:
            problems.add(here, f"signature {sid} has no capture {cap!r} (in tally:)")
    return pair


def _parse_equal(equal, sid, captures, here, problems) -> tuple[str, ...] | None:
    if not isinstance(equal, list) or not all(isinstance(c, str) for c in equal):
        problems.add(here, f"equal: needs a list of capture names, got {equal!r}")
        return None
    for cap in equal:
        if cap not in captures:
            problems.add(here, f"signature {sid} has no capture {cap!r} (in equal:)")
    if equal and len(equal) < 2:
        problems.add(here, "equal: needs at least two captures")
    return tuple(str(c) for c in equal)


@dataclass(frozen=True)
class FactRef:
    """An operand that is another fact's value."""

    path: str


@dataclass(frozen=True)
class FactCond(Cond):
    """`fact:` a fact's value compared with operands."""

    path: str
    ops: tuple[tuple[str, Any], ...]  # (comparator, operand or FactRef)
    line: int = 0
    HEAD: ClassVar[str] = "fact"
    OPS: ClassVar[tuple[str, ...]] = COMPARATORS

    @classmethod
    def parse(cls, raw, keys, here, problems, signatures) -> Cond | None:
        path = raw[cls.HEAD]
        if not isinstance(path, str):
            problems.add(here, f"{cls.HEAD} needs a fact path, got {path!r}")
            return None
        if spec_of(path) is None:
            problems.add(here, f"unknown fact path {path!r} (see `hami-analyzer rules facts`)")
        ops = keys - {cls.HEAD}
        bad = ops - set(cls.OPS)
        if bad:
            allowed = ", ".join(cls.OPS)
            problems.add(here, f"unknown comparison(s) {sorted(bad)} (allowed: {allowed})")
            return None
        if not ops:
            problems.add(
                here, f"{cls.HEAD} {path} needs a comparison ({', '.join(cls.OPS[:6])}, ...)"
            )
            return None
        parsed: list[tuple[str, Any]] = []
        for op in sorted(ops, key=cls.OPS.index):
            want = cls.operand(op, raw[op], here, problems)
            if want is None:
                return None
            parsed.append((op, want[0]))
        return cls(path, tuple(parsed), here)

    @classmethod
    def operand(cls, op: str, want: Any, here: int, problems: ParseProblems) -> tuple[Any] | None:
        """The parsed operand of one comparison, in a 1-tuple (None when it is invalid)."""
        if isinstance(want, dict):
            if set(want) - {LINE_KEY} != {"fact"}:
                problems.add(here, f"{op}: an operand mapping must be {{fact: PATH}}")
                return None
            ref = FactRef(str(want["fact"]))
            if spec_of(ref.path) is None:
                problems.add(here, f"unknown fact path {ref.path!r} in {op}")
            return (ref,)
        if op == "matches":
            try:
                regex.compile(str(want))
            except regex.error as exc:
                problems.add(here, f"bad regex in matches: {exc}")
                return None
        elif op in ("in", "not_in") and not isinstance(want, list):
            problems.add(here, f"{op} needs a list")
            return None
        return (want,)

    @classmethod
    def schema(cls) -> dict[str, Any]:
        operand = {
            "anyOf": [{}, {"type": "object", "required": ["fact"], "properties": {"fact": _STR}}]
        }
        return {
            "type": "object",
            "required": ["fact"],
            "additionalProperties": False,
            "properties": {"fact": _STR, **{op: operand for op in cls.OPS}},
        }

    def describe(self, indent: str = "") -> list[str]:
        ops = ", ".join(
            f"{op} {('fact ' + w.path) if isinstance(w, FactRef) else repr(w)}"
            for op, w in self.ops
        )
        return [f"{indent}{self.path} {ops}"]

    def check(self, rule, catalogue) -> Iterator[Issue]:
        """Each operand can match a fact of this path's type: `eq: true` on a string never does."""
        spec = spec_of(self.path)
        if spec is None:
            return
        where = f"rule {rule.id}: {self.path} ({spec.type})"
        for op, want in self.ops:
            if spec.type == "any" and op != "exists":
                continue  # a config value may be anything; `exists` still takes a bool
            if isinstance(want, FactRef):
                other = spec_of(want.path)
                if (
                    other
                    and other.type not in (spec.type, "any")
                    and not ({other.type, spec.type} <= {"int", "float"})
                ):
                    msg = f"{where}: compared with {want.path} ({other.type})"
                    yield Issue("error", rule.file, self.line, msg)
                continue
            for msg in operand_problems(spec.type, op, want):
                yield Issue("error", rule.file, self.line, f"{where}: {msg}")

    def evaluate(self, ctx: EvalContext) -> Outcome:
        f = ctx.facts.lookup(self.path)
        if not isinstance(f, Fact):  # UNKNOWN
            return unknown(sources_of(self.path))
        value = f.value
        facts = [(self.path, f)]
        missing: set[str] = set()
        for op, want in self.ops:  # an AND: a failed comparison decides, even beside an unknown
            if isinstance(want, FactRef):
                ref = ctx.facts.lookup(want.path)
                if not isinstance(ref, Fact):  # UNKNOWN
                    missing.update(sources_of(want.path))
                    continue
                if ref.value is None:
                    return FALSE
                facts.append((want.path, ref))  # the compared-to fact is evidence too
                want = ref.value
            if not compare(op, value, want):
                return FALSE
        if missing:
            return unknown(tuple(sorted(missing)))
        return Outcome(Tri.TRUE, tuple(_fact_evidence(path, fact) for path, fact in facts))


def _fact_evidence(path: str, fact) -> Evidence:
    where = fact.where
    return Evidence(
        "fact",
        where.file if where else None,
        where.line if where else None,
        path=path,
        value=fact.value,
        strength="high",
    )


@dataclass(frozen=True)
class AgeCond(FactCond):
    """`age_of:` how long before the collection a fact's time was."""

    ops: tuple[tuple[str, float], ...]  # (comparator, seconds)
    HEAD: ClassVar[str] = "age_of"
    OPS: ClassVar[tuple[str, ...]] = ORDERING

    @classmethod
    def operand(cls, op: str, want: Any, here: int, problems: ParseProblems) -> tuple[Any] | None:
        try:
            return (parse_duration(want),)
        except ValueError as exc:
            problems.add(here, str(exc))
            return None

    @classmethod
    def schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["age_of"],
            "additionalProperties": False,
            "properties": {
                "age_of": _STR,
                **{op: {"type": ["string", "number"]} for op in cls.OPS},
            },
        }

    def describe(self, indent: str = "") -> list[str]:
        return [f"{indent}age of {self.path} {', '.join(f'{op} {w!r}' for op, w in self.ops)}"]

    def check(self, rule, catalogue) -> Iterator[Issue]:
        spec = spec_of(self.path)
        if spec is not None and spec.type not in ("any", "datetime"):
            msg = f"rule {rule.id}: {self.path} ({spec.type}): age_of needs a datetime fact"
            yield Issue("error", rule.file, self.line, msg)

    def evaluate(self, ctx: EvalContext) -> Outcome:
        f = ctx.facts.lookup(self.path)
        if not isinstance(f, Fact):  # UNKNOWN
            return unknown(sources_of(self.path))
        if ctx.collected_at is None:
            return unknown(sources_of(self.path) or ("node",))
        if not isinstance(f.value, dt.datetime):
            return FALSE
        age = (ctx.collected_at - f.value).total_seconds()
        if not all(compare(op, age, want) for op, want in self.ops):
            return FALSE
        where = f.where
        return Outcome(
            Tri.TRUE,
            (
                Evidence(
                    "fact",
                    where.file if where else None,
                    where.line if where else None,
                    path=self.path,
                    value=f"{f.value:%Y-%m-%d %H:%M:%S} UTC ({human_duration(age)} before collection)",
                ),
            ),
        )


# in precedence order: a mapping with two heads is parsed by the first (and reported)
CONDITIONS: tuple[type[Cond], ...] = (AllOf, AnyOf, Not, SignatureCond, FactCond, AgeCond)


def parse_condition(raw: Any, line: int, problems: ParseProblems, signatures) -> Cond | None:
    """YAML condition -> typed node; None (with problems recorded) when it cannot be parsed."""
    if not isinstance(raw, dict):
        problems.add(line, f"a condition must be a mapping, got {raw!r}")
        return None
    here = raw.get(LINE_KEY, line)
    keys = {k for k in raw if k != LINE_KEY}
    for cls in CONDITIONS:
        if cls.HEAD in keys:
            return cls.parse(raw, keys, here, problems, signatures)
    heads = ", ".join(c.HEAD for c in CONDITIONS)
    problems.add(here, f"a condition needs one of {heads}")
    return None


def condition_schema() -> dict[str, Any]:
    """The JSON Schema of a condition: one of the node classes' own schemas."""
    return {"oneOf": [cls.schema() for cls in CONDITIONS]}


def signatures_in(cond: Cond | None) -> list[str]:
    if cond is None:
        return []
    return [c.signature for c in cond.walk() if isinstance(c, SignatureCond)]


def required_signatures(cond: Cond | None) -> set[str]:
    """The signatures a TRUE outcome always has lines of (so templates may read their captures):
    every item of an `all`, only what every branch of an `any` shares."""
    if isinstance(cond, SignatureCond):
        return {cond.signature} if cond.count_ge > 0 else set()
    if isinstance(cond, AllOf):
        return set().union(*(required_signatures(c) for c in cond.items))
    if isinstance(cond, AnyOf):
        return set.intersection(*(required_signatures(c) for c in cond.items))
    return set()


def describe(cond: Cond | None, indent: str = "") -> list[str]:
    """A condition as indented text, for rule pages."""
    return [] if cond is None else cond.describe(indent)
