"""The parsers a kind's `parser:` names (rules/kinds.yaml), one row each: what it makes of an
artefact, which list of the parsed bundle its results join, and the warnings it raised. The
pipeline dispatches through this table only, so adding a parser is one function and one row.

Every textual kind is also scanned line by line for signatures when it is `scanned`; `log` is the
parser of kinds that need nothing beyond that scan. A parser's module is imported when an artefact
of its kind is first parsed: a run pays for the kinds its bundle holds (pods and configs ~6 ms)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from analyzer.bundle.model import Artefact
from analyzer.catalogue.kinds import Kind
from analyzer.errors import RuleLoadError
from analyzer.parse.node import parse_node
from analyzer.structured import Documents


@dataclass(frozen=True)
class Parsed:
    """What a parser made of one artefact."""

    items: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Parser:
    """How a kind's artefacts are parsed, and where in the parsed bundle they go."""

    into: str  # the ParsedBundle list its items join ("" when it makes none)
    # the artefact, read as its kind declares, and its documents (shared by the kind's parsers)
    parse: Callable[[Artefact, Kind, Documents], Parsed]
    structured: bool = False  # reads a document (an object or a config), not lines


def _node(a: Artefact, _kind: Kind, documents: Documents) -> Parsed:
    nodes = parse_node(a, documents)
    # a document's YAML error is every node's of that document: said once
    said = dict.fromkeys(w for n in nodes for w in n.warnings)
    return Parsed(nodes, [f"{a.file.name}: {w}" for w in said])


def _pod(a: Artefact, kind: Kind, documents: Documents) -> Parsed:
    from analyzer.parse.pod import parse_pod

    pods = parse_pod(a, kind.pod_templates, documents)
    kept = [p for p in pods if p.name or p.annotations or p.events or p.containers]
    return Parsed(kept, [f"{a.file.name}: {w}" for p in pods for w in p.warnings])


def _config(a: Artefact, _kind: Kind, documents: Documents) -> Parsed:
    from analyzer.parse.configs import parse_config

    cf = parse_config(a, documents)
    return Parsed([cf], [f"{a.file.name}: {w}" for w in cf.warnings])


def _manifest(a: Artefact, _kind: Kind, _documents: Documents) -> Parsed:
    from analyzer.parse.manifest import parse_manifest

    m = parse_manifest(a)
    return Parsed([m], [f"{m.file}: {note}" for note in m.notes])


def _pod_table(a: Artefact, _kind: Kind, _documents: Documents) -> Parsed:
    from analyzer.parse.pod_table import parse_pod_table

    return Parsed([parse_pod_table(a)])


def _scan_only(_a: Artefact, _kind: Kind, _documents: Documents) -> Parsed:
    return Parsed()


PARSERS: dict[str, Parser] = {
    "node": Parser("nodes", _node, structured=True),
    "pod": Parser("pods", _pod, structured=True),
    "config": Parser("configs", _config, structured=True),
    "manifest": Parser("manifests", _manifest),
    "pods-table": Parser("pod_tables", _pod_table),
    "log": Parser("", _scan_only),
}


def parse_artefact(
    a: Artefact, kind: Kind, only: Collection[str] | None = None
) -> list[tuple[Parser, Parsed]]:
    """An artefact read by each parser its kind names (of `only`, if given), in order; its
    documents loaded once."""
    documents = Documents(a.text or "")
    names = [n for n in kind.parsers if n in PARSERS and (only is None or n in only)]
    return [(PARSERS[n], PARSERS[n].parse(a, kind, documents)) for n in names]


def check_parsers(catalogue) -> None:
    """Every `parser:` of the catalogue names a row of PARSERS (an error at load, not a kind
    silently left unparsed)."""
    problems = [
        f"{k.at}: kind {k.id}: parser {name!r} is not one of {sorted(PARSERS)}"
        for k in catalogue.kinds.values()
        for name in k.parsers
        if name not in PARSERS
    ]
    if problems:
        raise RuleLoadError(problems)
