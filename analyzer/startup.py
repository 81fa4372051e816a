"""Start-up of the command line: what every run pays before its work, and two costs of our own
cut here. The entry point (analyzer/__main__.py) calls `begin` before the command line's
modules are imported, and the command calls `done` once it has its rules.

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
`begin` has raised the threshold: the entry point imports it first."""

from __future__ import annotations

import gc

USUAL = gc.get_threshold()
# allocations before the first pass: more than start-up makes (~83,000 in a small run)
STARTING = 200_000
# between passes once start-up is frozen: more than a small bundle's analysis (~10,000)
WORKING = 20_000


def begin() -> None:
    gc.set_threshold(STARTING, *USUAL[1:])
    from analyzer import codecache

    codecache.install()


def spawned(target: str, *args: object) -> None:
    """A spawned worker's entry (`multiprocessing` imports this module to find it, with nothing
    else yet): `begin`, then `target` ("module:function") with `args`. Spawning the function
    itself would import its module, and every module that one imports, before `begin`: without
    the code cache (a child of `python -m analyzer` runs no `__main__` module of ours)."""
    begin()
    from importlib import import_module

    module, name = target.split(":")
    getattr(import_module(module), name)(*args)


def done() -> None:
    """Start-up is over: what exists now lives as long as the process."""
    gc.freeze()
    gc.set_threshold(WORKING, *USUAL[1:])
