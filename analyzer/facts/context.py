"""A parsed bundle -> one NodeContext per node: facts with provenance, the node's view of the
signature matches, clock and versions. The producers and their order are in
analyzer/facts/producers.py (each declares what it reads and writes)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

from analyzer.bundle.model import InputWarning
from analyzer.errors import AnalyzerError
from analyzer.facts import handshake as handshake_facts
from analyzer.facts import producers
from analyzer.facts.attribution import Attribution, attribute
from analyzer.facts.clock import Clock, infer_clock, stamp_logs
from analyzer.facts.matches import SignatureIndex, collect_matches
from analyzer.facts.model import FactSet, Match
from analyzer.facts.namespace import DEFAULT as DEFAULT_NAMESPACE
from analyzer.facts.producers import FactInputs, Sources
from analyzer.parse.annotations import Handshake, RegisterAnnotation
from analyzer.parse.logs import ParsedLog
from analyzer.parse.node import NodeFacts
from analyzer.parse.times import parse_time
from analyzer.pipeline import ParsedBundle
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
    logs: tuple[ParsedLog, ...] = ()  # this node's logs (and the shared ones), clock applied
    collected: bool = False  # the bundle is `hami-analyzer collect`'s (it has its manifest)

    @property
    def collected_at(self) -> dt.datetime | None:
        return self.clock.collected_at

    def matches(self, sig: str) -> list[Match]:
        return self.index.matches.get(sig, [])

    def shell_values(self) -> dict[str, str | None]:
        """What the bundle tells of the node, the failing pod and HAMi's namespace, for commands
        ($NODE, ...): the namespace the bundle states, else the chart's usual one."""
        pod = self.facts.value("pod.name")
        return {
            "NODE": self.name,
            "POD": pod,
            "POD_NS": self.facts.value("pod.namespace") or ("default" if pod else None),
            "NS": self.facts.value("hami.namespace") or DEFAULT_NAMESPACE,
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
    shows wins over a later piece's: the first paste is the state the issue describes. The
    merged node is a new NodeFacts; the parsed pieces are left as they were."""
    named = [n for n in nodes if n.name and n.form != "fragment"]
    pieces = [n for n in nodes if not (n.name and n.form != "fragment")]
    if not pieces or len(named) > 1:
        return named or nodes
    first = named[0] if named else pieces.pop(0)
    annotations = dict(first.annotations)
    elided = set(first.elided)
    line_of = dict(first.line_of)
    file_of = dict(first.file_of)
    taken: dict[str, Any] = {}  # section fields a later piece shows and the first does not
    sections = first.sections
    partial = set(first.partial)
    for piece in pieces:
        for k, v in piece.annotations.items():
            annotations.setdefault(k, v)
        if "annotations" in piece.sections:
            elided |= piece.elided
        for section in piece.shown - sections - partial:
            if section in _SECTION_FIELDS:
                taken[_SECTION_FIELDS[section]] = getattr(piece, _SECTION_FIELDS[section])
            if section in piece.partial:
                partial.add(section)
        for k, line in piece.line_of.items():
            if k not in line_of:
                line_of[k] = line
                file_of[k] = piece.file_of.get(k, piece.file)
        sections = sections | piece.sections
    merged = replace(
        first,
        sections=sections,
        partial=frozenset(partial - sections),
        annotations=annotations,
        elided=elided,
        line_of=line_of,
        file_of=file_of,
    )
    return [replace(merged, **taken)]


def _clock(
    bundle: ParsedBundle, nodes: list[NodeFacts], decoded: dict[int, dict[str, Handshake]]
) -> Clock:
    """One clock for the bundle: every node's heartbeats and every log's dated prefixes."""
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
class BundleFacts:
    """What the facts stage returns: the nodes to diagnose in bundle order, what it tells the
    user about the inputs (logs it could attribute to no node), and each node's context, built
    from that node's attributed inputs when asked for (`timeline` builds only the one it prints)."""

    targets: tuple[NodeFacts | None, ...]
    warnings: tuple[InputWarning, ...]
    _bundle: ParsedBundle
    _inputs: FactInputs
    _shared: _Shared

    @property
    def names(self) -> tuple[str | None, ...]:
        """The nodes' names, in bundle order (None: a bundle without a named Node object)."""
        return tuple(n.name if n is not None else None for n in self.targets)

    @property
    def contexts(self) -> list[NodeContext]:
        return [self.context(n) for n in self.targets]

    def context(self, n: NodeFacts | None) -> NodeContext:
        """One node's context: the bundle's matches and inputs as that node sees them."""
        sh, bundle = self._shared, self._bundle
        name = n.name if n is not None else None
        excluded = sh.owners.excluded(name)
        held = {a.kind for a in bundle.artefacts if (a.file.name, a.first_line) not in excluded}
        view = sh.index.for_node(name, sh.names, excluded, held)
        mine = sh.owners.logs_of(sh.logs, name)
        configs = sh.owners.configs_of(bundle.configs, name)
        decoded = sh.decoded.get(id(n), {})
        return _context(bundle, self._inputs, n, sh.clock, view, mine, configs, decoded)


@dataclass(frozen=True)
class _Shared:
    """What every node's context starts from: built once per bundle."""

    names: set[str]
    clock: Clock
    logs: list[ParsedLog]
    index: SignatureIndex
    owners: Attribution
    decoded: dict[int, dict[str, Handshake]]


def build_contexts(
    bundle: ParsedBundle, inputs: FactInputs, node_name: str | None = None
) -> BundleFacts:
    """The bundle's facts: the clock, the signature matches and which node each log is about,
    once; the node contexts on demand. `node_name`: only that node (NodeNotFound otherwise)."""
    nodes = _merge_fragments(list(bundle.nodes))
    spec = inputs.annotations
    decoded = {id(n): handshake_facts.decode_all(n, spec) for n in nodes}
    clock = _clock(bundle, nodes, decoded)
    logs = stamp_logs(bundle.logs, clock)
    index = collect_matches(logs, bundle.kinds, inputs.signatures, inputs.catalogue)
    names = {n.name for n in nodes if n.name}
    stated = {(a.file, a.first_line): a.node for a in index.artefacts if a.node}
    owners = attribute(
        logs,
        bundle.configs,
        sorted(names),
        bundle.pods,
        bundle.pod_tables,
        stated,
        inputs.catalogue,
    )
    targets: list[NodeFacts | None] = list(nodes)
    if node_name:
        targets = [n for n in nodes if n.name == node_name]
        if not targets:
            known = ", ".join(sorted(names)) or "none"
            raise NodeNotFound(f"--node {node_name}: no such node in the bundle (nodes: {known})")
    if not targets:
        targets = [None]
    shared = _Shared(names, clock, logs, index, owners, decoded)
    return BundleFacts(tuple(targets), owners.warnings, bundle, inputs, shared)


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


def _context(bundle, inputs: FactInputs, node, clock, view, logs, configs, decoded) -> NodeContext:
    """One node's facts, from its view of the matches, its logs and configs (shared ones
    included)."""
    name = node.name if node is not None and node.name else None
    name = name or _guess_name(view, bundle)
    from_log = _register_from_logs(view, name)
    if name is None and from_log is not None:  # the one node whose devices a HAMi log printed
        cap = inputs.signatures[from_log.sig].node_capture
        name = (from_log.captures.get(cap) if cap else None) or None
    facts = FactSet()
    src = Sources(bundle, inputs, node, name, view, clock, decoded, from_log, logs, configs)
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
        tuple(logs),
        bool(bundle.manifests),
    )
