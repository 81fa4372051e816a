"""A problem found in the rule files, typed: its level, where it is and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Issue:
    """One problem in the rule files."""

    level: str  # error (stops the load) | warning (printed by `rules lint`)
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"
