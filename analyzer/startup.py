"""The cyclic collector during start-up.

What start-up makes (the modules, then the rule set) lives as long as the process, so the
collector's passes over it find nothing: about 120 of them in a small bundle's run, ~25 ms. The
entry point (analyzer/__main__.py) has the collector wait for many more allocations than usual
before its first pass; once a command has its rules, everything made so far is frozen
(gc.freeze: never examined again) and the usual thresholds are back. A command that loads no
rules keeps the raised threshold: its garbage is still collected, only in larger batches."""

from __future__ import annotations

import gc

USUAL = gc.get_threshold()
# allocations before the first pass: more than start-up makes (~83,000 in a small run)
STARTING = 200_000


def begin() -> None:
    gc.set_threshold(STARTING, *USUAL[1:])


def done() -> None:
    """Start-up is over: what exists now lives as long as the process."""
    gc.freeze()
    gc.set_threshold(*USUAL)
