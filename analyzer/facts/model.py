"""What the facts stage hands to the rules: typed values with provenance, signature matches with
the artefact they were found in, and the evidence a rule cites."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from typing import Any, Final

from analyzer.confidence import LEVELS as STRENGTHS
from analyzer.confidence import lower, strongest, weakest

__all__ = ["STRENGTHS", "lower", "strongest", "weakest"]  # re-exported: evidence strengths


@dataclass(frozen=True)
class Where:
    """The file and line a value or a line came from (line None: the file as a whole)."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Fact:
    """One fact of a node: its path, its value and where in the bundle it was read."""

    path: str
    value: Any  # None: the source was read and the value is absent
    where: Where | None = None


class _Unknown(enum.Enum):
    """The source that would tell this fact is not in the bundle. One member, so that
    `f is UNKNOWN` tells the type checker that `f` is a Fact when it is not (and it survives
    pickling as the same object)."""

    UNKNOWN = "UNKNOWN"

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Final = _Unknown.UNKNOWN


@dataclass
class FactSet:
    """Facts of one node. A path that was not produced is absent (None) when a producer says its
    family was read (`known` holds exact paths and prefixes ending in '.'), else UNKNOWN."""

    facts: dict[str, Fact] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)

    def put(self, path: str, value: Any, where: Where | None = None) -> None:
        self.facts[path] = Fact(path, value, where)
        self.known.add(path)

    def mark_known(self, *prefixes: str) -> None:
        self.known.update(prefixes)

    def lookup(self, path: str) -> Fact | _Unknown:
        f = self.facts.get(path)
        if f is not None:
            return f
        if path in self.known or path.startswith(self._families()):
            return Fact(path, None)
        return UNKNOWN

    def _families(self) -> tuple[str, ...]:
        """The prefixes of `known` (ending in '.'), for one `startswith`: rules look up ~150
        paths a node, most of them absent, against ~40 known entries. Kept until `known` is
        another set or another size (put and mark_known only add to it)."""
        kept = self.__dict__.get("_kept_families")
        if kept is None or kept[0] is not self.known or kept[1] != len(self.known):
            families = tuple(p for p in self.known if p.endswith("."))
            kept = self.__dict__["_kept_families"] = (self.known, len(self.known), families)
        return kept[2]

    def value(self, path: str, default: Any = None) -> Any:
        """Plain value for templates: UNKNOWN and absent both read as `default`."""
        f = self.lookup(path)
        return default if f is UNKNOWN or f.value is None else f.value

    def where(self, path: str) -> Where | None:
        f = self.facts.get(path)
        return f.where if f else None

    def plain(self) -> dict[str, Any]:
        return {p: f.value for p, f in sorted(self.facts.items())}


@dataclass(frozen=True)
class Match:
    """One line that matched a signature, where it was found and how much it weighs: a line in a
    recognised log or object is `high`, a bare line in pasted text `medium`, words of the issue's
    own prose `medium` (a quoted error) or `low` (a described symptom)."""

    sig: str
    file: str
    line: int
    text: str
    ts: dt.datetime | None
    captures: dict[str, str]
    span: tuple[int, int]
    kind: str  # artefact kind the line was found in
    strength: str = "high"


@dataclass(frozen=True)
class Evidence:
    """What a finding rests on: a log line, a fact's value, or a line's absence."""

    kind: str  # log | fact | absence
    file: str | None = None
    line: int | None = None
    text: str | None = None
    path: str | None = None
    value: Any = None
    span: tuple[int, int] | None = None
    signature: str | None = None
    count: int | None = None  # total matching lines (evidence lists only the first few)
    strength: str = "high"
    artefact: str | None = None  # kind of the artefact a log line was found in

    @property
    def key(self) -> tuple:
        """Two citations of one line (or one fact) are one piece of evidence."""
        if self.kind == "log":
            return ("log", self.file, self.line)
        return (self.kind, self.path, self.signature, self.text)
