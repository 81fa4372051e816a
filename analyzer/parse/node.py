"""Node objects (-o yaml / -o json / List) and `kubectl describe node` text into NodeFacts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from analyzer.bundle.model import Artefact
from analyzer.parse import shape
from analyzer.parse.shape import conform
from analyzer.parse.structured import _FastLoader, load_documents

NODE_SECTIONS = frozenset(
    {
        "labels",
        "annotations",
        "taints",
        "capacity",
        "allocatable",
        "conditions",
        "images",
        "spec",
        "system",
    }
)
_DESCRIBE_SECTIONS = {
    "Labels": "labels",
    "Annotations": "annotations",
    "Taints": "taints",
    "Capacity": "capacity",
    "Allocatable": "allocatable",
    "Conditions": "conditions",
    "Unschedulable": "spec",
    "Allocated resources": "allocated",
    "System Info": "system",
}
# describe's System Info lines -> status.nodeInfo keys
_SYSTEM_INFO = {
    "Kubelet Version": "kubeletVersion",
    "OS Image": "osImage",
    "Container Runtime Version": "containerRuntimeVersion",
    "Kernel Version": "kernelVersion",
}
_FRAGMENT_LINE_RE = re.compile(
    r'^\s*(?:Annotations:\s+|-\s+)?"?(?P<key>(?:[\w.-]+/)?[\w.-]+)"?\s*:\s*(?P<value>.*?)\s*,?$'
)


@dataclass
class NodeFacts:
    name: str | None
    file: str
    first_line: int
    form: str  # yaml | describe | fragment
    sections: frozenset[str] = NODE_SECTIONS  # what the paste showed; others are unknown
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    elided: set[str] = field(default_factory=set)  # annotation values cut by kubectl describe
    taints: list[dict[str, str]] = field(default_factory=list)
    capacity: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    allocated: dict[str, str] = field(default_factory=dict)  # describe: requests by resource
    conditions: list[dict[str, str]] = field(default_factory=list)
    created: str | None = None
    unschedulable: bool = False
    images: list[str] = field(default_factory=list)
    node_info: dict[str, str] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)  # key -> 1-based line in the file
    file_of: dict[str, str] = field(default_factory=dict)  # key -> file, when merged from another
    label_managers: dict[str, list[str]] = field(default_factory=dict)  # label -> field managers
    warnings: list[str] = field(default_factory=list)

    def source_of(self, key: str | None) -> tuple[str, int | None]:
        """File and line a key was read from (a merged piece keeps its own file)."""
        if key is None:
            return self.file, self.first_line
        return self.file_of.get(key, self.file), self.line_of.get(key, self.first_line)


def _locate(text: str, first_line: int, keys: list[str]) -> dict[str, int]:
    """Where each key first appears in the text (for evidence citations)."""
    out: dict[str, int] = {}
    for i, line in enumerate(text.split("\n")):
        for k in keys:
            if k not in out and k in line:
                out[k] = first_line + i
    return out


_YAML_KEY_RE = re.compile(r'^(\s*)(?:-\s+)?"?([^":{}\[\]]+?)"?\s*:(?:\s|$)')


def yaml_lines(
    text: str, first_line: int, paths: list[tuple[str, ...]]
) -> dict[tuple[str, ...], int]:
    """Line of each key path in block YAML or indented JSON (kubectl output), by indentation."""
    want = set(paths)
    out: dict[tuple[str, ...], int] = {}
    stack: list[tuple[int, str]] = []
    for i, line in enumerate(text.split("\n")):
        m = _YAML_KEY_RE.match(line)
        if not m:
            continue
        indent = len(m.group(1)) + (2 if line.lstrip().startswith("- ") else 0)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group(2).strip()))
        key = tuple(k for _, k in stack)
        if key in want and key not in out:
            out[key] = first_line + i
            if len(out) == len(want):
                break
    return out


def _object_lines(text: str) -> list[tuple[int, int]] | None:
    r"""0-based first and last line of each object parse_node reads (every document, and each
    item of a `kind: List`), in its order; None when the text does not compose whole (a cut
    paste), and then every object is located in the whole text.

    >>> _object_lines("kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n- kind: Node\n  metadata: {name: b}\n")
    [(2, 3), (4, 5)]
    """
    try:
        docs = [d for d in yaml.compose_all(text, Loader=_FastLoader) if d is not None]
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    out: list[tuple[int, int]] = []
    for doc in docs:
        if not isinstance(doc, yaml.MappingNode):
            continue
        fields = {k.value: v for k, v in doc.value if isinstance(k, yaml.ScalarNode)}
        kind, items = fields.get("kind"), fields.get("items")
        if isinstance(kind, yaml.ScalarNode) and kind.value == "List":
            if isinstance(items, yaml.SequenceNode):
                out += [
                    (i.start_mark.line, _last_line(i))
                    for i in items.value
                    if isinstance(i, yaml.MappingNode)
                ]
        else:
            out.append((doc.start_mark.line, _last_line(doc)))
    return out


def _last_line(node) -> int:
    """A block mapping ends at the start of the line after it; a flow one on its own line."""
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def parse_node(artefact: Artefact) -> list[NodeFacts]:
    if artefact.kind == "node-describe":
        return [_parse_describe(artefact)]
    if artefact.kind == "node-annotations":
        return [_parse_fragment(artefact)]
    docs, warnings = load_documents(artefact.text or "")
    objs: list[dict] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List":
            objs.extend(i for i in d.get("items") or [] if isinstance(i, dict))
        elif isinstance(d, dict):
            objs.append(d)
    nodes = []
    text = artefact.text or ""
    lines = text.split("\n")
    spans = _object_lines(text) if len(objs) > 1 else None
    if spans is None or len(spans) != len(objs):
        spans = [(0, len(lines) - 1)] * len(objs)
    for raw, (first, last) in zip(objs, spans, strict=True):
        if raw.get("kind") not in ("Node", None):
            continue
        # a List's item or one document of several: its keys are located in its own lines
        item_text, item_line = "\n".join(lines[first : last + 1]), artefact.first_line + first
        problems: list[str] = []
        obj = conform(raw, shape.NODE, problems)
        meta, spec, status = (obj.get(k, {}) for k in ("metadata", "spec", "status"))
        n = NodeFacts(
            name=meta.get("name") or None,
            file=artefact.file.name,
            first_line=item_line,
            form="yaml",
            labels=meta.get("labels", {}),
            annotations=meta.get("annotations", {}),
            capacity=status.get("capacity", {}),
            allocatable=status.get("allocatable", {}),
            created=meta.get("creationTimestamp") or None,
            unschedulable=spec.get("unschedulable", False),
            node_info=status.get("nodeInfo", {}),
            warnings=[*warnings, *problems],
        )
        # kubectl always prints labels, annotations, capacity...: a missing one was cut or
        # trimmed from the paste, which says nothing about the node
        n.sections = _uncut(n, _present_sections(meta, spec, status))
        n.taints = spec.get("taints", [])
        n.conditions = status.get("conditions", [])
        n.images = [name for img in status.get("images", []) for name in img.get("names", [])]
        n.line_of = _locate(item_text, item_line, list(n.annotations))
        paths = [
            ("status", sec, res)
            for sec in ("allocatable", "capacity")
            for res in (n.allocatable if sec == "allocatable" else n.capacity)
        ]
        paths += [("metadata", "labels", k) for k in n.labels] + [
            ("spec", "taints"),
            ("status", "conditions"),
        ]
        for path, line in yaml_lines(item_text, item_line, paths).items():
            key = f"{path[1]}.{path[2]}" if len(path) == 3 else path[1]
            n.line_of.setdefault(key.replace("labels.", "label."), line)
        n.label_managers = _label_managers(meta.get("managedFields", []))
        nodes.append(n)
    if not nodes:
        n = NodeFacts(None, artefact.file.name, artefact.first_line, "yaml", warnings=warnings)
        n.warnings.append("no Node object could be read")
        nodes.append(n)
    return nodes


def _present_sections(meta: dict, spec: dict, status: dict) -> frozenset[str]:
    """The sections a cut-off object still shows (an absent one was cut, not empty)."""
    have = {"labels": "labels" in meta, "annotations": "annotations" in meta}
    have |= {k: k in status for k in ("capacity", "allocatable", "conditions", "images")}
    have |= {"taints": bool(spec) or "capacity" in status, "spec": bool(spec)}
    have["system"] = "nodeInfo" in status
    return frozenset(k for k, v in have.items() if v)


_SECTION_RE = re.compile(r"^([A-Z][A-Za-z ]*):\s*(.*)$")
_INDENTED_SECTION_RE = re.compile(r"^\s+(Capacity|Allocatable):\s*()$")


def _parse_fragment(artefact: Artefact) -> NodeFacts:
    """Annotations pasted on their own: `key: value` lines, or a bare register value."""
    text = (artefact.text or "").strip()
    n = NodeFacts(
        None, artefact.file.name, artefact.first_line, "fragment", frozenset({"annotations"})
    )
    if text.startswith(("[", "GPU-")):
        n.annotations["hami.io/node-nvidia-register"] = text
        n.line_of["hami.io/node-nvidia-register"] = artefact.first_line
        return n
    last_key, key_column = None, 0
    for i, raw in enumerate((artefact.text or "").split("\n")):
        m = _FRAGMENT_LINE_RE.match(raw)
        if m and "/" in m["key"]:
            key = m["key"]
            n.annotations[key] = m["value"].strip().strip("'\"")
            n.line_of.setdefault(key, artefact.first_line + i)
            last_key, key_column = key, m.start("key")
        elif last_key and raw.strip() and len(raw) - len(raw.lstrip()) > key_column:
            # kubectl describe wraps a long value onto the next, deeper indented line
            value = (n.annotations[last_key] + " " + raw.strip()).strip()
            n.annotations[last_key] = value.strip("'\"")
        else:
            last_key = None
    n.elided = {k for k, v in n.annotations.items() if v.endswith(("...", "…"))}
    return n


def _parse_describe(artefact: Artefact) -> NodeFacts:
    text = artefact.text or ""
    n = NodeFacts(None, artefact.file.name, artefact.first_line, "describe", frozenset())
    seen: set[str] = set()
    section = None
    last_key: str | None = None
    for i, raw in enumerate(text.split("\n")):
        lineno = artefact.first_line + i
        m = _SECTION_RE.match(raw) or _INDENTED_SECTION_RE.match(raw)
        if m:  # a top-level section, or an indented Capacity/Allocatable block
            section, rest = m.group(1), m.group(2).strip()
            if section in _DESCRIBE_SECTIONS:
                seen.add(_DESCRIBE_SECTIONS[section])
            last_key = None
            if section == "Name":
                n.name = rest
            elif section == "CreationTimestamp":
                n.created = rest
            elif section == "Unschedulable":
                n.unschedulable = rest == "true"
            if rest and rest != "<none>":
                _describe_item(n, section, rest, lineno)
                last_key = _last_annotation(n, section)
            continue
        body = raw.strip()
        if not body or section is None:
            continue
        if (
            section == "Annotations"
            and last_key
            and raw.startswith(" " * 22)
            # kubectl puts a long value on the line below its key (then a JSON value's first
            # word holds ':'); otherwise a word with ':' starts the next annotation
            and (not n.annotations[last_key] or ":" not in body[:60].split(" ")[0])
        ):
            n.annotations[last_key] = (n.annotations[last_key] + " " + body).strip()
            if body.endswith("...") or body.endswith("…"):
                n.elided.add(last_key)
            continue
        _describe_item(n, section, body, lineno)
        last_key = _last_annotation(n, section)
    for k, v in n.annotations.items():
        if v.endswith(("...", "…")):
            n.elided.add(k)
    n.sections = _uncut(n, frozenset(seen))
    return n


def _uncut(n: NodeFacts, sections: frozenset[str]) -> frozenset[str]:
    """kubectl lists the same resources under capacity and allocatable: an allocatable without
    some of them was cut off in the paste, and a missing nvidia.com/gpu there is not a 0."""
    if {"capacity", "allocatable"} <= sections and set(n.capacity) - set(n.allocatable):
        n.warnings.append("allocatable lists fewer resources than capacity: cut off, not read")
        return sections - {"allocatable"}
    return sections


def _last_annotation(n: NodeFacts, section: str) -> str | None:
    return (
        next(reversed(n.annotations), None) if section == "Annotations" and n.annotations else None
    )


def _describe_item(n: NodeFacts, section: str, body: str, lineno: int) -> None:
    if section == "Labels" and "=" in body:
        k, _, v = body.partition("=")
        n.labels[k.strip()] = v.strip()
    elif section == "Annotations":
        k, sep, v = body.partition(": ")
        if not sep and body.endswith(":"):
            k, v = body[:-1], ""
        elif not sep:
            return
        n.annotations[k.strip()] = v.strip()
        n.line_of.setdefault(k.strip(), lineno)
    elif section == "Taints" and body != "<none>":
        m = re.match(r"^([^=:\s]+)(?:=([^:]*))?:(\w+)$", body)
        if m:
            n.taints.append({"key": m[1], "value": m[2] or "", "effect": m[3]})
    elif section in ("Capacity", "Allocatable"):
        k, sep, v = body.partition(":")
        if sep:
            target = n.capacity if section == "Capacity" else n.allocatable
            # kubectl prints one quantity; what follows it is the reporter's note ("<== here")
            target[k.strip()] = (v.split() or [""])[0]
            n.line_of.setdefault(f"{section.lower()}.{k.strip()}", lineno)
    elif section == "Allocated resources":
        parts = re.split(r"\s{2,}", body)
        if len(parts) >= 2 and parts[0] not in (
            "Resource",
            "--------",
            "(Total limits may be over 100 percent, i.e., overcommitted.)",
        ):
            n.allocated[parts[0]] = parts[1].split(" (")[0]
            n.line_of.setdefault(f"allocated.{parts[0]}", lineno)
    elif section == "System Info":
        k, sep, v = body.partition(":")
        if sep and k.strip() in _SYSTEM_INFO:
            n.node_info[_SYSTEM_INFO[k.strip()]] = v.strip()
    elif section == "Conditions":
        parts = re.split(r"\s{2,}", body)
        if len(parts) >= 2 and parts[0] not in ("Type", "----"):
            n.conditions.append({"type": parts[0], "status": parts[1]})


def _label_managers(fields: list[dict]) -> dict[str, list[str]]:
    """Which field managers set each label (present with `-o yaml --show-managed-fields`)."""
    out: dict[str, list[str]] = {}
    for entry in fields:
        labels = entry.get("fieldsV1", {}).get("f:metadata", {}).get("f:labels", {})
        for key in labels:
            if key.startswith("f:"):
                out.setdefault(key[2:], []).append(entry.get("manager", ""))
    return out
