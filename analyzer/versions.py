"""HAMi version ranges: parse '>=2.8.0,<2.10.0', intersect evidence, test applicability.

The owner of what an inferred version means: `VersionInference` is the range a bundle is
consistent with (built by `facts/version.py`, the one place clues are read), its `label` is the
one way it is shown (facts, report, batch tables) and `allows` the one test of whether a rule
for some versions applies (the rule engine)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Version = tuple[int, int, int]
LOW: Version = (0, 0, 0)
HIGH: Version = (999, 0, 0)
_CONSTRAINT_RE = re.compile(r"^\s*(>=|<=|>|<|==|=)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$")


def fmt(v: Version) -> str:
    return f"v{v[0]}.{v[1]}.{v[2]}"


@dataclass(frozen=True)
class Range:
    """Half-open [lo, hi) interval of versions."""

    lo: Version = LOW
    hi: Version = HIGH

    @classmethod
    def parse(cls, spec: str) -> Range:
        lo, hi = LOW, HIGH
        for part in str(spec).split(","):
            if not part.strip():
                continue
            m = _CONSTRAINT_RE.match(part)
            if not m:
                raise ValueError(f"bad version constraint {part.strip()!r}")
            op = m[1] or "=="
            v = (int(m[2]), int(m[3] or 0), int(m[4] or 0))
            nxt = (v[0], v[1], v[2] + 1)
            if op == ">=":
                lo = max(lo, v)
            elif op == ">":
                lo = max(lo, nxt)
            elif op == "<":
                hi = min(hi, v)
            elif op == "<=":
                hi = min(hi, nxt)
            else:
                lo, hi = max(lo, v), min(hi, nxt)
        return cls(lo, hi)

    def empty(self) -> bool:
        return self.lo >= self.hi

    def intersect(self, other: Range) -> Range:
        return Range(max(self.lo, other.lo), min(self.hi, other.hi))

    def overlaps(self, other: Range) -> bool:
        return not self.intersect(other).empty()

    def __str__(self) -> str:
        if self.lo == LOW and self.hi == HIGH:
            return "any"
        if self.hi == (self.lo[0], self.lo[1], self.lo[2] + 1):
            return fmt(self.lo)
        parts = []
        if self.lo != LOW:
            parts.append(f">={fmt(self.lo)}")
        if self.hi != HIGH:
            parts.append(f"<{fmt(self.hi)}")
        return ",".join(parts)


# every version: the one object rules and signatures share for it (a frozen default)
ANY = Range()


@dataclass
class VersionEvidence:
    """A clue to the HAMi version: the range it allows, why, and where it was read."""

    range: Range
    reason: str
    where: str  # file:line or fact path


@dataclass
class VersionInference:
    """The HAMi version range the bundle is consistent with, and why."""

    range: Range = field(default_factory=Range)
    evidence: list[VersionEvidence] = field(default_factory=list)
    conflicts: list[VersionEvidence] = field(default_factory=list)
    missing: str | None = None  # unknown: which clues the bundle lacked (batch summary lists it)

    def add(self, ev: VersionEvidence) -> None:
        merged = self.range.intersect(ev.range)
        if merged.empty():
            self.conflicts.append(ev)  # e.g. plugin and scheduler on different versions
            return
        self.range = merged
        self.evidence.append(ev)

    @property
    def known(self) -> bool:
        return bool(self.evidence)

    @property
    def label(self) -> str | None:
        """The range as shown, or None when no clue narrowed it.

        >>> inf = VersionInference(); inf.label is None
        True
        >>> inf.add(VersionEvidence(Range.parse(">=2.8.0,<2.10.0"), "register format", "n:1"))
        >>> inf.label
        '>=v2.8.0,<v2.10.0'
        """
        return str(self.range) if self.known else None

    def allows(self, versions: Range) -> bool:
        """Whether something meant for `versions` can apply: always when the version is unknown.

        >>> inf = VersionInference(); inf.allows(Range.parse("<2.0.0"))
        True
        >>> inf.add(VersionEvidence(Range.parse("==2.8.1"), "image tag", "values.yaml"))
        >>> inf.allows(Range.parse("<2.0.0")), inf.allows(Range.parse(">=2.8.0"))
        (False, True)
        """
        return not self.known or versions.overlaps(self.range)

    def splits_at(self, boundary: Version) -> bool:
        """Whether the clues (kept and conflicting) put HAMi both wholly before and wholly at or
        after `boundary`: mixed releases on two sides of a change, not just two tags of one side.

        >>> inf = VersionInference()
        >>> inf.add(VersionEvidence(Range.parse(">=2.9.0"), "log line", "dp.log:3"))
        >>> inf.add(VersionEvidence(Range.parse("==2.8.2"), "image tag", "issue:21"))
        >>> bool(inf.conflicts), inf.splits_at((2, 8, 0))
        (True, False)
        >>> inf.add(VersionEvidence(Range.parse("==2.7.1"), "image tag", "values.yaml:4"))
        >>> inf.splits_at((2, 8, 0))
        True
        """
        clues = [ev.range for ev in self.evidence + self.conflicts]
        return any(r.hi <= boundary for r in clues) and any(r.lo >= boundary for r in clues)

    def describe(self) -> str:
        if not self.evidence:
            return "unknown (no version evidence in the bundle)"
        return f"{self.range} (from {len(self.evidence)} clue(s))"
