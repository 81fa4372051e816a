"""Start-up of the command line: what every run pays before its work, and two costs of our own
cut here. The entry point (analyzer/__main__.py) calls `begin` before the command line's
modules are imported, the command calls `done` once it has its rules, and `main` calls `end`.

The cyclic collector. What start-up makes (the modules, then the rule set) lives as long as the
process, so the collector's passes over it find nothing: about 120 of them in a small bundle's
run, ~25 ms. The collector waits for many more allocations than usual before its first pass;
once a command has its rules, everything made so far is frozen (gc.freeze: never examined
again) and the usual thresholds are back. A command that loads no rules keeps the raised
threshold: its garbage is still collected, only in larger batches.

Dataclass methods. Python 3.11 writes each dataclass's __init__, __repr__, __eq__ (and, frozen,
__setattr__, __delattr__, __hash__) as source text and compiles it, on every start: about 600
compiles for a small run's ~110 dataclasses, ~60 ms, a sixth of the run. Their compiled code is
kept in the cache folder, keyed by the exact text and Python's bytecode magic number, as
Python keeps a module's .pyc: the same text always compiles to the same code, so an entry is
never stale. A text not there is compiled as before, and the file is rewritten when the command
ends. A file that cannot be read, fails its checksum or holds anything but code is ignored (and
rewritten). The file is as trusted as the cached rule set beside it, a pickle."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import marshal
import zlib
from importlib.util import MAGIC_NUMBER
from types import CodeType
from typing import Any

USUAL = gc.get_threshold()
# allocations before the first pass: more than start-up makes (~83,000 in a small run)
STARTING = 200_000

CODE_FILE = f"dataclass-code-{MAGIC_NUMBER.hex()}.marshal"
MAX_CODES = 2000  # every command together uses ~800 (a small bundle's analysis ~620)


class CodeCache:
    """Compiled dataclass methods by their source text: the ones read from the cache file, and
    the ones this run used or compiled (what the file is rewritten with when something was
    missing)."""

    def __init__(self, cached: dict[str, CodeType]) -> None:
        self.cached = cached
        self.used: dict[str, CodeType] = {}
        self.missed = 0

    def exec(self, source: Any, scope: Any = None, names: Any = None, /) -> None:
        """`exec` as dataclasses calls it, with the compiled text from the cache when there."""
        if isinstance(source, str):
            code = self.cached.get(source)
            if code is None:  # what exec(source) compiles: no __future__ flags of ours
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.missed += 1
            self.used[source] = code
            source = code
        exec(source, scope, names)

    def to_keep(self) -> dict[str, CodeType]:
        """The cached texts and this run's (each command uses its own classes), unless that is
        more than MAX_CODES (texts of classes since edited or removed): then only this run's."""
        merged = {**self.cached, **self.used}
        return merged if len(merged) <= MAX_CODES else dict(self.used)


def read_codes(data: bytes) -> dict[str, CodeType]:
    """A cache file's contents (a CRC-32, then the marshalled dict); {} when it is anything else."""
    if len(data) < 4 or zlib.crc32(data[4:]).to_bytes(4, "big") != data[:4]:
        return {}
    try:
        codes = marshal.loads(data[4:])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict) or not all(
        isinstance(k, str) and isinstance(v, CodeType) for k, v in codes.items()
    ):
        return {}
    return codes


def write_codes(codes: dict[str, CodeType]) -> bytes:
    payload = marshal.dumps(codes)
    return zlib.crc32(payload).to_bytes(4, "big") + payload


_codes: CodeCache | None = None


def begin() -> None:
    global _codes
    gc.set_threshold(STARTING, *USUAL[1:])
    from analyzer.cache import cache_dir

    folder = cache_dir()
    cached: dict[str, CodeType] = {}
    if folder is not None:
        with contextlib.suppress(OSError):
            cached = read_codes((folder / CODE_FILE).read_bytes())
    _codes = CodeCache(cached)
    # dataclasses' module namespace: its `exec` now finds ours before the builtin
    vars(dataclasses)["exec"] = _codes.exec


def done() -> None:
    """Start-up is over: what exists now lives as long as the process."""
    gc.freeze()
    gc.set_threshold(*USUAL)


def end() -> None:
    """The command is over: store the dataclass code compiled in this run, if any was."""
    if _codes is None or not _codes.missed:
        return
    from analyzer.atomic import atomic_path
    from analyzer.cache import cache_dir

    folder = cache_dir()
    if folder is None:
        return
    with contextlib.suppress(OSError), atomic_path(folder / CODE_FILE) as tmp:
        tmp.write_bytes(write_codes(_codes.to_keep()))
