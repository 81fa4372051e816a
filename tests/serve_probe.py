"""A module a test's worker processes serve by name (tests/test_scanstart.py): what `warm_up`
did before the first task, and which process answers."""

from __future__ import annotations

import os

_WARMED: list[int] = []


def warm_up() -> None:
    _WARMED.append(os.getpid())


def answer() -> tuple[int, list[int]]:
    """This process, and the processes `warm_up` ran in here."""
    return os.getpid(), list(_WARMED)
