"""Where HAMi is installed and which pods matter, from `kubectl get pods -o json` lists.

HAMi is found by its chart's labels wherever it runs (namespace and release are read, never
assumed): `app.kubernetes.io/component` names the workload (`HamiNames.roles`, from kinds.yaml
`hami:`; v2.2 and earlier used `4pd-*`), `app.kubernetes.io/instance` the helm release."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from analyzer.catalogue.hami import HamiNames

COMPONENT = "app.kubernetes.io/component"
RELEASE = "app.kubernetes.io/instance"
# what a pod needs besides an extended resource to be none of HAMi's business
_PLAIN_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
OTHER_PODS = 2  # pods not running kept per node besides the running one (the latest crashes)
# Kubernetes object names (DNS-1123 subdomain: nodes, pods, ConfigMaps; namespaces and container
# names are the stricter label form, which this also accepts). A name from the cluster or the
# command line that is not one is never passed to kubectl, printed or made a file name.
_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_NAME_RE = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def is_name(text: object) -> bool:
    """
    >>> is_name("gpu-node-1.example.com"), is_name("-rf"), is_name("pod\x1b]52;c;x\x07"), is_name("A")
    (True, False, False, False)
    """
    return isinstance(text, str) and len(text) <= 253 and _NAME_RE.fullmatch(text) is not None


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    node: str | None
    role: str  # device-plugin | scheduler | workload
    containers: tuple[str, ...]  # init containers first, as the pod runs them
    restarted: frozenset[str]  # containers with a previous instance (kubectl logs --previous)
    ready: bool
    running: bool = False
    created: str = ""  # creationTimestamp (RFC 3339, so it sorts as text)


@dataclass(frozen=True)
class Install:
    namespace: str | None
    release: str | None
    pods: tuple[PodRef, ...]
    others: tuple[str, ...] = ()  # further installs seen (namespace/release), not collected

    def on_nodes(self, nodes: list[str], others: int = OTHER_PODS) -> list[PodRef]:
        """The device-plugin pods on these nodes and the scheduler pods (the scheduler's log
        speaks of every node): per node (and for the schedulers) the running pods and the
        `others` newest that are not running, never every evicted or failed one.

        >>> def pod(name, node, phase, created):
        ...     return PodRef("gpu", name, node, "device-plugin", ("device-plugin",), frozenset(),
        ...                   phase == "Running", phase == "Running", created)
        >>> evicted = [pod(f"dp-{i}", "n1", "Failed", f"2026-01-{i:02}") for i in range(1, 29)]
        >>> inst = Install("gpu", "hami", (*evicted, pod("dp-new", "n1", "Running", "2026-02-01")))
        >>> [p.name for p in inst.on_nodes(["n1"])]
        ['dp-new', 'dp-28', 'dp-27']
        """
        groups: dict[tuple[str, str | None], list[PodRef]] = {}
        for p in self.pods:
            if p.role == "scheduler" or p.node in nodes:
                key = (p.role, None if p.role == "scheduler" else p.node)
                groups.setdefault(key, []).append(p)
        out: list[PodRef] = []
        for group in groups.values():
            newest = sorted(group, key=lambda p: p.created, reverse=True)
            out += [p for p in newest if p.running]
            out += [p for p in newest if not p.running][:others]
        return out

    def plugin_nodes(self) -> list[str]:
        return sorted({p.node for p in self.pods if p.role == "device-plugin" and p.node})


def pod_ref(item: dict[str, Any], role: str) -> PodRef:
    meta, spec, status = (item.get(k) or {} for k in ("metadata", "spec", "status"))
    names = [
        c.get("name")
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])
        if isinstance(c, dict) and is_name(c.get("name"))
    ]
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    restarted = {
        s.get("name")
        for s in statuses
        if s.get("restartCount") or (s.get("lastState") or {}).get("terminated")
    }
    running = status.get("phase") == "Running"
    ready = running and all(s.get("ready") for s in status.get("containerStatuses") or [{}])
    node = spec.get("nodeName")
    return PodRef(
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        node if is_name(node) else None,
        role,
        tuple(str(n) for n in names if n),
        frozenset(str(n) for n in restarted if n),
        ready,
        running,
        str(meta.get("creationTimestamp") or ""),
    )


def selector(hami: HamiNames) -> str:
    """The label selector of HAMi's pods.

    >>> from analyzer.dev.samples import catalogue
    >>> selector(catalogue().hami)
    'app.kubernetes.io/component in (hami-device-plugin,4pd-device-plugin,hami-scheduler,4pd-scheduler)'
    """
    return f"{COMPONENT} in ({','.join(hami.roles)})"


def find_install(pod_list: dict[str, Any], hami: HamiNames) -> Install:
    """The HAMi install with the most pods in a list of labelled pods.

    >>> from analyzer.dev.samples import catalogue
    >>> pods = {"items": [
    ...   {"metadata": {"name": "dp-1", "namespace": "gpu", "labels": {COMPONENT: "hami-device-plugin",
    ...    RELEASE: "stack"}}, "spec": {"nodeName": "n1", "containers": [{"name": "device-plugin"}]},
    ...    "status": {"phase": "Running", "containerStatuses": [{"name": "device-plugin",
    ...    "ready": True, "restartCount": 2}]}},
    ...   {"metadata": {"name": "s-1", "namespace": "gpu", "labels": {COMPONENT: "hami-scheduler",
    ...    RELEASE: "stack"}}, "spec": {"containers": [{"name": "kube-scheduler"}]}}]}
    >>> inst = find_install(pods, catalogue().hami)
    >>> inst.namespace, inst.release, inst.plugin_nodes(), sorted(inst.pods[0].restarted)
    ('gpu', 'stack', ['n1'], ['device-plugin'])
    >>> find_install({"items": []}, catalogue().hami).namespace is None
    True
    """
    found: list[tuple[str, str | None, PodRef]] = []
    for item in pod_list.get("items") or []:
        if not named(item):
            continue
        labels = (item.get("metadata") or {}).get("labels") or {}
        role = hami.roles.get(labels.get(COMPONENT, ""))
        if role:
            ref = pod_ref(item, role)
            found.append((ref.namespace, labels.get(RELEASE), ref))
    if not found:
        return Install(None, None, ())
    ranked = Counter((ns, rel) for ns, rel, _ in found).most_common()
    (namespace, release), _n = ranked[0]
    pods = tuple(p for ns, rel, p in found if (ns, rel) == (namespace, release))
    others = tuple(f"{ns}/{rel}" for (ns, rel), _ in ranked[1:])
    return Install(namespace, release, pods, others)


def named(item: Any) -> bool:
    """An object whose namespace and name are Kubernetes names (others are left alone)."""
    meta = (item.get("metadata") if isinstance(item, dict) else None) or {}
    return is_name(meta.get("name")) and is_name(meta.get("namespace") or "default")


def wants_gpu(item: dict[str, Any]) -> bool:
    """A pod asking for an extended resource (nvidia.com/gpu, gpumem, another vendor's) or for a
    HAMi scheduler is one the analyzer can say something about."""
    spec = item.get("spec") or {}
    if "hami" in str(spec.get("schedulerName") or ""):
        return True
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        res = c.get("resources") or {}
        for key in {**(res.get("limits") or {}), **(res.get("requests") or {})}:
            if key not in _PLAIN_RESOURCES and not key.startswith("hugepages-"):
                return True
    return False


def problem_pods(pod_list: dict[str, Any], chosen: list[PodRef], limit: int) -> list[PodRef]:
    """HAMi's own pods among those chosen that are not ready, then the GPU pods of a
    not-running list (Pending or Failed), newest first, at most `limit`.

    >>> pending = {"items": [{"metadata": {"name": "vllm-0", "namespace": "ai",
    ...   "creationTimestamp": "2026-08-15T09:00:00Z"}, "spec": {"containers": [{"name": "v",
    ...   "resources": {"limits": {"nvidia.com/gpu": 1}}}]}, "status": {"phase": "Pending"}},
    ...   {"metadata": {"name": "web", "namespace": "ai"}, "spec": {"containers": [{"name": "w"}]}}]}
    >>> [p.name for p in problem_pods(pending, [], 5)]
    ['vllm-0']
    """
    out = [p for p in chosen if not p.ready]
    items = sorted(
        (i for i in pod_list.get("items") or [] if named(i) and wants_gpu(i)),
        key=lambda i: str((i.get("metadata") or {}).get("creationTimestamp") or ""),
        reverse=True,
    )
    seen = {(p.namespace, p.name) for p in out}
    for item in items:
        ref = pod_ref(item, "workload")
        if (ref.namespace, ref.name) not in seen:
            out.append(ref)
            seen.add((ref.namespace, ref.name))
    return out[:limit]
