"""Where derived, rebuildable data lives between runs (validated rules, compiled templates)."""

from __future__ import annotations

import contextlib
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


def prune(folder: Path, pattern: str, keep: int) -> None:
    """Remove all but the newest `keep` files of `folder` matching `pattern` (a file another
    process removes meanwhile is skipped)."""

    def mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    for old in sorted(folder.glob(pattern), key=mtime, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()
