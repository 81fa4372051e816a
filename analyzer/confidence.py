"""Confidence: the one owner of its levels and of how they combine.

Every strength or confidence in the analyzer is one of `LEVELS`, strongest first:

- evidence has a strength (`facts/matches.strength_of`: a log line of a recognised file is high,
  a quoted error medium, a described symptom low);
- a condition that needs all of its parts is as strong as its `weakest` part, one that needs
  any of them as its `strongest`;
- a fired rule's confidence is the `weakest` of the rule's declared confidence and its evidence,
  one level `lower` when its `unless` could not be evaluated, and one level lower again when
  other causes compete for the same symptoms (`report/build.py`);
- a verdict is `confident` at medium or above: the corpus scorer counts a wrong verdict there as
  confident-wrong, and the issue bot speaks only `at_least` its `min-confidence`.

    >>> weakest("high", "low", "medium"), strongest("low", "medium"), lower("high"), lower("low")
    ('low', 'medium', 'medium', 'low')
    >>> at_least("medium", "high"), at_least("high", "medium"), confident("low")
    (False, True, False)
"""

from __future__ import annotations

LEVELS = ("high", "medium", "low")
RANK = {level: i for i, level in enumerate(LEVELS)}  # 0 is the strongest


def weakest(*levels: str) -> str:
    """The lowest of some confidence levels (high > medium > low); none given: high."""
    return max(levels, key=LEVELS.index, default="high")


def strongest(*levels: str) -> str:
    """The highest of some confidence levels; none given: low."""
    return min(levels, key=LEVELS.index, default="low")


def lower(level: str) -> str:
    """One level down; low stays low."""
    return LEVELS[min(LEVELS.index(level) + 1, len(LEVELS) - 1)]


def at_least(level: str, minimum: str) -> bool:
    """`level` is `minimum` or stronger."""
    return RANK[level] <= RANK[minimum]


def confident(level: str | None) -> bool:
    """A verdict someone would act on without checking: medium or high."""
    return level is not None and at_least(level, "medium")
