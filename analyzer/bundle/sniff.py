"""Recognise what a piece of text is, by content only (users rename and mix files)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from analyzer.bundle.text import KLOG_RE, PREFIX_RE
from analyzer.rules.sources import Source

_K8S_KIND_RE = re.compile(r'(?m)^\s*"?kind"?\s*:\s*"?([A-Za-z]+)"?\s*,?\s*$')
_LIST_ITEM_NODE_RE = re.compile(r'(?m)^\s*(?:-\s+)?"?kind"?\s*:\s*"?Node"?')
_CHECKS: list[tuple[str, re.Pattern, str]] = [
    ("cdi-spec", re.compile(r'(?m)^\s*"?cdiVersion"?\s*:'), "has cdiVersion"),
    (
        "toolkit-config",
        re.compile(r"(?m)^\s*\[nvidia-container-(?:runtime|cli)(?:\.[a-z.]+)?\]"),
        "has [nvidia-container-runtime] / [nvidia-container-cli] tables",
    ),
    (
        "containerd-config",
        re.compile(r'(?m)^\s*\[plugins\.?"?io\.containerd|^\s*\[plugins\]'),
        "has containerd [plugins] tables",
    ),
    (
        "nvidia-smi",
        re.compile(r"(?m)NVIDIA-SMI \d|^Attached GPUs\s+:|^\s*GPU UUID\s+:"),
        "nvidia-smi banner or -q fields",
    ),
    (
        "pods-list",
        re.compile(r"(?m)^(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE"),
        "kubectl get pods table header",
    ),
]
_NODE_DESCRIBE_RE = re.compile(
    r"(?m)^(?:Roles|Taints|Capacity|Allocatable|System Info|Conditions):\s*"
)
_POD_DESCRIBE_RE = re.compile(
    r"(?m)^(?:Containers|Events|Runtime Class Name|Controlled By|QoS Class|Node-Selectors):"
    r"|^\s*Type\s+Reason\s+Age\s+From\s+Message"
    r"|^\s*(?:Warning|Normal)\s+\S+\s+\S+.*(?:scheduler|kubelet)"
    r"|hami\.io/(?:bind-phase|vgpu-devices-allocated|vgpu-node)\s*:"
)
_HELM_KEYS_RE = re.compile(
    r"(?m)^(?:devicePlugin|scheduler|devices|global|dcgmExporter|resourceName|schedulerName):"
)


def sniff(text: str, sources: Mapping[str, Source]) -> tuple[str, str]:
    """Return (kind, reason) for a text; kind 'text' when nothing is recognised."""
    head = text[:200_000]
    if not head.strip():
        return "empty", "empty or only white space"
    kinds = _K8S_KIND_RE.findall(head)
    if not kinds and head.lstrip().startswith("{"):
        kinds = re.findall(r'"?\bkind"?\s*:\s*"?([A-Za-z]+)', head)[:1]
    if kinds:
        first = kinds[0]
        if first == "Node":
            return "node", "Kubernetes object with kind: Node"
        if first == "List" and _LIST_ITEM_NODE_RE.search(head):
            return "node", "kind: List whose items are Nodes"
        if first == "Pod" or (first == "List" and "Pod" in kinds):
            return "pod", "Kubernetes object with kind: Pod"
        if first in (
            "RuntimeClass",
            "DaemonSet",
            "ConfigMap",
            "Deployment",
            "ResourceSlice",
            "DeviceClass",
        ):
            return first.lower(), f"Kubernetes object with kind: {first}"
    for kind, rx, reason in _CHECKS:
        if rx.search(head):
            return kind, reason
    if re.search(r"(?m)^Name:\s+\S", head) and _NODE_DESCRIBE_RE.search(head):
        if not re.search(r"(?m)^(?:Containers|Namespace):", head):
            return "node-describe", "kubectl describe node output"
    if re.search(r"(?m)^Capacity:\s*$", head) and re.search(r"(?m)^Allocatable:\s*$", head):
        return "node-describe", "Capacity/Allocatable blocks of kubectl describe node"
    log_kind = _sniff_log(head, sources)
    if log_kind:
        return log_kind
    if _POD_DESCRIBE_RE.search(head):
        return (
            "pod-describe",
            "kubectl describe pod output (fields, events or HAMi pod annotations)",
        )
    if len(_HELM_KEYS_RE.findall(head)) >= 2 or re.search(
        r"(?m)^\s+(?:deviceSplitCount|nvidiaNodeSelector|runtimeClassName):", head
    ):
        if not re.search(r"(?m)^(?:apiVersion|kind):", head):
            return "helm-values", "YAML with HAMi chart keys (devicePlugin/scheduler/devices)"
    return "text", "no Kubernetes object, config or known log markers found"


def _sniff_log(head: str, sources: Mapping[str, Source]) -> tuple[str, str] | None:
    lines = head.splitlines()[:3000]
    log_sources = [s for s in sources.values() if s.is_log and s.marker is not None]
    klog = 0
    scores: dict[str, int] = {}
    for raw in lines:
        line = raw[PREFIX_RE.match(raw).end() :]
        if KLOG_RE.match(line):
            klog += 1
        for src in log_sources:
            if src.marker.search(line):
                scores[src.id] = scores.get(src.id, 0) + 1
    if scores:
        best = max(sorted(scores), key=lambda k: scores[k])
        return best, f"{scores[best]} line(s) match {best} markers ({klog} klog lines)"
    if klog:
        return "klog", f"{klog} klog lines from an unknown component"
    return None
