"""Where derived, rebuildable data lives between runs (validated rules, compiled templates)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path | None:
    """`$XDG_CACHE_HOME/hami-bundle-analyzer/...`, created on demand; None when it cannot be
    (read-only home, no home): then callers simply work without a cache."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(base, "hami-bundle-analyzer", *parts)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path
