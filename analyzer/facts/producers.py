"""The fact producers of one node, each declaring what it reads and what it writes, run in an
order derived from those declarations (a producer runs after every producer whose writes it
reads). A read nobody writes, or a cycle, is an error when this module loads, and every fact of
analyzer/facts/registry.py must be written by the producer it names.

Reads and writes are fact paths or prefixes ending in "." (`node.`, `register.text`), and
`@name` for a product other producers or the context take as an object (`@register`, the decoded
register annotation). Adding a producer is one function and one row of PRODUCERS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analyzer.errors import AnalyzerError
from analyzer.facts import config as config_facts
from analyzer.facts import fitsummary as fit_facts
from analyzer.facts import hamicore as hamicore_facts
from analyzer.facts import handshake as handshake_facts
from analyzer.facts import lease as lease_facts
from analyzer.facts import logs as log_facts
from analyzer.facts import namespace as namespace_facts
from analyzer.facts import node as node_facts
from analyzer.facts import panics as panic_facts
from analyzer.facts import pod as pod_facts
from analyzer.facts import register as register_facts
from analyzer.facts import runtime as runtime_facts
from analyzer.facts import selector as selector_facts
from analyzer.facts import smi as smi_facts
from analyzer.facts import stated as stated_facts
from analyzer.facts import version as version_facts
from analyzer.facts import workloads as workload_facts
from analyzer.facts.model import FactSet, Match
from analyzer.facts.registry import FACTS

if TYPE_CHECKING:
    from analyzer.catalogue.kinds import Catalogue
    from analyzer.catalogue.signatures import Signature
    from analyzer.facts.clock import Clock
    from analyzer.facts.matches import SignatureIndex
    from analyzer.parse.annotations import AnnotationSpec, Handshake
    from analyzer.parse.configs import ConfigFacts
    from analyzer.parse.logs import ParsedLog
    from analyzer.parse.node import NodeFacts
    from analyzer.pipeline import ParsedBundle


class ProducerGraphError(AnalyzerError):
    """The producers' declarations do not make an order: a cycle, or a read nobody writes."""


@dataclass(frozen=True)
class FactInputs:
    """The parts of the rule set the facts stage needs (not the rules themselves)."""

    signatures: dict[str, Signature]
    catalogue: Catalogue
    annotations: AnnotationSpec


@dataclass
class Sources:
    """What the producers of one node read besides facts, and the products they hand on."""

    bundle: ParsedBundle
    inputs: FactInputs
    node: NodeFacts | None
    name: str | None
    view: SignatureIndex
    clock: Clock
    decoded: dict[str, Handshake]
    from_log: Match | None
    logs: list[ParsedLog]  # the logs this node's facts come from
    configs: list[ConfigFacts]  # the configs this node's facts come from
    made: dict[str, Any] = field(default_factory=dict)  # `@name` products by name


@dataclass(frozen=True)
class Producer:
    """A facts producer: the facts it reads and writes, and the function that does it."""

    name: str  # the `producer` of its facts in analyzer/facts/registry.py
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    run: Callable[[Sources, FactSet], dict[str, Any] | None]  # returns its `@` products


def _bundle(src: Sources, facts: FactSet) -> None:
    facts.put("bundle.kinds", sorted(src.view.present))
    facts.put("bundle.node_count", sum(1 for n in src.bundle.nodes if n.form != "fragment"))


def _clock(src: Sources, facts: FactSet) -> None:
    facts.put("bundle.collected_at", src.clock.collected_at)


def _node(src: Sources, facts: FactSet) -> None:
    node_facts.produce(src.node, facts, src.name)


def _register(src: Sources, facts: FactSet) -> dict[str, Any]:
    spec = src.inputs.annotations
    return {"register": register_facts.produce(src.node, spec, facts, src.from_log)}


def _handshake(src: Sources, facts: FactSet) -> dict[str, Any]:
    spec = src.inputs.annotations
    hs = handshake_facts.produce(src.node, src.decoded, spec, facts, src.clock.collected_at)
    return {"handshake": hs}


def _pod(src: Sources, facts: FactSet) -> None:
    pod_facts.produce(src.bundle.pods, facts, src.name)


def _config(src: Sources, facts: FactSet) -> None:
    config_facts.produce(src.configs, facts)
    config_facts.produce_skew(facts)


def _runtime(src: Sources, facts: FactSet) -> None:
    runtime_facts.produce(src.configs, facts)


def _lease(src: Sources, facts: FactSet) -> None:
    lease_facts.produce(src.configs, facts)


def _selector(src: Sources, facts: FactSet) -> None:
    register = src.made["register"]
    selector_facts.produce(register.devices if register else [], facts)


def _smi(src: Sources, facts: FactSet) -> None:
    smi_facts.produce(src.logs, facts)


def _logs(src: Sources, facts: FactSet) -> None:
    log_facts.produce(src.logs, facts)


def _panic(src: Sources, facts: FactSet) -> None:
    panic_facts.produce(src.view, facts)


def _workloads(src: Sources, facts: FactSet) -> None:
    workload_facts.produce(src.logs, facts)


def _namespace(src: Sources, facts: FactSet) -> None:
    b = src.bundle
    hami = src.inputs.catalogue.hami
    namespace_facts.produce(b.manifests, src.configs, b.pods, b.pod_tables, hami, facts)


def _scheduling(src: Sources, facts: FactSet) -> None:
    fit_facts.produce(src.view, facts)


def _stated(src: Sources, facts: FactSet) -> None:
    stated_facts.produce(src.view, facts)


def _hamicore(src: Sources, facts: FactSet) -> None:
    hamicore_facts.produce(src.logs, facts)
    hamicore_facts.produce_card_memory(src.view, facts)


def _version(src: Sources, facts: FactSet) -> dict[str, Any]:
    register, handshake, from_log = src.made["register"], src.made["handshake"], src.from_log
    # the annotation's encoding dates HAMi; a struct dump (`devices`) does not
    dated = facts.value("register.from") == "annotation" or (
        from_log is not None and bool(from_log.captures.get("register"))
    )
    reg_where = str(facts.where("register.text")) if register and dated else None
    hs_where = str(facts.where("handshake.value")) if handshake else None
    version, components = version_facts.infer(
        register,
        reg_where,
        handshake,
        hs_where,
        src.view.matches,
        src.inputs.signatures,
        src.node.images if src.node is not None else [],
        version_facts.hami_helm_tags(facts),
        src.inputs.catalogue.hami,
    )
    version_facts.produce(version, components, facts)
    return {"version": version, "components": components}


# In the order they ran when it was written by hand: ties in the derived order keep it.
PRODUCERS: tuple[Producer, ...] = (
    Producer("bundle", (), ("bundle.kinds", "bundle.node_count"), _bundle),
    Producer("clock", (), ("bundle.collected_at",), _clock),
    Producer("node", (), ("node.",), _node),
    Producer("register", ("node.allocatable.gpu",), ("register.", "@register"), _register),
    Producer("handshake", ("bundle.collected_at",), ("handshake.", "@handshake"), _handshake),
    Producer("pod", (), ("pod.",), _pod),
    Producer("config", ("node.kubelet_version",), ("config.", "helm."), _config),
    Producer("runtime", (), ("cdi.", "toolkit.", "containerd.", "docker."), _runtime),
    Producer("lease", (), ("lease.",), _lease),
    Producer(
        "selector", ("pod.annotations.", "@register"), ("pod.selector_matching_cards",), _selector
    ),
    Producer("smi", (), ("nvidia_smi.",), _smi),
    Producer("logs", (), ("logs.",), _logs),
    Producer("panic", (), ("panic.", "served_panic."), _panic),
    Producer("workloads", (), ("device_plugin_ds.", "device_plugin_pods."), _workloads),
    Producer("namespace", (), ("hami.namespace", "hami.namespace_from"), _namespace),
    Producer("stated", (), ("stated.",), _stated),
    Producer("scheduling", (), ("scheduling.",), _scheduling),
    Producer("hamicore", (), ("hami_core.",), _hamicore),
    Producer(
        "version",
        ("@register", "@handshake", "register.from", "register.text", "handshake.value", "config."),
        ("version.", "@version", "@components"),
        _version,
    ),
)


def _overlaps(read: str, write: str) -> bool:
    """Whether a read may see what a write makes: one is the other or a prefix of it."""
    if read.startswith("@") or write.startswith("@"):
        return read == write
    return (
        read == write
        or (write.endswith(".") and read.startswith(write))
        or (read.endswith(".") and write.startswith(read))
    )


def ordered(producers: tuple[Producer, ...]) -> tuple[Producer, ...]:
    """The producers, each after every producer whose writes it reads; among those ready, the
    first in the table runs first. A read that no other producer writes, or a cycle, is an error."""
    problems: list[str] = []
    after: dict[str, set[str]] = {}
    for p in producers:
        after[p.name] = set()
        for r in p.reads:
            writers = {
                q.name for q in producers if q is not p and any(_overlaps(r, w) for w in q.writes)
            }
            if not writers:
                problems.append(f"producer {p.name} reads {r!r}, which no producer writes")
            after[p.name] |= writers
    out: list[Producer] = []
    left = list(producers)
    while left:
        ready = next((p for p in left if after[p.name] <= {q.name for q in out}), None)
        if ready is None:
            cycle = ", ".join(f"{p.name} (after {', '.join(sorted(after[p.name]))})" for p in left)
            problems.append(f"the producers' reads and writes make a cycle: {cycle}")
            break
        out.append(ready)
        left.remove(ready)
    if problems:
        raise ProducerGraphError("; ".join(problems))
    return tuple(out)


def check_registry(producers: tuple[Producer, ...]) -> list[str]:
    """Facts of analyzer/facts/registry.py whose named producer does not exist or does not
    declare that it writes them."""
    by_name = {p.name: p for p in producers}
    problems = []
    for f in FACTS:
        p = by_name.get(f.producer)
        path = f.path[:-1] if f.family else f.path  # `node.labels.*` -> `node.labels.`
        if p is None:
            problems.append(f"fact {f.path}: producer {f.producer!r} does not exist")
        elif not any(_overlaps(path, w) for w in p.writes):
            problems.append(f"fact {f.path}: producer {f.producer} does not declare writing it")
    return problems


def run(producers: tuple[Producer, ...], src: Sources, facts: FactSet) -> None:
    """Run the producers in order; each hands on only the products it declared."""
    for p in producers:
        made = p.run(src, facts) or {}
        undeclared = {f"@{k}" for k in made} - set(p.writes)
        if undeclared:
            raise ProducerGraphError(f"producer {p.name} made undeclared {sorted(undeclared)}")
        src.made.update(made)


ORDER = ordered(PRODUCERS)
_UNCOVERED = check_registry(PRODUCERS)
if _UNCOVERED:
    raise ProducerGraphError("; ".join(_UNCOVERED))
