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
                         equal: [capture, capture, ...] (only lines where these captures agree)
    fact: PATH           eq ne gt ge lt le in not_in matches contains not_contains exists;
                         an operand may be {fact: OTHER_PATH}
    age_of: PATH         gt/ge/lt/le with a duration (90s, 5m, 2h, 1d) against the collection time
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from typing import Any, Protocol

import regex

from analyzer.facts.model import (
    MATCH_TIMEOUT,
    STRENGTHS,
    UNKNOWN,
    Evidence,
    FactSet,
    Match,
    strongest,
    weakest,
)
from analyzer.facts.registry import sources_of, spec_of

MAX_EVIDENCE_LINES = 3
COMPARATORS = (
    "eq",
    "ne",
    "gt",
    "ge",
    "lt",
    "le",
    "in",
    "not_in",
    "matches",
    "contains",
    "not_contains",
    "exists",
)
ORDERING = ("gt", "ge", "lt", "le")
_DURATION_RE = regex.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)?$")


class Tri(enum.Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    state: Tri
    evidence: tuple[Evidence, ...] = ()
    missing: frozenset[str] = frozenset()
    strength: str = "high"  # how much the evidence of a TRUE outcome weighs


FALSE = Outcome(Tri.FALSE)


def unknown(missing) -> Outcome:
    return Outcome(Tri.UNKNOWN, (), frozenset(missing))


class EvalContext(Protocol):
    """What a condition may look at: facts, signature matches, and whether a signature's absence
    is known (the bundle holds an artefact where it would have been printed)."""

    facts: FactSet
    collected_at: dt.datetime | None

    def matches(self, sig: str) -> list[Match]: ...

    def count(self, sig: str) -> int: ...

    def absence_known(self, sig: str, kinds: frozenset[str] = frozenset()) -> bool: ...

    def sources(self, sig: str, kinds: frozenset[str] = frozenset()) -> frozenset[str]: ...

    def kind_matches(self, kind: str, kinds: frozenset[str]) -> bool: ...

    def meaning(self, sig: str) -> str: ...


def parse_duration(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"bad duration {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"bad duration {value!r} (use 90, 90s, 5m, 2h or 1d)")
    return float(m[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m[2] or "s"]


class Cond:
    line: int

    def evaluate(self, ctx: EvalContext) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def children(self) -> tuple[Cond, ...]:
        return ()

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()


@dataclass(frozen=True)
class _Group(Cond):
    """all/any: a list of conditions."""

    items: tuple[Cond, ...]
    line: int = 0

    def children(self) -> tuple[Cond, ...]:
        return self.items


@dataclass(frozen=True)
class AllOf(_Group):
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
    item: Cond
    line: int = 0

    def children(self) -> tuple[Cond, ...]:
        return (self.item,)

    def evaluate(self, ctx: EvalContext) -> Outcome:
        o = self.item.evaluate(ctx)
        if o.state is Tri.UNKNOWN:
            return o
        if o.state is Tri.TRUE:
            return FALSE
        if isinstance(self.item, SignatureCond):
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
    signature: str
    where: tuple[tuple[str, str], ...] = ()  # (capture, regex) pairs
    count_ge: int = 1
    count_le: int | None = None
    line: int = 0
    kinds: frozenset[str] = frozenset()  # `in:` only lines found in artefacts of these kinds
    equal: tuple[str, ...] = ()  # only lines where these captures have one value

    def selected(self, ctx: EvalContext) -> list[Match]:
        ms = ctx.matches(self.signature)
        if self.kinds:
            ms = [m for m in ms if ctx.kind_matches(m.kind, self.kinds)]
        if self.equal:
            ms = [m for m in ms if len({m.captures.get(c, "") for c in self.equal}) == 1]
        if self.where:
            ms = [
                m
                for m in ms
                if all(
                    regex.search(p, m.captures.get(c, ""), timeout=MATCH_TIMEOUT)
                    for c, p in self.where
                )
            ]
        return ms

    def evaluate(self, ctx: EvalContext) -> Outcome:
        ms = self.selected(ctx)
        count = len(ms)
        if not (
            self.where or self.kinds or self.equal
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


@dataclass(frozen=True)
class FactRef:
    path: str


@dataclass(frozen=True)
class FactCond(Cond):
    path: str
    ops: tuple[tuple[str, Any], ...]  # (comparator, operand or FactRef)
    line: int = 0

    def evaluate(self, ctx: EvalContext) -> Outcome:
        f = ctx.facts.lookup(self.path)
        if f is UNKNOWN:
            return unknown(sources_of(self.path))
        value = f.value
        facts = [(self.path, f)]
        missing: set[str] = set()
        for op, want in self.ops:  # an AND: a failed comparison decides, even beside an unknown
            if isinstance(want, FactRef):
                ref = ctx.facts.lookup(want.path)
                if ref is UNKNOWN:
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
class AgeCond(Cond):
    path: str
    ops: tuple[tuple[str, float], ...]  # (comparator, seconds)
    line: int = 0

    def evaluate(self, ctx: EvalContext) -> Outcome:
        f = ctx.facts.lookup(self.path)
        if f is UNKNOWN:
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


def human_duration(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    return None


def _same(a: Any, b: Any) -> bool:
    """Equality that does not take a bool for a number (Python's True == 1)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def compare(op: str, value: Any, want: Any) -> bool:
    """One comparison, strict about types: a value of the wrong type never matches (the linter
    catches such rules; at run time a config value may still be anything)."""
    if op == "exists":
        return isinstance(want, bool) and (value is not None and value != []) == want
    if value is None:
        return op in ("ne", "not_in", "not_contains")
    if op == "eq":
        return _same(value, want)
    if op == "ne":
        return not _same(value, want)
    if op in ORDERING:
        a, b = _number(value), _number(want)
        if a is None or b is None:
            return False
        return {"gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[op]
    if op == "in":
        return isinstance(want, list) and any(_same(value, w) for w in want)
    if op == "not_in":
        return isinstance(want, list) and not any(_same(value, w) for w in want)
    if op == "matches":
        return isinstance(value, str) and (
            regex.search(str(want), value, timeout=MATCH_TIMEOUT) is not None
        )
    if op in ("contains", "not_contains"):
        if not isinstance(value, list | str):
            return op == "not_contains"
        if isinstance(value, str) and not isinstance(want, str):
            return op == "not_contains"
        found = want in value if isinstance(value, str) else any(_same(x, want) for x in value)
        return found == (op == "contains")
    return False


# ---- parsing ---------------------------------------------------------------------------------
LINE_KEY = "__line__"


@dataclass
class ParseProblems:
    """Problems found while parsing one rule's conditions, each naming file, line and rule."""

    file: str
    rule: str = "?"
    items: list[str] = field(default_factory=list)

    def add(self, line: int, msg: str) -> None:
        self.items.append(f"{self.file}:{line}: rule {self.rule}: {msg}")


def parse_condition(raw: Any, line: int, problems: ParseProblems, signatures) -> Cond | None:
    """YAML condition -> typed node; None (with problems recorded) when it cannot be parsed."""
    if not isinstance(raw, dict):
        problems.add(line, f"a condition must be a mapping, got {raw!r}")
        return None
    here = raw.get(LINE_KEY, line)
    keys = {k for k in raw if k != LINE_KEY}
    for combinator, cls in (("all", AllOf), ("any", AnyOf)):
        if combinator in keys:
            if keys != {combinator}:
                problems.add(here, f"'{combinator}' must stand alone (also: {sorted(keys)})")
            items = raw[combinator]
            if not isinstance(items, list) or not items:
                problems.add(here, f"'{combinator}' needs a non-empty list")
                return None
            parsed = [parse_condition(c, here, problems, signatures) for c in items]
            if any(p is None for p in parsed):
                return None
            return cls(tuple(parsed), here)
    if "not" in keys:
        if keys != {"not"}:
            problems.add(here, "'not' must stand alone")
        inner = parse_condition(raw["not"], here, problems, signatures)
        return Not(inner, here) if inner else None
    if "signature" in keys:
        return _parse_signature(raw, keys, here, problems, signatures)
    if "fact" in keys or "age_of" in keys:
        return _parse_fact(raw, keys, here, problems)
    problems.add(here, "a condition needs one of all, any, not, signature, fact, age_of")
    return None


def _parse_signature(raw, keys, here, problems, signatures) -> Cond | None:
    sid = raw["signature"]
    bad = keys - {"signature", "where", "count_ge", "count_le", "in", "equal"}
    if bad:
        problems.add(here, f"unknown keys in a signature condition: {sorted(bad)}")
    if not isinstance(sid, str):
        problems.add(here, f"signature needs one signature id, got {sid!r}")
        return None
    sig = signatures.get(sid)
    if sig is None:
        problems.add(here, f"unknown signature id {sid!r}")
        return None
    where = []
    raw_where = raw.get("where") or {}
    if not isinstance(raw_where, dict):
        problems.add(here, f"where: needs a mapping of capture to regex, got {raw_where!r}")
        return None
    for cap, pat in raw_where.items():
        if cap == LINE_KEY:
            continue
        if cap not in sig.compiled.groupindex:
            problems.add(here, f"signature {sid} has no capture {cap!r}")
        try:
            regex.compile(str(pat))
        except regex.error as exc:
            problems.add(here, f"bad regex in where.{cap}: {exc}")
            continue
        where.append((str(cap), str(pat)))
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
    equal = raw.get("equal") or []
    if not isinstance(equal, list) or not all(isinstance(c, str) for c in equal):
        problems.add(here, f"equal: needs a list of capture names, got {equal!r}")
        return None
    for cap in equal:
        if cap not in sig.compiled.groupindex:
            problems.add(here, f"signature {sid} has no capture {cap!r} (in equal:)")
    if equal and len(equal) < 2:
        problems.add(here, "equal: needs at least two captures")
    return SignatureCond(
        sid,
        tuple(where),
        counts.get("count_ge", 1),
        counts.get("count_le"),
        here,
        frozenset(kinds),
        tuple(str(c) for c in equal),
    )


def _parse_fact(raw, keys, here, problems) -> Cond | None:
    path_key = "fact" if "fact" in keys else "age_of"
    path = raw[path_key]
    if not isinstance(path, str):
        problems.add(here, f"{path_key} needs a fact path, got {path!r}")
        return None
    if spec_of(path) is None:
        problems.add(here, f"unknown fact path {path!r} (see `hami-analyzer rules facts`)")
    ops = keys - {path_key}
    allowed = ORDERING if path_key == "age_of" else COMPARATORS
    bad = ops - set(allowed)
    if bad:
        problems.add(here, f"unknown comparison(s) {sorted(bad)} (allowed: {', '.join(allowed)})")
        return None
    if not ops:
        problems.add(here, f"{path_key} {path} needs a comparison ({', '.join(allowed[:6])}, ...)")
        return None
    parsed: list[tuple[str, Any]] = []
    for op in sorted(ops, key=allowed.index):
        want = raw[op]
        if path_key == "age_of":
            try:
                parsed.append((op, parse_duration(want)))
            except ValueError as exc:
                problems.add(here, str(exc))
                return None
            continue
        if isinstance(want, dict):
            if set(want) - {LINE_KEY} != {"fact"}:
                problems.add(here, f"{op}: an operand mapping must be {{fact: PATH}}")
                return None
            want = FactRef(str(want["fact"]))
            if spec_of(want.path) is None:
                problems.add(here, f"unknown fact path {want.path!r} in {op}")
        elif op == "matches":
            try:
                regex.compile(str(want))
            except regex.error as exc:
                problems.add(here, f"bad regex in matches: {exc}")
                return None
        elif op in ("in", "not_in") and not isinstance(want, list):
            problems.add(here, f"{op} needs a list")
            return None
        parsed.append((op, want))
    cls = AgeCond if path_key == "age_of" else FactCond
    return cls(path, tuple(parsed), here)


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
    if cond is None:
        return []
    if isinstance(cond, AllOf | AnyOf):
        word = "all of" if isinstance(cond, AllOf) else "any of"
        out = [f"{indent}{word}:"]
        for c in cond.items:
            out.extend(describe(c, indent + "  "))
        return out
    if isinstance(cond, Not):
        return [f"{indent}not:", *describe(cond.item, indent + "  ")]
    if isinstance(cond, SignatureCond):
        extra = []
        if cond.count_ge != 1:
            extra.append(f"at least {cond.count_ge} lines")
        if cond.count_le is not None:
            extra.append(f"at most {cond.count_le} lines")
        extra += [f"{c} ~ /{p}/" for c, p in cond.where]
        if cond.kinds:
            extra.append(f"in {', '.join(sorted(cond.kinds))}")
        if cond.equal:
            extra.append(" = ".join(cond.equal))
        return [f"{indent}signature {cond.signature}" + (f" ({', '.join(extra)})" if extra else "")]
    if isinstance(cond, FactCond | AgeCond):
        what = "age of " if isinstance(cond, AgeCond) else ""
        ops = ", ".join(
            f"{op} {('fact ' + w.path) if isinstance(w, FactRef) else repr(w)}"
            for op, w in cond.ops
        )
        return [f"{indent}{what}{cond.path} {ops}"]
    return [f"{indent}{cond!r}"]
