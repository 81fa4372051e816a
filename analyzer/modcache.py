"""Our own modules' code read from one file, not from a .pyc each.

Python imports a module by looking for its file in each folder of its package's path, checking
the source's size and time, then opening, reading and checking its .pyc: for the ~80 modules of
ours a small bundle's analysis imports, ~4 ms of a run whose own work is ~35 ms. A command
keeps the code of every module of ours it imported in one file of the cache folder, which the
next run reads at once; a module not in it is imported as Python does, and added when the
command ends (`save`, after its output).

The file is named by Python's bytecode magic number, its optimisation level (-O, -OO), the
installed code (`install.code_digest`: a wheel's RECORD, a checkout's every module's path, size
and time) and the package's folder (the modules' `__file__` is theirs). It holds the length of
its index, the index (each module's file, whether it is a package, its source's modification
time and size, where its code lies and its CRC-32) and the modules' code one after the other:
it is mapped, not read (a copy would cost a run ~300 page faults). A module is served when its
source's time and size are those recorded, as Python checks a .pyc, and its code passes its
CRC-32 and unmarshals; else Python imports it and the file is rewritten. The loader is Python's
own for the module's file (`_Cached`): resources, data and `reload` are the file's. A file that
cannot be read or does not hold what `save` writes is ignored and rewritten. It is as trusted as
the cached rule set beside it (a file truncated in place by another program while a run maps it
ends that run: every writer here replaces the file)."""

from __future__ import annotations

import _imp
import contextlib
import marshal
import mmap
import os
import sys
import zlib
from hashlib import sha256
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader
from importlib.util import MAGIC_NUMBER, spec_from_file_location
from pathlib import Path
from types import CodeType

from analyzer.atomic import atomic_path
from analyzer.cache import cache_dir, prune
from analyzer.install import PACKAGE, code_digest

PREFIX = "analyzer."
KEPT = 8  # files kept (one per checkout or install; each edit of a checkout writes another)

# a module's name -> (its file relative to the package folder, whether it is a package, the
# source's modification time and size when its code was read, where its marshalled code starts
# after the index, its length, and the CRC-32 of it)
Entry = tuple[str, bool, int, int, int, int, int]
Index = dict[str, Entry]
HEADER = 8  # bytes of the index's length


def _file() -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        code, _wheel = code_digest()
    except OSError:
        return None
    # -O and -OO compile other code (no asserts, no docstrings): Python keeps .opt-N.pyc apart
    key = f"{MAGIC_NUMBER.hex()}:{sys.flags.optimize}:{code}:{PACKAGE}"
    return folder / f"modules-{sha256(key.encode()).hexdigest()[:24]}.marshal"


def _read(path: Path) -> tuple[Index, memoryview]:
    """The file's index and its code, mapped; nothing when it is not what `_written` makes."""
    try:
        with path.open("rb") as fh:
            mapped = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        size = int.from_bytes(mapped[:HEADER], "big")
        index = marshal.loads(mapped[HEADER : HEADER + size])
    except Exception:  # anything at all: the file is then ignored and rewritten
        return {}, memoryview(b"")
    code = mapped[HEADER + size :]
    if not isinstance(index, dict) or not all(
        isinstance(k, str) and k.startswith(PREFIX) and _is_entry(v, len(code))
        for k, v in index.items()
    ):
        return {}, memoryview(b"")
    return index, code


def _is_entry(v: object, end: int) -> bool:
    return (
        isinstance(v, tuple)
        and len(v) == 7
        and isinstance(v[0], str)
        and isinstance(v[1], bool)
        and all(isinstance(n, int) and n >= 0 for n in v[2:])
        and v[4] + v[5] <= end
    )


def _written(codes: dict[str, tuple[str, bool, int, int, bytes]]) -> bytes:
    index: Index = {}
    at = 0
    for name, (relative, package, mtime, size, code) in codes.items():
        index[name] = (relative, package, mtime, size, at, len(code), zlib.crc32(code))
        at += len(code)
    head = marshal.dumps(index)
    blobs = b"".join(c for *_, c in codes.values())
    return len(head).to_bytes(HEADER, "big") + head + blobs


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class _Cached(SourceFileLoader):
    """Python's own loader for the module's file, its code (the first time) from the cache: the
    module's file, resources, data and `reload` are the file's."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self._code: CodeType | None = code

    def get_code(self, fullname: str) -> CodeType | None:
        code, self._code = self._code, None  # a reload reads the file
        return code if code is not None else super().get_code(fullname)


class ModuleCache(MetaPathFinder):
    """Finds the modules the file holds, each checked as Python checks a .pyc (its source's time
    and size) and by its CRC-32; records whether a run imported others."""

    def __init__(self, path: Path | None, index: Index, code: memoryview) -> None:
        self.path = path
        self.index = index
        self.code = code
        self.missed = False
        self.damaged: set[str] = set()  # held, but stale or damaged: left out when written

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if not name.startswith(PREFIX) or target is not None:  # a reload reads the file
            return None
        entry = self.index.get(name)
        code = self._code(name, entry) if entry is not None else None
        if entry is None or code is None:  # Python's own import
            self.missed = True
            if entry is not None:
                self.damaged.add(name)
            return None
        origin = str(PACKAGE / entry[0])
        _imp._fix_co_filename(code, origin)  # type: ignore[attr-defined]  # as Python's loader does
        locations = [os.path.dirname(origin)] if entry[1] else None
        return spec_from_file_location(
            name, origin, loader=_Cached(name, origin, code), submodule_search_locations=locations
        )

    def _code(self, name: str, entry: Entry) -> CodeType | None:
        relative, _package, mtime, size, at, length, crc = entry
        if _stat(str(PACKAGE / relative)) != (mtime, size):  # edited (or gone) since
            return None
        data = self.code[at : at + length]
        if zlib.crc32(data) != crc:
            return None
        try:
            code = marshal.loads(data)
        except Exception:
            return None
        return code if isinstance(code, CodeType) else None

    def marshalled(self, name: str) -> memoryview:
        at, length = self.index[name][4:6]
        return self.code[at : at + length]


_installed: ModuleCache | None = None


def install() -> None:
    """Put the file's modules in front of Python's own finders (once per process)."""
    global _installed
    if _installed is not None:
        return
    path = _file()
    index, code = _read(path) if path is not None else ({}, memoryview(b""))
    _installed = ModuleCache(path, index, code)
    sys.meta_path.insert(0, _installed)


def save() -> None:
    """Rewrite the file when this run imported a module of ours it did not hold (or held stale
    or damaged): it then holds every module of ours loaded so far, with what it held."""
    cache = _installed
    if cache is None or not cache.missed or cache.path is None:
        return
    codes = {
        n: (*e[:4], bytes(cache.marshalled(n)))
        for n, e in cache.index.items()
        if n not in cache.damaged
    }
    held = len(codes)
    for name, module in list(sys.modules.items()):
        if not name.startswith(PREFIX) or name in codes:
            continue
        spec = getattr(module, "__spec__", None)
        loader = getattr(spec, "loader", None)
        origin = getattr(spec, "origin", None)
        if origin is None or not isinstance(loader, SourceFileLoader):
            continue
        with contextlib.suppress(Exception):  # a module that cannot be read is left out
            stat = _stat(origin)
            relative = Path(origin).resolve().relative_to(PACKAGE).as_posix()
            code = SourceFileLoader(name, origin).get_code(name)
            if code is not None and stat is not None:
                package = getattr(spec, "submodule_search_locations", None) is not None
                codes[name] = (relative, package, *stat, marshal.dumps(code))
    if len(codes) == held and not cache.damaged:  # it asked for a module that is not there
        return
    with contextlib.suppress(OSError), atomic_path(cache.path) as tmp:
        tmp.write_bytes(_written(codes))
    with contextlib.suppress(OSError):
        prune(cache.path.parent, "modules-*.marshal", KEPT)
