"""A log signature: one line of one component, declared once in rules/signatures/ (Sigma-style).
A leaf definition, shared by the scan, the facts stage and the rule engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import regex

from analyzer.versions import Range

MATCH_TIMEOUT = 0.25  # seconds per line for the catalogue's Python-side regexes on bundle text:
# a catastrophic one becomes an error, not a hang


@dataclass(frozen=True)
class Signature:
    """A log line declared once (Sigma-style): who prints it, where in their source, what it means."""

    id: str
    sources: tuple[str, ...]  # artefact kinds where it is expected (absence is judged there)
    pattern: str
    meaning: str
    file: str
    line: int
    component: str = "hami"  # who prints it: hami-device-plugin, containerd, kubelet, ...
    origin: str = ""  # upstream source location of the wording
    level: str = "I"
    verbosity: int = 0
    versions: Range = field(default_factory=Range)
    implies_version: bool = False
    examples_match: tuple[str, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    node_capture: str | None = None  # capture naming the node the line is about
    artefact_node: str | None = None  # capture naming the node the whole artefact is about
    version_capture: str | None = None  # capture holding a version (evidence)
    version_of: str = "hami"  # whose version the capture is: hami, toolkit, gpu-operator, ...
    prefilter: tuple[str, ...] = ()  # literals for the fast scan (default: derived from regex)
    symptom: bool = False  # a described symptom, not a printed line: weak evidence
    references: tuple[str, ...] = ()
    category: str = ""  # the diagnosis the line points to; "context" (or none): no cause

    @property
    def carries_cause(self) -> bool:
        """The line names a cause (a category of DESIGN.md), so some rule must weigh it."""
        return self.category not in ("", "context", "healthy", "inconclusive")

    @cached_property
    def compiled(self) -> regex.Pattern:
        """Compiled on first use: a small bundle needs a handful of the hundreds of patterns,
        and compiling them all (or unpickling them compiled) would cost more than its analysis."""
        return regex.compile(self.pattern)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("compiled", None)  # recompiled lazily after unpickling
        return state
