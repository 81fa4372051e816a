"""Our own modules' code read from one file, not from a .pyc each.

Python imports a module by looking for its file in each folder of its package's path, checking
the source's size and time, then opening, reading and checking its .pyc: for the ~80 modules of
ours a small bundle's analysis imports, ~4 ms of a run whose own work is ~35 ms. A command
keeps the code of every module of ours it imported in one file of the cache folder, which the
next run reads at once; a module not in it is imported as Python does, and added when the
command ends (`save`, after its output).

The file is named by Python's bytecode magic number, the installed code (`install.code_digest`:
a wheel's RECORD, a checkout's every module's path, size and time, so any edit names a new
file) and the package's folder (the modules' `__file__` is theirs). It holds the length of its
index, the index (each module's file, whether it is a package, where its code lies) and the
modules' code one after the other: it is mapped, not read, and each module's code unmarshalled
from the mapping when the module is imported (a copy of the file would cost a run ~300 page
faults). A file that cannot be read or does not hold what `save` writes is ignored and
rewritten. It is as trusted as the cached rule set beside it."""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
import sys
from hashlib import sha256
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType, ModuleType

from analyzer.atomic import atomic_path
from analyzer.cache import cache_dir, prune
from analyzer.install import PACKAGE, code_digest

PREFIX = "analyzer."
KEPT = 8  # files kept (one per checkout or install; each edit of a checkout writes another)

# a module's name -> (its file relative to the package folder, whether it is a package, where
# its marshalled code starts after the index, and its length)
Index = dict[str, tuple[str, bool, int, int]]
HEADER = 8  # bytes of the index's length


def _file() -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        code, _wheel = code_digest()
    except OSError:
        return None
    key = sha256(f"{MAGIC_NUMBER.hex()}:{code}:{PACKAGE}".encode()).hexdigest()[:24]
    return folder / f"modules-{key}.marshal"


def _read(path: Path) -> tuple[Index, memoryview]:
    """The file's index and its code, mapped; nothing when it is not what `_written` makes."""
    try:
        with path.open("rb") as fh:
            mapped = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        size = int.from_bytes(mapped[:HEADER], "big")
        index = marshal.loads(mapped[HEADER : HEADER + size])
    except (OSError, ValueError, EOFError, TypeError):
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
        and len(v) == 4
        and isinstance(v[0], str)
        and isinstance(v[1], bool)
        and all(isinstance(n, int) and n >= 0 for n in v[2:])
        and v[2] + v[3] <= end
    )


def _written(codes: dict[str, tuple[str, bool, bytes]]) -> bytes:
    index: Index = {}
    at = 0
    for name, (relative, package, code) in codes.items():
        index[name] = (relative, package, at, len(code))
        at += len(code)
    head = marshal.dumps(index)
    return len(head).to_bytes(HEADER, "big") + head + b"".join(c for _, _, c in codes.values())


class ModuleCache(MetaPathFinder, Loader):
    """Finds and loads the modules the file holds; records whether a run imported others."""

    def __init__(self, path: Path | None, index: Index, code: memoryview) -> None:
        self.path = path
        self.index = index
        self.code = code
        self.missed = False
        self.damaged: set[str] = set()  # held, but not code: left out when the file is written

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if not name.startswith(PREFIX):
            return None
        entry = self.index.get(name)
        code = None
        if entry is not None:
            with contextlib.suppress(ValueError, EOFError, TypeError):
                code = marshal.loads(self.marshalled(name))
        if entry is None or not isinstance(code, CodeType):  # Python's own import
            self.missed = True
            if entry is not None:
                self.damaged.add(name)
            return None
        origin = str(PACKAGE / entry[0])
        spec = ModuleSpec(name, self, origin=origin, is_package=entry[1], loader_state=code)
        spec.has_location = True  # sets `__file__`
        if entry[1]:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None  # set by the import system before it calls this
        exec(spec.loader_state, module.__dict__)

    def marshalled(self, name: str) -> memoryview:
        _, _, at, size = self.index[name]
        return self.code[at : at + size]


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
    """Rewrite the file when this run imported a module of ours it did not hold: it then holds
    every module of ours loaded so far, with what it held."""
    cache = _installed
    if cache is None or not cache.missed or cache.path is None:
        return
    codes = {
        n: (e[0], e[1], bytes(cache.marshalled(n)))
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
        if origin is None or not hasattr(loader, "get_code"):
            continue
        with contextlib.suppress(Exception):  # a module that cannot be read is left out
            relative = Path(origin).resolve().relative_to(PACKAGE).as_posix()
            code = loader.get_code(name)  # type: ignore[union-attr]
            if code is not None:
                package = getattr(spec, "submodule_search_locations", None) is not None
                codes[name] = (relative, package, marshal.dumps(code))
    if len(codes) == held and not cache.damaged:  # it asked for a module that is not there
        return
    with contextlib.suppress(OSError), atomic_path(cache.path) as tmp:
        tmp.write_bytes(_written(codes))
    with contextlib.suppress(OSError):
        prune(cache.path.parent, "modules-*.marshal", KEPT)
