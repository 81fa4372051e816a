"""What a comparison in a `fact:` or `age_of:` condition means, and which operands can ever
match a fact of a given type (the linter's view of the same semantics)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import regex

from analyzer.catalogue.signatures import MATCH_TIMEOUT

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
_PY_TYPES = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "list": (list,),
}


def parse_duration(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"bad duration {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"bad duration {value!r} (use 90, 90s, 5m, 2h or 1d)")
    return float(m[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m[2] or "s"]


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


def operand_problems(typ: str, op: str, want: Any) -> Iterator[str]:
    """Why `op want` can never hold for a fact of type `typ` (nothing: it can)."""
    if op == "exists":
        if not isinstance(want, bool):
            yield f"exists takes true or false, got {want!r}"
    elif op in ORDERING:
        if (
            typ not in ("int", "float")
            or isinstance(want, bool)
            or not isinstance(want, int | float)
        ):
            yield f"{op} needs a number fact and a number, got {want!r}"
    elif op == "matches":
        if typ != "str":
            yield "matches needs a string fact"
    elif op in ("contains", "not_contains"):
        if typ not in ("list", "str"):
            yield f"{op} needs a list or string fact"
        elif typ == "str" and not isinstance(want, str):
            yield f"{op} on a string needs a string, got {want!r}"
    elif (allowed := _PY_TYPES.get(typ)) is not None:
        for v in want if op in ("in", "not_in") else [want]:
            if not isinstance(v, allowed) or (typ != "bool" and isinstance(v, bool)):
                yield f"{op} {v!r} can never equal a {typ} value (write it as a {typ})"
