"""Bundle -> parsed artefacts (one pass over every file). Later stages never re-read files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from analyzer.bundle.model import Inventory
from analyzer.bundle.reader import Limits, open_bundle
from analyzer.bundle.recognise import recognise
from analyzer.parse.configs import ConfigFacts, parse_config
from analyzer.parse.logs import Matcher, ParsedLog, parse_log
from analyzer.parse.node import NodeFacts, parse_node
from analyzer.parse.pod import PodFacts, parse_pod
from analyzer.rules.model import RuleSet

CONFIG_KINDS = {
    "helm-values",
    "toolkit-config",
    "containerd-config",
    "cdi-spec",
    "runtimeclass",
    "daemonset",
    "configmap",
    "deployment",
    "resourceslice",
    "deviceclass",
}
NOT_TEXT = {"binary", "empty", "unreadable", "unrecognised", "node"} | CONFIG_KINDS


@dataclass
class ParsedBundle:
    inventory: Inventory
    nodes: list[NodeFacts] = field(default_factory=list)
    pods: list[PodFacts] = field(default_factory=list)
    configs: list[ConfigFacts] = field(default_factory=list)
    logs: list[ParsedLog] = field(default_factory=list)  # every line-oriented artefact
    member_mtimes: list[float] = field(default_factory=list)
    digest: str = ""  # of the file names and fingerprints: the same bundle gives the same digest


def parse_bundle(inputs: list[str], ruleset: RuleSet, limits: Limits | None = None) -> ParsedBundle:
    with open_bundle(inputs, limits) as reader:
        return parse_files(reader, ruleset)


def parse_files(reader, ruleset: RuleSet) -> ParsedBundle:
    inv = reader.inventory
    artefacts = recognise(inv.files, ruleset.sources, inv)
    out = ParsedBundle(inv)
    out.member_mtimes = [f.mtime for f in inv.files if f.mtime and "!" in f.name]
    h = hashlib.sha256()
    for f in sorted(inv.files, key=lambda f: f.fingerprint):
        h.update(f.fingerprint.encode())
    out.digest = h.hexdigest()
    for a in artefacts:
        if a.kind in ("node", "node-describe"):
            nodes = parse_node(a)
            out.nodes.extend(nodes)
            spec = ruleset.annotations
            for n in nodes:
                inv.warnings.extend(f"{a.file.name}: {w}" for w in n.warnings)
                n.handshakes = {
                    k: spec.decode_handshake(k, v)
                    for k, v in n.annotations.items()
                    if spec.handshake_vendor(k)
                }
        elif a.kind in ("pod", "pod-describe"):
            pods = parse_pod(a)
            out.pods.extend(p for p in pods if p.name or p.annotations or p.events or p.containers)
            for p in pods:
                inv.warnings.extend(f"{a.file.name}: {w}" for w in p.warnings)
        elif a.kind in CONFIG_KINDS:
            cf = parse_config(a)
            out.configs.append(cf)
            inv.warnings.extend(f"{a.file.name}: {w}" for w in cf.warnings)
        if a.kind not in NOT_TEXT:
            out.logs.append(parse_log(a, _matcher(ruleset, a.kind)))
    return out


_MATCHERS: dict[tuple[int, str], tuple[RuleSet, Matcher]] = {}


def _matcher(ruleset: RuleSet, kind: str) -> Matcher:
    """The signatures that apply to one artefact kind, built once per rule set and process (a
    batch worker analyses thousands of bundles with the same rules)."""
    key = (id(ruleset), kind)
    hit = _MATCHERS.get(key)
    if hit is None or hit[0] is not ruleset:
        chosen = [s for s in ruleset.signatures.values() if _applies(s.sources, kind)]
        matcher = Matcher(
            [(s.id, s.pattern) for s in chosen],
            {s.id: list(s.prefilter) or None for s in chosen},
            {s.id: s.compiled for s in chosen},
        )
        if len(_MATCHERS) > 64:
            _MATCHERS.clear()
        hit = _MATCHERS[key] = (ruleset, matcher)  # the rule set is held so its id stays its own
    return hit[1]


def _applies(sources: tuple[str, ...], kind: str) -> bool:
    if kind in sources:
        return True
    if "text" in sources:
        return True  # text signatures (error messages) are looked for in every textual artefact
    return kind == "klog" and any(s.endswith("-log") for s in sources)
