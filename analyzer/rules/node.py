"""What every condition node is: a three-valued Outcome (TRUE with evidence, FALSE, UNKNOWN
naming the kinds that would decide it), the EvalContext it looks at, and the Cond protocol each
node class implements (evaluate, parse, schema, describe, check). The nodes are in conditions.py."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from analyzer.facts.model import Evidence, FactSet, Match
from analyzer.rules.issues import Issue


class Tri(enum.Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    """A condition's result: TRUE with evidence, FALSE, or UNKNOWN with what is missing."""

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

    @property
    def facts(self) -> FactSet: ...

    @property
    def collected_at(self) -> dt.datetime | None: ...

    def matches(self, sig: str) -> list[Match]: ...

    def count(self, sig: str) -> int: ...

    def absence_known(self, sig: str, kinds: frozenset[str] = frozenset()) -> bool: ...

    def sources(self, sig: str, kinds: frozenset[str] = frozenset()) -> frozenset[str]: ...

    def kind_matches(self, kind: str, kinds: frozenset[str]) -> bool: ...

    def meaning(self, sig: str) -> str: ...


@dataclass
class ParseProblems:
    """Problems found while parsing one rule's conditions, each naming file, line and rule."""

    file: str
    rule: str = "?"
    items: list[str] = field(default_factory=list)

    def add(self, line: int, msg: str) -> None:
        self.items.append(f"{self.file}:{line}: rule {self.rule}: {msg}")


class Cond:
    """A condition node. HEAD is the key that introduces it in YAML."""

    HEAD: ClassVar[str]
    line: int

    def evaluate(self, ctx: EvalContext) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def parse(
        cls, raw: dict, keys: set[str], here: int, problems: ParseProblems, signatures
    ) -> Cond | None:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def schema(cls) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self, indent: str = "") -> list[str]:
        return [f"{indent}{self!r}"]

    def check(self, rule, catalogue) -> Iterator[Issue]:
        """What the linter finds wrong with this node in `rule` (nothing by default)."""
        return iter(())

    def children(self) -> tuple[Cond, ...]:
        return ()

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()
