"""A parsed bundle -> one NodeContext per node: facts with provenance, the node's view of the
signature matches, clock and versions. The producers and their order are in
analyzer/facts/producers.py (each declares what it reads and writes)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from analyzer.errors import AnalyzerError
from analyzer.facts import handshake as handshake_facts
from analyzer.facts import producers
from analyzer.facts.clock import Clock, infer_clock, parse_time, stamp_logs
from analyzer.facts.matches import SignatureIndex, collect_matches
from analyzer.facts.model import FactSet, Match
from analyzer.facts.producers import Sources
from analyzer.kinds import Catalogue
from analyzer.parse.annotations import AnnotationSpec, Handshake, RegisterAnnotation
from analyzer.parse.node import NodeFacts
from analyzer.pipeline import ParsedBundle
from analyzer.signatures import Signature
from analyzer.versions import VersionInference


class NodeNotFound(AnalyzerError):
    """`--node NAME` names no node of the bundle."""


@dataclass
class NodeContext:
    """Everything the rules of one node see; it satisfies the conditions' EvalContext."""

    name: str | None
    node: NodeFacts | None
    facts: FactSet
    index: SignatureIndex
    clock: Clock
    register: RegisterAnnotation | None = None
    handshake: Handshake | None = None
    version: VersionInference = field(default_factory=VersionInference)
    components: dict[str, VersionInference] = field(default_factory=dict)

    @property
    def collected_at(self) -> dt.datetime | None:
        return self.clock.collected_at

    def matches(self, sig: str) -> list[Match]:
        return self.index.matches.get(sig, [])

    def shell_values(self) -> dict[str, str | None]:
        """What the bundle tells of the node and the failing pod, for commands ($NODE, ...)."""
        pod = self.facts.value("pod.name")
        return {
            "NODE": self.name,
            "POD": pod,
            "POD_NS": self.facts.value("pod.namespace") or ("default" if pod else None),
        }

    def count(self, sig: str) -> int:
        return self.index.count(sig)

    def absence_known(self, sig: str, kinds: frozenset[str] = frozenset()) -> bool:
        return self.index.absence_known(sig, kinds)

    def sources(self, sig: str, kinds: frozenset[str] = frozenset()) -> frozenset[str]:
        return self.index.sources(sig, kinds)

    def kind_matches(self, kind: str, kinds: frozenset[str]) -> bool:
        return self.index.kind_matches(kind, kinds)

    def meaning(self, sig: str) -> str:
        s = self.index.signatures[sig]
        return s.meaning.split(". ")[0] if s.meaning else s.pattern


_SECTION_FIELDS = {
    "labels": "labels",
    "taints": "taints",
    "capacity": "capacity",
    "allocatable": "allocatable",
    "allocated": "allocated",
    "conditions": "conditions",
    "images": "images",
    "spec": "unschedulable",
}


def _merge_fragments(nodes: list[NodeFacts]) -> list[NodeFacts]:
    """Pieces without a node name (annotations pasted on their own, a describe cut to its
    Capacity block) belong to the one node of the bundle, or are it. A section the node already
    shows wins over a later piece's: the first paste is the state the issue describes."""
    named = [n for n in nodes if n.name and n.form != "fragment"]
    pieces = [n for n in nodes if not (n.name and n.form != "fragment")]
    if not pieces or len(named) > 1:
        return named or nodes
    target = named[0] if named else pieces.pop(0)
    for piece in pieces:
        for k, v in piece.annotations.items():
            target.annotations.setdefault(k, v)
        if "annotations" in piece.sections:
            target.elided |= piece.elided
        for section in piece.sections - target.sections:
            if section in _SECTION_FIELDS:
                attr = _SECTION_FIELDS[section]
                setattr(target, attr, getattr(piece, attr))
        for k, line in piece.line_of.items():
            if k not in target.line_of:
                target.line_of[k] = line
                target.file_of[k] = piece.file_of.get(k, piece.file)
        target.sections = target.sections | piece.sections
    return [target]


def _clock(
    bundle: ParsedBundle, nodes: list[NodeFacts], decoded: dict[int, dict[str, Handshake]]
) -> Clock:
    beats: list[tuple[dt.datetime, str]] = []
    for n in nodes:
        for c in n.conditions:
            t = parse_time(c.get("lastHeartbeatTime"))
            if t:
                beats.append((t, f"node {n.name} condition heartbeat"))
        for k, hs in decoded.get(id(n), {}).items():
            if hs.time:
                beats.append((hs.time, f"handshake annotation {k}"))
    stamps: list[tuple[dt.datetime, str]] = []
    for log in bundle.logs:
        if "rfc" in log.frame.columns:
            rfc = log.frame["rfc"].drop_nulls()
            t = parse_time(rfc[-1]) if len(rfc) else None
            if t:
                stamps.append((t, f"kubectl --timestamps prefix in {log.artefact.file.name}"))
    klog = any(log.stats.klog_lines for log in bundle.logs)
    stated = next(
        ((m.collected_at, m.file) for m in bundle.manifests if m.collected_at is not None), None
    )
    return infer_clock(beats, stamps, bundle.member_mtimes, klog, stated)


@dataclass(frozen=True)
class FactInputs:
    """The parts of the rule set the facts stage needs (not the rules themselves)."""

    signatures: dict[str, Signature]
    catalogue: Catalogue
    annotations: AnnotationSpec


def build_contexts(
    bundle: ParsedBundle, inputs: FactInputs, node_name: str | None = None
) -> list[NodeContext]:
    nodes = _merge_fragments(list(bundle.nodes))
    spec = inputs.annotations
    decoded = {id(n): handshake_facts.decode_all(n, spec) for n in nodes}
    clock = _clock(bundle, nodes, decoded)
    stamp_logs(bundle.logs, clock)
    index = collect_matches(
        bundle.logs,
        bundle.kinds,
        inputs.signatures,
        inputs.catalogue,
    )
    names = {n.name for n in nodes if n.name}
    targets: list[NodeFacts | None] = list(nodes)
    if node_name:
        targets = [n for n in nodes if n.name == node_name]
        if not targets:
            known = ", ".join(sorted(names)) or "none"
            raise NodeNotFound(f"--node {node_name}: no such node in the bundle (nodes: {known})")
    if not targets:
        targets = [None]
    return [
        _context(bundle, inputs, n, clock, index, names, decoded.get(id(n), {})) for n in targets
    ]


def _guess_name(index: SignatureIndex, bundle: ParsedBundle) -> str | None:
    """Without a Node object: the node a device-plugin log says it works on, or the failing pod's."""
    for a in index.artefacts:
        if a.node:
            return a.node
    for p in bundle.pods:
        for v in (p.node, p.annotations.get("hami.io/vgpu-node")):
            if v and v not in ("<none>", ""):
                return v.split("/")[0]
    return None


# A HAMi log line can print a node's devices: `register` captures the annotation's value as the
# plugin writes it (it dates the plugin like the annotation does), `devices` an internal struct
# dump in the same JSON shape (used only when no `register` line is there, never for dating).
DEVICE_CAPTURES = ("register", "devices")


def _register_from_logs(index: SignatureIndex, node: str | None) -> Match | None:
    """The latest register value a HAMi log printed for this node: annotation values before
    struct dumps, the plugin's own before the scheduler's.

    Without a node name, only when every such line is about one and the same node: a scheduler
    log prints the devices of all nodes of the cluster."""
    best: Match | None = None
    best_rank: tuple = ()
    named: set[str] = set()
    for sid, ms in index.matches.items():
        sig = index.signatures[sid]
        cap = next((c for c in DEVICE_CAPTURES if c in sig.compiled.groupindex), None)
        if cap is None:
            continue
        for m in ms:
            if not m.captures.get(cap):
                continue
            if sig.node_capture:
                named.add(m.captures.get(sig.node_capture) or "")
            rank = (cap == "register", m.kind == "device-plugin-log", m.line)
            if best is None or rank > best_rank:
                best, best_rank = m, rank
    if node is None and len(named) > 1:
        return None
    return best


def _context(bundle, inputs: FactInputs, node, clock, index, names, decoded) -> NodeContext:
    name = node.name if node is not None and node.name else None
    view = index.for_node(name, names)
    name = name or _guess_name(view, bundle)
    from_log = _register_from_logs(view, name)
    if name is None and from_log is not None:  # the one node whose devices a HAMi log printed
        cap = inputs.signatures[from_log.sig].node_capture
        name = (from_log.captures.get(cap) if cap else None) or None
    facts = FactSet()
    src = Sources(
        bundle, inputs, node, name, view, clock, decoded, from_log, bundle.logs, bundle.configs
    )
    producers.run(producers.ORDER, src, facts)
    made = src.made
    return NodeContext(
        name,
        node,
        facts,
        view,
        clock,
        made["register"],
        made["handshake"],
        made["version"],
        made["components"],
    )
