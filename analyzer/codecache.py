"""The compiled code of the methods Python generates for dataclasses, kept between runs.

Python 3.11 writes each dataclass's __init__, __repr__, __eq__ (and, frozen, __setattr__,
__delattr__, __hash__) as source text and compiles it, on every start: about 600 compiles for a
small run's ~110 dataclasses, ~60 ms, a sixth of the run. The command line (analyzer/startup.py)
puts a `CodeCache` in front of dataclasses' `exec`: compiled code is kept in the cache folder,
keyed by the exact text and Python's bytecode magic number, as Python keeps a module's .pyc. The
same text always compiles to the same code, so an entry is never stale. A text not there is
compiled as before, and the file is rewritten when the command ends. A file that cannot be read,
fails its checksum or holds anything but code is ignored (and rewritten). The file is as trusted
as the cached rule set beside it, a pickle."""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import zlib
from importlib.util import MAGIC_NUMBER
from types import CodeType

from analyzer.atomic import atomic_path
from analyzer.cache import cache_dir

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

    def exec(
        self, source: str | CodeType, scope: dict | None = None, names: dict | None = None, /
    ) -> None:
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


_installed: CodeCache | None = None  # this process's, once `install` made it


def install() -> CodeCache:
    """The cache read from its file, put in front of dataclasses' `exec`."""
    global _installed
    folder = cache_dir()
    cached: dict[str, CodeType] = {}
    if folder is not None:
        with contextlib.suppress(OSError):
            cached = read_codes((folder / CODE_FILE).read_bytes())
    codes = CodeCache(cached)
    # dataclasses' module namespace: its `exec` now finds ours before the builtin
    vars(dataclasses)["exec"] = codes.exec
    _installed = codes
    return codes


def save() -> None:
    """Rewrite the file when this run compiled something (after `install`)."""
    codes = _installed
    if codes is None or not codes.missed:
        return
    folder = cache_dir()
    if folder is None:
        return
    with contextlib.suppress(OSError), atomic_path(folder / CODE_FILE) as tmp:
        tmp.write_bytes(write_codes(codes.to_keep()))
