"""A log signature: one line of one component, declared once in rules/signatures/ (Sigma-style).
A leaf definition, shared by the scan, the facts stage and the rule engine."""

from __future__ import annotations

import contextlib
import pickle
from dataclasses import dataclass
from functools import cached_property

import regex

from analyzer.packed import packed
from analyzer.versions import ANY, Range

MATCH_TIMEOUT = 0.25  # seconds per line for the catalogue's Python-side regexes on bundle text:
# a catastrophic one becomes an error, not a hang


# read only by the linter and `rules show` (analyzer/packed.py)
@packed("examples_match", "examples_no_match", "origin", "references")
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
    versions: Range = ANY
    implies_version: bool = False
    examples_match: tuple[str, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    node_capture: str | None = None  # capture naming the node the line is about
    artefact_node: str | None = None  # capture naming the node the whole artefact is about
    version_capture: str | None = None  # capture holding a version (evidence)
    version_of: str = "hami"  # whose version the capture is: hami, toolkit, gpu-operator, ...
    prefilter: tuple[str, ...] = ()  # literals for the fast scan (default: derived from regex)
    # the literal sets a big log's scan chooses from (parse.literals.literal_options), worked out
    # when the rules are loaded (and cached with them); None: `prefilter` is the signature's own
    literal_choices: tuple[tuple[tuple[str, ...], ...], ...] | None = None
    symptom: bool = False  # a described symptom, not a printed line: weak evidence
    # kinds whose lines are searched for it; empty: every scanned kind (a prose phrasing need not
    # cost every line of a 1 GB log)
    scanned_in: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    category: str = ""  # the diagnosis the line points to; "context" (or none): no cause

    @property
    def carries_cause(self) -> bool:
        """The line names a cause (a category of DESIGN.md), so some rule must weigh it."""
        return self.category not in ("", "context", "healthy", "inconclusive")

    @cached_property
    def compiled(self) -> regex.Pattern:
        """Compiled once: the loader seeds it, and the cached rule set keeps it as regex's
        compiled code, read back on first use. A small bundle needs two dozen of the ~300
        patterns: compiling them takes ~15 ms, reading all of them back ~5 ms, reading back
        those two dozen well under 1 ms."""
        code = self.__dict__.pop("_compiled", None)
        if code is not None:
            with contextlib.suppress(Exception):  # a damaged cache costs a compile, not a run
                return pickle.loads(code)
        return regex.compile(self.pattern)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if "compiled" in state:
            state["_compiled"] = pickle.dumps(state.pop("compiled"))
        return state
