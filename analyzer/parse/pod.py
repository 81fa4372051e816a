"""`kubectl describe pod` text and Pod YAML/JSON into PodFacts (state, events, HAMi annotations)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import regex

from analyzer.bundle.model import Artefact
from analyzer.parse import shape
from analyzer.parse.shape import conform
from analyzer.structured import Documents

_EVENT_RE = re.compile(
    r"^\s*(?P<type>Normal|Warning)\s+(?P<reason>\S+)\s+(?P<age>\S.*?)\s{2,}(?P<src>\S+)\s{2,}(?P<msg>.*)$"
)
_FIELD_RE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][\w ./-]*?):\s*(?P<value>.*)$")
_ANNOTATION_RE = re.compile(r"^\s*(?P<key>(?:[\w.-]+/)?[\w.-]+):\s+(?P<value>.*)$")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")  # a describe's Environment entry


@dataclass
class PodEvent:
    type: str
    reason: str
    age: str
    source: str
    message: str
    line: int


@dataclass
class ContainerState:
    name: str
    state: str | None = None
    reason: str | None = None
    message: str | None = None
    last_reason: str | None = None
    last_message: str | None = None
    limits: dict[str, str] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    privileged: bool = False  # securityContext.privileged (known from YAML only)
    env: dict[str, str] = field(default_factory=dict)  # the container's `env` name: value pairs


POD_SECTIONS = frozenset({"header", "annotations", "limits", "events", "containers", "spec"})


@dataclass
class PodFacts:
    file: str
    first_line: int
    form: str  # yaml | describe
    sections: frozenset[str] = POD_SECTIONS  # what the paste showed; others are unknown
    name: str | None = None
    namespace: str | None = None
    node: str | None = None
    status: str | None = None
    scheduler_name: str | None = None
    runtime_class: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    containers: list[ContainerState] = field(default_factory=list)
    events: list[PodEvent] = field(default_factory=list)
    line_of: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    owner: str | None = None  # "Deployment/NAME" for a workload's pod template

    def limits(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for c in self.containers:
            merged.update(c.limits)
        return merged


# Workloads whose pods are made from a template, and where it sits in their spec
_TEMPLATE_AT = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
_TEMPLATE_SECTIONS = frozenset({"header", "annotations", "limits", "spec"})


def parse_pod(
    artefact: Artefact, templates: regex.Pattern | None = None, documents: Documents | None = None
) -> list[PodFacts]:
    """A pod's describe text, or the Pods of a YAML/JSON object and, with `templates` (its kind's
    `pod_templates`), the pod templates of workloads asking for a resource it matches;
    `documents`: the object's, shared by the parsers of its kind.

    >>> from analyzer.dev.samples import pod
    >>> p = pod('kind: Job\\nmetadata: {name: train, namespace: ml}\\nspec:\\n  template:\\n    spec:\\n      containers: [{name: c, securityContext: {privileged: true}, resources: {limits: {nvidia.com/gpu: 1}}}]', "workload")
    >>> p.owner, p.name, p.namespace, p.containers[0].privileged, p.status
    ('Job/train', None, 'ml', True, None)
    """
    if artefact.kind == "pod-describe":
        return [_parse_describe(artefact)]
    return _parse_yaml(artefact, templates, documents)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _template(raw: dict[str, Any], wanted: regex.Pattern) -> dict[str, Any] | None:
    """A workload's pod template as a Pod object, when it asks for a `wanted` resource."""
    at: Any = raw
    for key in _TEMPLATE_AT.get(str(raw.get("kind")), ()):
        at = at.get(key) if isinstance(at, dict) else None
    if not isinstance(at, dict) or at is raw:
        return None
    spec = _mapping(at.get("spec"))
    wants = [
        key
        for c in spec.get("containers") or ()
        if isinstance(c, dict) and isinstance(c.get("resources"), dict)
        for part in ("limits", "requests")
        if isinstance(c["resources"].get(part), dict)
        for key in c["resources"][part]
    ]
    if not any(wanted.search(str(key)) for key in wants):
        return None
    meta, tmeta = _mapping(raw.get("metadata")), _mapping(at.get("metadata"))
    # the pods' names are the controller's to choose: only the namespace is the workload's; and
    # the API server writes `schedulerName: default-scheduler` into every template, which HAMi's
    # webhook rewrites in each pod it creates, never in the template: not the pods' scheduler
    # (another one the template names, volcano say, is theirs: the webhook leaves it)
    pod_meta = {k: v for k, v in tmeta.items() if k != "name"}
    if meta.get("namespace") is not None:
        pod_meta.setdefault("namespace", meta["namespace"])
    defaulted = spec.get("schedulerName") in (None, "default-scheduler")
    pod_spec = {k: v for k, v in spec.items() if not (k == "schedulerName" and defaulted)}
    return {"kind": "Pod", "metadata": pod_meta, "spec": pod_spec}


def _parse_yaml(
    artefact: Artefact, templates: regex.Pattern | None, documents: Documents | None
) -> list[PodFacts]:
    docs, warnings = (documents or Documents(artefact.text or "")).loaded
    objs: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List":
            objs.extend(i for i in d.get("items") or [] if isinstance(i, dict))
        elif isinstance(d, dict):
            objs.append(d)
    pods = []
    for raw in objs:
        owner = None
        if raw.get("kind") != "Pod":
            template = _template(raw, templates) if templates is not None else None
            if template is None:
                continue
            name = _mapping(raw.get("metadata")).get("name") or "?"
            owner, raw = f"{raw.get('kind')}/{name}", template
        problems: list[str] = []
        obj = conform(raw, shape.POD, problems)
        meta, spec, status = (obj.get(k, {}) for k in ("metadata", "spec", "status"))
        p = PodFacts(
            artefact.file.name, artefact.first_line, "yaml", warnings=[*warnings, *problems]
        )
        if owner is not None:  # a template: no status, events or container states of its own
            p.owner, p.sections = owner, _TEMPLATE_SECTIONS
        p.name, p.namespace = meta.get("name"), meta.get("namespace")
        p.annotations = meta.get("annotations", {})
        p.node = spec.get("nodeName")
        p.scheduler_name = spec.get("schedulerName")
        p.runtime_class = spec.get("runtimeClassName")
        p.status = status.get("phase")
        statuses = {s.get("name"): s for s in status.get("containerStatuses", [])}
        for c in spec.get("containers", []):
            cs = ContainerState(c.get("name", ""))
            cs.limits = c.get("resources", {}).get("limits", {})
            cs.requests = c.get("resources", {}).get("requests", {})
            cs.privileged = c.get("securityContext", {}).get("privileged") is True
            cs.env = {
                e["name"]: e["value"] for e in c.get("env", []) if "name" in e and "value" in e
            }
            st = statuses.get(cs.name, {})
            for state_name, detail in st.get("state", {}).items():
                cs.state, cs.reason, cs.message = (
                    state_name,
                    detail.get("reason"),
                    detail.get("message"),
                )
            for detail in st.get("lastState", {}).values():
                cs.last_reason, cs.last_message = detail.get("reason"), detail.get("message")
            p.containers.append(cs)
        pods.append(p)
    if not pods:
        pods.append(PodFacts(artefact.file.name, artefact.first_line, "yaml", warnings=warnings))
    return pods


def _parse_describe(artefact: Artefact) -> PodFacts:
    p = PodFacts(artefact.file.name, artefact.first_line, "describe", frozenset())
    seen: set[str] = set()
    section: str | None = None
    container: ContainerState | None = None
    sub: str | None = None
    for i, raw in enumerate((artefact.text or "").split("\n")):
        lineno = artefact.first_line + i
        ev = _EVENT_RE.match(raw)
        if ev:
            seen.add("events")
            p.events.append(
                PodEvent(
                    ev["type"],
                    ev["reason"],
                    ev["age"].strip(),
                    ev["src"],
                    ev["msg"].strip(),
                    lineno,
                )
            )
            continue
        m = _FIELD_RE.match(raw)
        if not m:
            continue
        indent, key, value = len(m["indent"]), m["key"].strip(), m["value"].strip()
        if indent == 0:
            section, sub = key, None
            low = key.lower()
            seen.update(
                {
                    "name": ["header"],
                    "annotations": ["annotations"],
                    "events": ["events"],
                    "containers": ["containers"],
                }.get(low, [])
            )
            if low == "name":
                p.name = value
            elif low == "namespace":
                p.namespace = value
                p.line_of.setdefault("namespace", lineno)  # cited where a fact names it
            elif low == "node":
                p.node = value.split("/")[0] or None
            elif low == "status":
                p.status = value
            elif low == "runtime class name":
                p.runtime_class = value
            elif low in ("annotations", "labels") and value:
                _add_annotation(p, value, lineno, low)
            continue
        if (section and section.lower() == "annotations") or (
            section and section.lower() == "labels"
        ):
            am = _ANNOTATION_RE.match(raw)
            if am and indent <= 24:
                _add_annotation(p, f"{am['key']}: {am['value']}", lineno, section.lower())
            continue
        if section == "Containers" and indent == 2 and not value:
            container = ContainerState(key)
            p.containers.append(container)
            sub = None
            continue
        if container is None:
            continue
        if key in ("State", "Last State"):
            sub = key
            if key == "State":
                container.state = value
            continue
        if key == "Reason":
            if sub == "Last State":
                container.last_reason = value
            else:
                container.reason = value
        elif key == "Message":
            if sub == "Last State":
                container.last_message = value
            else:
                container.message = value
        elif key in ("Limits", "Requests", "Environment"):
            sub = key
            if key == "Limits":
                seen.add("limits")
        elif sub in ("Limits", "Requests") and ("/" in key or key in ("cpu", "memory")):
            (container.limits if sub == "Limits" else container.requests)[key] = value
        elif sub == "Environment" and indent >= 6 and _ENV_NAME.fullmatch(key):
            container.env[key] = value
    if "containers" in seen and "limits" not in seen:
        seen.add("limits")  # a full Containers section without Limits: none are set
    p.sections = frozenset(seen)
    return p


def _add_annotation(p: PodFacts, body: str, lineno: int, section: str) -> None:
    if section == "labels":
        return
    k, sep, v = body.partition(": ")
    if not sep:
        k, v = body.rstrip(":"), ""
    p.annotations[k.strip()] = v.strip().strip('"')
    p.line_of.setdefault(k.strip(), lineno)
