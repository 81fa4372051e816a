"""The declarative rule engine: sources, signatures, rules, evaluation."""

from __future__ import annotations

from pathlib import Path


def builtin_rules_dir() -> Path:
    """The shipped rules: analyzer/_rules in a wheel, the top-level rules/ in a checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_rules"
    if (packaged / "kinds.yaml").is_file():
        return packaged
    return here.parent / "rules"
