"""Start-up of the command line: what every run pays before its work, and the costs of our own
and of our dependencies' imports cut here. The entry point (analyzer/__main__.py) calls `begin`
before the command line's modules are imported, and the command calls `done` once it has its
rules.

The cyclic collector. What start-up makes (the modules, then the rule set) lives as long as the
process, so the collector's passes over it find nothing: about 120 of them in a small bundle's
run, ~25 ms. The collector waits for many more allocations than usual before its first pass;
once a command has its rules, everything made so far is frozen (gc.freeze: never examined
again) and the collector passes every WORKING allocations: a small bundle's analysis makes
fewer (Python's usual 700 meant 15 passes, ~3 ms), a long one is collected in batches that
keep its garbage small. A command that loads no rules keeps the raised threshold: its garbage
is still collected, only in larger batches.

Dataclass methods and regular expressions, compiled at every start (~60 and ~20 ms): `begin`
puts their cache in place (analyzer/codecache.py; `main` saves what a run compiled; a spawned
worker starts through `spawned`). This module imports nothing else until
`begin` has raised the threshold: the entry point imports it first.

A module the dependencies import but a run does not use is loaded at its first use (`DEFERRED`),
and a run of small inputs gives polars one thread (`small_inputs`).

Python's frames. CPython (3.11-3.13) keeps the frames of running functions in 16 KiB blocks it
maps from the system, and returns a block as soon as the frame at its start returns: a
function called again and again where a block ends maps and unmaps one each time, with its
page faults. The imports nested a dozen deep and the command line's layers put a small run's
frames across such an end: 600-1,700 blocks mapped and unmapped, 8 ms of a 270 ms run in one
measurement. The entry point runs the command on one block large enough for all its frames
(`on_a_wide_stack`)."""

from __future__ import annotations

import gc
import os
import sys
from types import FunctionType

USUAL = gc.get_threshold()
# allocations before the first pass: more than start-up makes (~83,000 in a small run)
STARTING = 200_000
# between passes once start-up is frozen: more than a small bundle's analysis (~10,000)
WORKING = 20_000


# standard-library modules our dependencies import as they are imported, which a run seldom
# uses: importlib.metadata (polars' Iceberg plugin asks it for versions; it imports email, csv,
# zipfile and socket, ~10 ms of the start)
DEFERRED = frozenset({"importlib.metadata"})


def begin() -> None:
    gc.set_threshold(STARTING, *USUAL[1:])
    from analyzer import codecache

    codecache.install()
    if not any(isinstance(f, _Deferring) for f in sys.meta_path):
        sys.meta_path.insert(0, _Deferring())


class _Deferring:
    """Finds the DEFERRED modules and loads each at its first use (`importlib.util.LazyLoader`:
    the module object is made at its import, run at the first look at an attribute)."""

    def find_spec(self, name, path, target=None):
        if name not in DEFERRED:
            return None
        from importlib.machinery import PathFinder
        from importlib.util import LazyLoader

        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = LazyLoader(spec.loader)
        return spec


# a frame of this many slots (8 bytes each) is more than half of a 256 KiB block, so CPython maps
# one of that size for it, and the frames called from it take the ~120 KiB after it (strace: a
# small run, a 1 GB log's analysis and its redaction map 2-13 blocks of 16 KiB beyond it)
WIDE_SLOTS = 16_500


def on_a_wide_stack(fn, *args):
    """`fn(*args)`, called from a frame that opens a 256 KiB block of frames (its unused local
    variables make it that large), which stays mapped until `fn` returns."""
    return _wide(fn, *args)


def _call(fn, *args):
    return fn(*args)


_code = _call.__code__
_names = _code.co_varnames + ("_",) * WIDE_SLOTS
_wide = FunctionType(_code.replace(co_varnames=_names, co_nlocals=len(_names)), {}, "_wide")
del _code, _names


def spawned(target: str, *args: object) -> None:
    """A spawned worker's entry (`multiprocessing` imports this module to find it, with nothing
    else yet): `begin`, then `target` ("module:function") with `args`. Spawning the function
    itself would import its module, and every module that one imports, before `begin`: without
    the code cache (a child of `python -m analyzer` runs no `__main__` module of ours)."""
    begin()
    from importlib import import_module

    module, name = target.split(":")
    on_a_wide_stack(lambda: getattr(import_module(module), name)(*args))


def done() -> None:
    """Start-up is over: what exists now lives as long as the process."""
    gc.freeze()
    gc.set_threshold(WORKING, *USUAL[1:])


def small_inputs() -> None:
    """The command's inputs are all small files: polars gets one thread. A few hundred rows gain
    nothing from its pool, and each query handed to a sleeping pool thread waits for it to wake:
    a small bundle's analysis runs ~55, ~10 ms of its run on two vCPUs. Only before polars is
    imported (it sizes its pool once), and a POLARS_MAX_THREADS of the user's stands."""
    if "polars" not in sys.modules:
        os.environ.setdefault("POLARS_MAX_THREADS", "1")
