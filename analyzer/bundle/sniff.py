"""Recognise what a piece of text is, by content only (users rename and mix files).

Order matters: Kubernetes objects and configs first, then the structure of `kubectl describe`
and `kubectl get` output, and only then log markers, so that a pod describe whose init
container script echoes a log message stays a pod describe."""

from __future__ import annotations

import re

from analyzer.bundle.text import KLOG_RE, PREFIX_RE, SCRIPT_RE, diff_after_side
from analyzer.kinds import Catalogue

HEAD_CHARS = 200_000
_K8S_KIND_RE = re.compile(r'(?m)^\s*"?kind"?\s*:\s*"?([A-Za-z]+)"?\s*,?\s*$')
# a top-level `kind:` (column 0): kubectl sorts keys, so a List's own `kind: List` comes after
# its items, and an item's data may hold other objects' `kind:` lines (a scheduler config)
_TOP_KIND_RE = re.compile(r'(?m)^"?kind"?\s*:\s*"?([A-Za-z]+)"?\s*,?\s*$')
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
        "events",
        re.compile(r"(?m)^(?:NAMESPACE\s+)?LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE"),
        "kubectl get events table header",
    ),
    (
        "pods-list",
        re.compile(r"(?m)^(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE"),
        "kubectl get pods table header",
    ),
]
# `kubectl get pods [-A] [-o wide]` rows without their header (piped through grep)
_POD_ROW_RE = re.compile(
    r"(?m)^(?:[a-z0-9][\w.-]*\s+)?[a-z0-9][\w.-]*-[a-z0-9]{4,10}\s+\d+/\d+\s+"
    r"(?:Running|Pending|Completed|Init:\S+|CrashLoopBackOff|Error|ContainerCreating|"
    r"Terminating|ImagePullBackOff|ErrImagePull|PodInitializing|OOMKilled|Unknown|Evicted|"
    r"CreateContainerError|CreateContainerConfigError|RunContainerError|StartError)\s+\d+"
)
_NODE_DESCRIBE_RE = re.compile(
    r"(?m)^(?:Roles|Taints|Capacity|Allocatable|System Info|Conditions|Addresses|Unschedulable|ProviderID|PodCIDRs?):\s*"
)
# the sections a partial `kubectl describe node` paste may keep, in any subset
_NODE_SECTION_RE = re.compile(
    r"(?m)^(Labels|Taints|Capacity|Allocatable|Unschedulable|Conditions|Addresses|System Info"
    r"|Allocated resources|Non-terminated Pods):"
)
_RESOURCE_LINE_RE = re.compile(
    r"(?m)^\s+(?:cpu|memory|pods|ephemeral-storage|hugepages-\w+|[\w.-]+/[\w.-]+):\s+\d"
)
_POD_STRUCTURE_RE = re.compile(
    r"(?m)^(?:Containers|Events|Controlled By|QoS Class|Node-Selectors):"
)
_EVENTS_HEADER_RE = re.compile(r"(?m)^\s*Type\s+Reason\s+Age\s+From\s+Message")
# an event row of `kubectl describe` on its own: Type, Reason, Age (42s, 3m2s, 2m (x5 over 9m)), From
_EVENT_ROW_RE = re.compile(
    r"(?m)^\s*(?:Warning|Normal)\s+[A-Z][A-Za-z]+\s+(?:\d+[smhdy][\dsmhdy]*|<unknown>|<invalid>)"
    r"(?:\s+\(x\d+ over \S+\))?\s+[a-z][\w./-]*\s+\S"
)
# a Node's status pasted without apiVersion/kind/metadata: `allocatable:` / `capacity:` keys (any
# indentation) over resource quantities
_NODE_STATUS_RE = re.compile(
    r"(?m)^(?P<i>[ \t]*)(?:allocatable|capacity):[ \t]*\n(?P=i)[ \t]+"
    r"(?:cpu|memory|pods|ephemeral-storage|hugepages-\w+|[\w.-]+/[\w.-]+):[ \t]+\S"
)
_ALLOCATED_TABLE_RE = re.compile(r"(?m)^\s+Resource\s+Requests\s+Limits\s*$")
_POD_ANNOTATION_RE = re.compile(
    r"(?m)^\s*(?:Annotations:\s+)?(?:hami\.io/(?:bind-phase|bind-time|vgpu-devices-(?:allocated|to-allocate)|vgpu-node|vgpu-time)"
    r"|hami\.io/[\w-]+-devices-(?:allocated|to-allocate))\s*:"
)
_NODE_ANNOTATION_RE = re.compile(
    r"(?m)^\s*(?:Annotations:\s+|-\s+)?\"?(?:hami\.io|4pd\.io)/node-(?:handshake|[\w-]*register)[\w-]*\"?\s*:"
)
_REGISTER_VALUE_RE = re.compile(
    r'^\s*\[\s*\{\s*"id"\s*:\s*"GPU-[^"]*"\s*,\s*"(?:index|count|devmem)"'
    r"|^\s*GPU-[0-9a-fA-F.-]+,\d+,\d+,(?:\d+,)?NVIDIA-"
)
_HELM_KEYS_RE = re.compile(
    r"(?m)^(?:devicePlugin|scheduler|devices|global|dcgmExporter|resourceName|schedulerName):"
)


def sniff(text: str, catalogue: Catalogue) -> tuple[str, str]:
    """Return (kind, reason) for a text; kind 'text' when nothing is recognised."""
    head = text[:HEAD_CHARS]
    if not head.strip():
        return "empty", "empty or only white space"
    after = diff_after_side(head)
    if after is not None:
        kind, reason = sniff(after, catalogue)
        return kind, f"{reason} (a unified diff: read as the state after the change)"
    found = _object(head, catalogue)
    if found:
        return found
    for kind, rx, reason in _CHECKS:
        if rx.search(head):
            return kind, reason
    if _NODE_STATUS_RE.search(head):
        return "node", "Node status fragment (allocatable/capacity without apiVersion or kind)"
    if len(_POD_ROW_RE.findall(head)) >= 1 and not KLOG_RE.search(head):
        return "pods-list", "kubectl get pods rows (header cut by grep)"
    if re.search(r"(?m)^Name:\s+\S", head) and _NODE_DESCRIBE_RE.search(head):
        if not re.search(r"(?m)^(?:Containers|Namespace):", head):
            return "node-describe", "kubectl describe node output"
    if re.search(r"(?m)^\s*Capacity:\s*$", head) and re.search(r"(?m)^\s*Allocatable:\s*$", head):
        return "node-describe", "Capacity/Allocatable blocks of kubectl describe node"
    sections = set(_NODE_SECTION_RE.findall(head))
    if sections == {"Allocated resources"} and _ALLOCATED_TABLE_RE.search(head):
        return "node-describe", "the Allocated resources table of kubectl describe node"
    if not _POD_STRUCTURE_RE.search(head) and (
        len(sections & {"Taints", "Capacity", "Allocatable", "Unschedulable", "System Info"}) >= 1
        and (len(sections) >= 2 or _RESOURCE_LINE_RE.search(head))
    ):
        return "node-describe", f"sections of kubectl describe node ({', '.join(sorted(sections))})"
    if (re.search(r"(?m)^Name:\s+\S", head) and _POD_STRUCTURE_RE.search(head)) or (
        _EVENTS_HEADER_RE.search(head)
    ):
        return "pod-describe", "kubectl describe pod structure (fields or events table)"
    if _POD_ANNOTATION_RE.search(head):
        return "pod-describe", "HAMi pod annotations (describe or YAML fragment)"
    if _REGISTER_VALUE_RE.search(head):
        return "node-annotations", "a bare hami.io/node-nvidia-register value"
    if _NODE_ANNOTATION_RE.search(head) and not KLOG_RE.search(head):
        return "node-annotations", "HAMi node annotations pasted on their own"
    log_kind = _sniff_log(head, catalogue)
    if log_kind:
        return log_kind
    if _EVENT_ROW_RE.search(head):
        return "pod-describe", "kubectl describe pod event rows"
    if (
        re.search(r"(?m)^(?:USER-SUPPLIED|COMPUTED) VALUES:\s*$", head)
        or (len(_HELM_KEYS_RE.findall(head)) >= 2)
        or re.search(r"(?m)^\s+(?:deviceSplitCount|nvidiaNodeSelector|runtimeClassName):", head)
    ):
        if not re.search(r"(?m)^(?:apiVersion|kind):", head):
            return "helm-values", "YAML with HAMi chart keys (devicePlugin/scheduler/devices)"
    return "text", "no Kubernetes object, config or known log markers found"


def _object(head: str, catalogue: Catalogue) -> tuple[str, str] | None:
    kinds = _K8S_KIND_RE.findall(head)
    if not kinds and head.lstrip().startswith("{"):
        kinds = re.findall(r'"?\bkind"?\s*:\s*"?([A-Za-z]+)', head)[:1]
    if not kinds:
        return None
    top = _TOP_KIND_RE.search(head)
    first = top.group(1) if top else kinds[0]
    if first == "List":
        if _LIST_ITEM_NODE_RE.search(head):
            return "node", "kind: List whose items are Nodes"
        if "Pod" in kinds:
            return "pod", "kind: List whose items are Pods"
        first = next((k for k in kinds if k in catalogue.by_k8s_kind), first)
    kid = catalogue.by_k8s_kind.get(first)
    if kid is None:
        return None
    return kid, f"Kubernetes object with kind: {first}"


def _sniff_log(head: str, catalogue: Catalogue) -> tuple[str, str] | None:
    lines = head.splitlines()[:3000]
    klog = 0
    scores: dict[str, int] = {}
    log_kinds = catalogue.log_kinds()
    for raw in lines:
        line = raw[PREFIX_RE.match(raw).end() :]
        if KLOG_RE.match(line):
            klog += 1
        if SCRIPT_RE.search(line):
            continue  # a command that echoes a log message is a script, not its log
        for k in log_kinds:
            if k.marker.search(line):
                scores[k.id] = scores.get(k.id, 0) + 1
    if scores:
        best = max(sorted(scores), key=lambda k: scores[k])
        return best, f"{scores[best]} line(s) match {best} markers ({klog} klog lines)"
    if klog:
        return "klog", f"{klog} klog lines from an unknown component"
    return None
