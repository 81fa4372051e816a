"""Pod facts from `kubectl describe pod` or the Pod object: where it is bound, which scheduler
and runtime class it names, its HAMi annotations, limits, events and container reasons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.facts.model import FactSet, Where

if TYPE_CHECKING:  # imported when a bundle holds their kinds (parse/registry.py)
    from analyzer.parse.pod import PodFacts

_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9}  # kubectl describe prints 40000 as 40k
GPU = "nvidia.com/gpu"


def _number(v: str):
    """`"3000"` -> 3000, `40k` (kubectl describe's form of 40000) -> 40000; other quantities
    (500m, 1Gi) stay strings.

    >>> _number("3000"), _number("40k"), _number("500m"), _number("1Gi")
    (3000, 40000, '500m', '1Gi')
    """
    text = str(v).strip().strip('"')
    scale = _DECIMAL.get(text[-1:], 1)
    try:
        return int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        return v


VGPU_COUNTS = (GPU, "volcano.sh/vgpu-number")  # vGPUs of one container, each on its own card


def _gpus(c, name: str = GPU) -> int | None:
    """A GPU count a container asks for (an extended resource's limit, else its request)."""
    v = _number(c.limits.get(name, c.requests.get(name, 0)))
    return v if isinstance(v, int) else None


def _vgpus(c) -> int | None:
    """The vGPUs one container asks for under any scheduler's count resource.

    >>> from types import SimpleNamespace as C
    >>> _vgpus(C(limits={"volcano.sh/vgpu-number": "2"}, requests={}))
    2
    """
    counts = [n for n in (_gpus(c, name) for name in VGPU_COUNTS) if n is not None]
    return max(counts) if counts else None


def relevant(pods: list[PodFacts], node: str | None) -> list[PodFacts]:
    """The pods of a node: those bound to it (by spec or HAMi annotation), else every pod."""
    if node:
        mine = [p for p in pods if node in (p.node, p.annotations.get("hami.io/vgpu-node"))]
        if mine:
            return mine
    return pods


def produce(pods: list[PodFacts], facts: FactSet, node: str | None = None) -> None:
    """
    >>> from analyzer.dev.samples import pod
    >>> fs = FactSet()
    >>> produce([pod('kind: Pod\\nmetadata: {name: p}\\nspec:\\n  schedulerName: default-scheduler\\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: "3000"}}}]')], fs)
    >>> fs.value("pod.scheduler_name"), fs.value("pod.limits.nvidia.com/gpumem"), fs.lookup("pod.runtime_class").value
    ('default-scheduler', 3000, None)
    >>> fs = FactSet(); produce([pod('kind: Pod\\nmetadata: {name: p}\\nspec:\\n  containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1}}}, {name: b, resources: {requests: {nvidia.com/gpu: 2}}}, {name: c}]')], fs)
    >>> fs.value("pod.gpu_total"), fs.value("pod.gpu_per_container_max")
    (3, 2)
    >>> fs = FactSet(); produce([pod("Events:\\n  Warning  FailedScheduling  4m  default-scheduler  0/2 nodes are available", "pod-describe")], fs)
    >>> fs.value("pod.event_sources"), fs.lookup("pod.scheduler_name")
    (['default-scheduler'], UNKNOWN)
    """
    facts.put("pod.present", bool(pods))
    pods = relevant(pods, node)
    if not pods:
        return
    # a pod of the bundle before a workload's template (what the pod got, not what was asked)
    p = max(
        pods, key=lambda x: (x.owner is None, bool(x.name), len(x.sections), len(x.annotations))
    )
    at = Where(p.file, p.first_line)
    sections = set().union(*(x.sections for x in pods))
    if "header" in sections or p.form == "yaml":
        facts.mark_known("pod.name", "pod.namespace", "pod.status", "pod.node", "pod.runtime_class")
    if p.form == "yaml":
        facts.mark_known("pod.privileged_container", "pod.owner")
        if p.owner is None:  # a template's schedulerName is not its pods' (parse/pod.py)
            facts.mark_known("pod.scheduler_name")
        privileged = next((c.name for c in p.containers if c.privileged), None)
        if privileged is not None:
            facts.put("pod.privileged_container", privileged or "(unnamed)", at)
    if p.owner is not None:
        facts.put("pod.owner", p.owner, at)
    for path, v in (
        ("pod.name", p.name),
        ("pod.namespace", p.namespace),
        ("pod.status", p.status),
        ("pod.node", p.node if p.node not in ("<none>", "") else None),
        ("pod.scheduler_name", p.scheduler_name),
        ("pod.runtime_class", p.runtime_class),
    ):
        if v is not None:
            facts.put(path, v, at)
    if "annotations" in sections:
        facts.mark_known("pod.annotations.")
        for x in pods:
            for k, v in x.annotations.items():
                facts.put(f"pod.annotations.{k}", v, Where(x.file, x.line_of.get(k, x.first_line)))
    if "limits" in sections:
        facts.mark_known("pod.limits.")
        for x in pods:
            for c in x.containers:
                for k, v in c.limits.items():
                    facts.put(f"pod.limits.{k}", _number(v), Where(x.file, x.first_line))
        gpus = [n for n in (_gpus(c) for c in p.containers) if n is not None]
        vgpus = [n for n in (_vgpus(c) for c in p.containers) if n is not None]
        facts.put("pod.gpu_total", sum(gpus) if gpus else 0, at)
        facts.put("pod.gpu_per_container_max", max(vgpus) if vgpus else 0, at)
    if p.form == "yaml" or "containers" in sections:
        facts.mark_known("pod.env.")
        for x in pods:
            for c in x.containers:
                for k, v in c.env.items():
                    facts.put(f"pod.env.{k}", v, Where(x.file, x.first_line))
    if "events" in sections:
        events = [e for x in pods for e in x.events]
        first = Where(pods[0].file, events[0].line) if events else at
        facts.put("pod.event_sources", sorted({e.source for e in events}), first)
        facts.put("pod.event_reasons", sorted({e.reason for e in events}), first)
    if "containers" in sections:
        reasons = {r for x in pods for c in x.containers for r in (c.reason, c.last_reason) if r}
        facts.put("pod.container_reasons", sorted(reasons), at)
