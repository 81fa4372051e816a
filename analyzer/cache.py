"""Where derived, rebuildable data lives between runs (validated rules, compiled templates)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from analyzer.atomic import atomic_path

T = TypeVar("T")


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


def touched(path: Path) -> None:
    """Mark a kept entry as just used (`prune` keeps those used last); one another run removed
    meanwhile is no error."""
    with contextlib.suppress(OSError):
        os.utime(path)


def kept(
    folder: Path | None,
    name: str,
    keep: tuple[str, int],
    read: Callable[[bytes], T | None],
    make: Callable[[], T],
    write: Callable[[T], bytes | None],
) -> T:
    """What an earlier run kept as `folder/name` (`read` of its bytes; None, or any error: it is
    damaged, or another version's), else `make()`, kept there for the next run (`write`'s bytes,
    unless None) with at most `keep[1]` files matching the glob `keep[0]`. `name` must say
    everything the value depends on (a digest of its inputs): an entry is never stale. An
    entry read is touched, so that the files kept are the ones used last: kept by when they
    were made, the oldest went first even when every run read it (the databases of the log a
    user analyses daily, evicted by a batch over other logs' once a week)."""
    path = folder / name if folder is not None else None
    if path is not None:
        with contextlib.suppress(Exception):
            found = read(path.read_bytes())
            if found is not None:
                touched(path)
                return found
    value = make()
    data = write(value) if path is not None else None
    if path is not None and data is not None:
        with contextlib.suppress(OSError), atomic_path(path) as tmp:
            tmp.write_bytes(data)
        prune(path.parent, *keep)
    return value


def cached_environment(
    cls: type, loader: Any, filters: dict[str, Any] | None = None, **options: Any
) -> Any:
    """A jinja2 environment of this class, loader, filters and options (whose reprs must not
    change from one run to the next) whose templates' compiled code is kept in the cache folder
    (`templates/`; none without a cache folder). Compiling a template costs ~1 ms per 10 lines
    of it (report.html.j2 ~40 ms), loading its code a fraction of that. A cache that cannot be
    read or written (full disk, read-only, damaged) costs speed, never a run."""
    env = cls(loader=loader, **options)
    env.filters.update(filters or {})
    where = cache_dir("templates")
    if where is not None:
        tag = hashlib.sha256(_compiled_by(env, options).encode()).hexdigest()[:12]
        env.bytecode_cache = _quiet_cache()(str(where), f"__jinja2_{tag}_%s.cache")
    return env


def _compiled_by(env: Any, options: dict[str, Any]) -> str:
    """What the code jinja2 compiles depends on besides a template's name and text (all that
    jinja2 keys an entry by): jinja2's version, the environment's class and options, and which
    filters and tests there are and what each is handed (the context, or not)."""
    import jinja2

    def kinds(table: dict[str, Any]) -> list[tuple[str, str]]:
        return sorted((name, str(getattr(f, "jinja_pass_arg", ""))) for name, f in table.items())

    def named(value: Any) -> Any:  # a function by its name: its repr holds an address
        return f"{value.__module__}.{value.__qualname__}" if callable(value) else value

    cls = type(env)
    return repr(
        (
            jinja2.__version__,
            f"{cls.__module__}.{cls.__qualname__}",
            sorted((k, named(v)) for k, v in options.items()),
            kinds(env.filters),
            kinds(env.tests),
        )
    )


@functools.cache
def _quiet_cache() -> type:
    """jinja2's on-disk bytecode cache, quiet about what it cannot read or write (imported
    here: only a run that renders a template pays for jinja2)."""
    from jinja2 import FileSystemBytecodeCache

    class QuietBytecodeCache(FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except Exception:  # unreadable, cut short, or not what jinja2 wrote there
                bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    return QuietBytecodeCache
