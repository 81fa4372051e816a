"""Node facts: labels, annotations, taints, allocatable, readiness, from the Node object or
`kubectl describe node` (a describe fragment tells only the sections it shows)."""

from __future__ import annotations

import re

from analyzer.facts.model import FactSet, Where
from analyzer.parse.node import NodeFacts

_SECTION_PATHS = {
    "labels": ("node.labels.", "node.label_managers."),
    "annotations": ("node.annotations.", "node.hami_annotation_keys"),
    "taints": ("node.taints", "node.taint_keys"),
    "capacity": ("node.capacity.", "node.capacity_gpu_resources"),
    "allocatable": ("node.allocatable.",),
    "allocated": ("node.allocated.",),
    "conditions": ("node.ready", "node.ready_message"),
    "spec": ("node.unschedulable",),
    "system": (
        "node.kubelet_version",
        "node.os_image",
        "node.container_runtime",
        "node.kernel_version",
        "node.architecture",
    ),
}


# GPUs and the accelerators HAMi shares beside them: Ascend NPUs (huawei.com/Ascend910B4-1),
# Hygon DCUs (hygon.com/dcunum), Cambricon MLUs, Enflame GCUs, Kunlunxin XPUs, AWS Neuron, and
# every resource of the accelerator vendors' own domains, whose names may say neither (HAMi's
# device ConfigMap and values: iluvatar.ai/BI-V150.vCore, enflame.com/drs-gcu,
# cambricon.com/mlu.smlu.vmemory, kunlunxin.com/vxpu-memory, MetaX's, Mthreads', Vastai's, Biren's)
GPU_RESOURCE_RE = re.compile(
    r"gpu|/mig-|huawei\.com/ascend|/(?:v?npu|dcu\w*|v?mlu\w*|v?gcu\w*|v?xpu\w*)$|neuron"
    r"|^(?:iluvatar\.ai|metax-tech\.com|mthreads\.com|vastaitech\.com|birentech\.com|enflame\.com"
    r"|cambricon\.com|kunlunxin\.com|hygon\.com)/",
    re.I,
)


def gpu_resources(resources: dict[str, str]) -> list[str]:
    """The GPU-like extended resources a node lists (nvidia.com/gpu, MIG profiles, the legacy
    alpha.kubernetes.io/nvidia-gpu, other vendors' GPUs and accelerators); cpu, memory, pods
    and hugepages are not.

    >>> gpu_resources({"cpu": "8", "nvidia.com/gpu": "8", "alpha.kubernetes.io/nvidia-gpu": "0"})
    ['alpha.kubernetes.io/nvidia-gpu', 'nvidia.com/gpu']
    >>> gpu_resources({"huawei.com/Ascend910B4-1": "32", "hygon.com/dcunum": "4", "hugepages-2Mi": "0"})
    ['huawei.com/Ascend910B4-1', 'hygon.com/dcunum']
    >>> gpu_resources({"iluvatar.ai/BI-V150.vCore": "1600", "example.com/iluvatar.ai": "1",
    ...     "enflame.com/drs-gcu": "8", "cambricon.com/mlu.smlu.vmemory": "64"})
    ['cambricon.com/mlu.smlu.vmemory', 'enflame.com/drs-gcu', 'iluvatar.ai/BI-V150.vCore']
    """
    return sorted(r for r in resources if GPU_RESOURCE_RE.search(r))


def _positive(quantity: str) -> bool:
    """A resource count above 0 (a count the kubelet prints is a whole number)."""
    return str(quantity).strip().isdigit() and int(str(quantity).strip()) > 0


def gpu_count(resources: dict[str, str], name: str = "nvidia.com/gpu") -> int | None:
    """Allocatable nvidia.com/gpu as an int; 0 when the resource is not listed.

    >>> gpu_count({"nvidia.com/gpu": "10"}), gpu_count({"cpu": "8"}), gpu_count({"nvidia.com/gpu": "x"})
    (10, 0, None)
    """
    v = resources.get(name)
    if v is None:
        return 0
    try:
        return int(str(v).strip())
    except ValueError:
        return None


def section_key(values: dict[str, str]) -> str | None:
    """A key to cite for a whole Capacity block: its first resource."""
    return f"capacity.{next(iter(values))}" if values else None


def produce(node: NodeFacts | None, facts: FactSet, name: str | None = None) -> None:
    """
    >>> from analyzer.dev.samples import node
    >>> fs = FactSet()
    >>> produce(node('kind: Node\\nmetadata: {name: n1, labels: {gpu: "on"}}\\nstatus: {allocatable: {nvidia.com/gpu: "10"}}'), fs)
    >>> fs.value("node.labels.gpu"), fs.value("node.allocatable.gpu"), fs.lookup("node.labels.other").value
    ('on', 10, None)
    >>> fs = FactSet(); produce(node("Capacity:\\n  nvidia.com/gpu: 0\\nAllocatable:\\n  nvidia.com/gpu: 0", "node-describe"), fs)
    >>> fs.value("node.allocatable.gpu"), fs.lookup("node.labels.gpu"), fs.lookup("node.allocated.gpu")
    (0, UNKNOWN, UNKNOWN)
    >>> fs = FactSet(); produce(node("Allocated resources:\\n  Resource        Requests    Limits\\n  --------        --------    ------\\n  cpu             950m (5%)   100m (0%)\\n  nvidia.com/gpu  1           1", "node-describe"), fs)
    >>> fs.value("node.allocated.gpu"), fs.value("node.allocated.cpu"), str(fs.where("node.allocated.gpu"))
    (1, '950m', 'node.yaml:5')
    >>> fs.lookup("node.free_gpu_slots")  # allocatable not shown
    UNKNOWN
    """
    facts.put("node.present", node is not None)
    facts.put("node.name", (node.name if node is not None and node.name else None) or name)
    if node is None:
        return

    def at(key: str | None = None) -> Where:
        return Where(*node.source_of(key))

    facts.put("node.form", node.form, at())
    for section in node.sections:
        facts.mark_known(*_SECTION_PATHS.get(section, ()))
    shown = node.shown
    if "labels" in shown:
        for k, v in node.labels.items():
            facts.put(f"node.labels.{k}", v, at(f"label.{k}"))
        for k, managers in node.label_managers.items():
            facts.put(
                f"node.label_managers.{k}", ", ".join(sorted(set(managers))), at(f"label.{k}")
            )
    if "annotations" in shown:
        for k, v in node.annotations.items():
            facts.put(f"node.annotations.{k}", v, at(k))
    if "annotations" in node.sections:
        keys = sorted(k for k in node.annotations if k.startswith(("hami.io/", "4pd.io/")))
        facts.put("node.hami_annotation_keys", keys, at())
    if "taints" in node.sections:
        facts.put("node.taints", node.taints, at("taints"))
        blocking = {
            t.get("key", "") for t in node.taints if t.get("effect") in ("NoSchedule", "NoExecute")
        }
        facts.put("node.taint_keys", sorted(blocking), at("taints"))
    if "spec" in node.sections:
        facts.put("node.unschedulable", node.unschedulable, at())
    if "system" in node.sections:
        for path, key in (
            ("node.kubelet_version", "kubeletVersion"),
            ("node.os_image", "osImage"),
            ("node.container_runtime", "containerRuntimeVersion"),
            ("node.kernel_version", "kernelVersion"),
            ("node.architecture", "architecture"),
        ):
            if node.node_info.get(key):
                facts.put(path, str(node.node_info[key]), at())
    if "conditions" in node.sections:
        ready = next((c for c in node.conditions if c.get("type") == "Ready"), None)
        # "True" as kubectl prints it; an unquoted True in a hand-written node.yaml is YAML's bool,
        # which the loader hands over as "true"
        is_ready = None if ready is None else str(ready.get("status")).lower() == "true"
        facts.put("node.ready", is_ready, at("conditions"))
        why = " ".join(str((ready or {}).get(k) or "") for k in ("reason", "message")).strip()
        if is_ready is False and why:
            facts.put("node.ready_message", why, at("conditions"))
    for section, values in (("allocatable", node.allocatable), ("capacity", node.capacity)):
        if section not in shown:
            continue
        for res, v in values.items():
            facts.put(f"node.{section}.{res}", v, at(f"{section}.{res}"))
        if section in node.partial and "nvidia.com/gpu" not in values:
            continue  # the lines left out may list it
        facts.put(f"node.{section}.gpu", gpu_count(values), at(f"{section}.nvidia.com/gpu"))
        if section == "capacity" and section in node.sections:
            facts.put("node.capacity_gpu_resources", gpu_resources(values), at(section_key(values)))
            offered = [r for r in gpu_resources(values) if _positive(values[r])]
            facts.put("node.capacity_gpu_resources_offered", offered, at(section_key(values)))
    if {"allocatable", "capacity"} <= node.sections:
        total, healthy = gpu_count(node.capacity), gpu_count(node.allocatable)
        if total is not None and healthy is not None:
            facts.put("node.unhealthy_gpu_slots", total - healthy, at("allocatable.nvidia.com/gpu"))
    if "allocated" in node.sections:
        for res, v in node.allocated.items():
            facts.put(f"node.allocated.{res}", v, at(f"allocated.{res}"))
        used = gpu_count(node.allocated)
        facts.put("node.allocated.gpu", used, at("allocated.nvidia.com/gpu"))
        total = gpu_count(node.allocatable) if "allocatable" in node.sections else None
        if used is not None and total is not None:
            facts.put("node.free_gpu_slots", total - used, at("allocated.nvidia.com/gpu"))
