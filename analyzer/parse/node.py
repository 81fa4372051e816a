"""Node objects (-o yaml / -o json / List) and `kubectl describe node` text into NodeFacts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzer.bundle.model import Artefact
from analyzer.parse import shape
from analyzer.parse.shape import conform
from analyzer.structured import ELISION_RE, Documents, elision_lines

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
    "Architecture": "architecture",
}
# nodes analysed per bundle: each costs every rule and a report (1,700 pasted in an issue took
# 35 s); a whole cluster's `kubectl get nodes -o yaml` keeps its GPU nodes
MAX_NODES = 50
_FRAGMENT_LINE_RE = re.compile(
    r'^\s*(?:Annotations:\s+|-\s+)?"?(?P<key>(?:[\w.-]+/)?[\w.-]+)"?\s*:\s*(?P<value>.*?)\s*,?$'
)


@dataclass
class NodeFacts:
    """What a node object (YAML, describe or a fragment of either) says about the node."""

    name: str | None
    file: str
    first_line: int
    form: str  # yaml | describe | fragment
    sections: frozenset[str] = NODE_SECTIONS  # what the paste showed; others are unknown
    # sections shown in part (describe's `...` where lines were left out): what they list is
    # read, what they do not is unknown
    partial: frozenset[str] = frozenset()
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

    @property
    def shown(self) -> frozenset[str]:
        """The sections whose values can be read: whole, or in part (their gaps unknown)."""
        return self.sections | self.partial

    def source_of(self, key: str | None) -> tuple[str, int | None]:
        """File and line a key was read from (a merged piece keeps its own file)."""
        if key is None:
            return self.file, self.first_line
        return self.file_of.get(key, self.file), self.line_of.get(key, self.first_line)


def _locate(lines: list[str], first_line: int, keys: list[str]) -> dict[str, int]:
    """Where each key first appears in the lines (for evidence citations)."""
    out: dict[str, int] = {}
    for i, line in enumerate(lines):
        for k in keys:
            if k not in out and k in line:
                out[k] = first_line + i
    return out


def _yaml_key(line: str) -> tuple[int, str, str] | None:
    """(indent, key, rest) of a block YAML or indented JSON key line (`  key: v`, `- key: v`,
    `"key": v,`), or None. A plain scan, linear in the line: a regex for the same shape
    backtracked cubically over a long indent (3,000 spaces then `- x` took 19 s).

    >>> _yaml_key('    - "name": gpu-1,')
    (6, 'name', 'gpu-1,')
    >>> _yaml_key("  url: http://x"), _yaml_key("a:b: c"), _yaml_key("  - x")
    ((2, 'url', 'http://x'), None, None)
    """
    body = line.lstrip()
    indent = len(line) - len(body)
    if body.startswith("-") and body[1:2].isspace():
        body = body[1:].lstrip()
        indent += 2
    colon = body.find(":")
    if colon <= 0 or (colon + 1 < len(body) and not body[colon + 1].isspace()):
        return None
    key = body[:colon].rstrip()
    key = key[1:] if key.startswith('"') else key
    key = key[:-1] if key.endswith('"') else key
    key = key.strip()
    if not key or any(c in key for c in '":{}[]'):
        return None
    return indent, key, body[colon + 1 :].strip()


def yaml_lines(
    lines: list[str], first_line: int, paths: list[tuple[str, ...]]
) -> dict[tuple[str, ...], int]:
    """Line of each key path in block YAML or indented JSON (kubectl output), by indentation."""
    want = set(paths)
    out: dict[tuple[str, ...], int] = {}
    stack: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        found = _yaml_key(line)
        if found is None:
            continue
        indent, name, _rest = found
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, name))
        key = tuple(k for _, k in stack)
        if key in want and key not in out:
            out[key] = first_line + i
            if len(out) == len(want):
                break
    return out


@dataclass(frozen=True)
class Span:
    """The lines [start, end) of one object of a text, and its metadata.name when it shows one."""

    start: int
    end: int
    name: str | None


_DOC_SEPARATOR_RE = re.compile(r"^(?:---|\.\.\.)(?:\s|$)")


def object_spans(lines: list[str]) -> list[Span]:
    r"""The objects of a YAML or indented JSON text, in one pass: each document (split at `---`)
    or, in a document with a top-level `items:` list (kind: List), each entry of the list. A node
    cites lines of its own span, so locating every node of a long list costs one pass.

    >>> text = "apiVersion: v1\nitems:\n- kind: Node\n  metadata:\n    name: a\n- metadata:\n    name: b\nkind: List"
    >>> object_spans(text.split("\n"))
    [Span(start=2, end=5, name='a'), Span(start=5, end=7, name='b')]
    """
    spans: list[Span] = []
    doc, doc_name, listed = 0, None, False  # the document: first line, name, is it a List
    stack: list[tuple[int, str]] = []
    top: int | None = None  # indentation of the document's first key
    items: int | None = None  # indentation of its `items:` key while the list is read
    entry_indent: int | None = None
    entry: int | None = None  # first line of the current entry
    entry_name: str | None = None

    def end_entry(i: int) -> None:
        nonlocal entry, entry_name
        if entry is not None:
            spans.append(Span(entry, i, entry_name))
        entry, entry_name = None, None

    for i, line in enumerate(lines):
        if _DOC_SEPARATOR_RE.match(line):
            end_entry(i)
            if not listed and i > doc:
                spans.append(Span(doc, i, doc_name))
            doc, doc_name, listed, stack, top, items = i + 1, None, False, [], None, None
            continue
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if items is not None:
            starts = stripped.startswith("- ") or stripped in ("-", "{")
            if entry_indent is None and starts and indent >= items:
                entry_indent = indent
            if starts and indent == entry_indent:
                end_entry(i)
                entry = i
            elif indent <= items and not starts:
                end_entry(i)  # `kind: List` after the items, or JSON's closing `]`
                items = None
        found = _yaml_key(line)
        if found is None:
            continue
        k_indent, key, rest = found
        top = indent if top is None else top
        while stack and stack[-1][0] >= k_indent:
            stack.pop()
        stack.append((k_indent, key))
        if key == "items" and indent == top and not listed and rest in ("", "["):
            items, listed, entry_indent = indent, True, None
        elif key == "name" and len(stack) >= 2 and stack[-2][1] == "metadata":
            value = rest.rstrip(",").strip().strip("'\"") or None
            if entry is not None:
                entry_name = entry_name or value
            elif items is None and not listed:
                doc_name = doc_name or value
    end_entry(len(lines))
    if not listed and len(lines) > doc:
        spans.append(Span(doc, len(lines), doc_name))
    return spans


def parse_node(artefact: Artefact, documents: Documents | None = None) -> list[NodeFacts]:
    """`documents`: the artefact's, shared by the parsers of its kind."""
    if artefact.kind == "node-describe":
        return [_parse_describe(artefact)]
    if artefact.kind == "node-annotations":
        return [_parse_fragment(artefact)]
    text = artefact.text or ""
    docs, warnings = (documents or Documents(text)).loaded
    objs: list[dict] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List":
            objs.extend(i for i in d.get("items") or [] if isinstance(i, dict))
        elif isinstance(d, dict):
            objs.append(d)
    lines = text.split("\n")
    spans: dict[str | None, list[Span]] = {}
    for span in object_spans(lines):
        spans.setdefault(span.name, []).append(span)
    nodes: list[NodeFacts] = []
    seen: dict[str, int] = {}
    marked = bool(elision_lines(lines))
    whole_cut: frozenset[str] | None = None
    for raw in objs:
        if raw.get("kind") not in ("Node", None):
            continue
        if raw.get("kind") is None and {"allocatable", "capacity"} & raw.keys():
            raw = {"status": raw}  # a status block pasted without its `status:` key
        problems: list[str] = []
        obj = conform(raw, shape.NODE, problems)
        meta, spec, status = (obj.get(k, {}) for k in ("metadata", "spec", "status"))
        name = meta.get("name") or None
        own = spans.get(name) or []
        located = own.pop(0) if own else None
        if name is not None and name in seen:
            seen[name] += 1  # the same node again: the first document is the state shown
            continue
        if name is not None:
            seen[name] = 0
        n = NodeFacts(
            name=name,
            file=artefact.file.name,
            first_line=artefact.first_line,
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
        if not meta and not spec and raw.get("kind") is None:
            n.form = "fragment"  # a status block on its own: the node's other sections are unknown
            n.sections = n.sections - {"taints", "spec"}
        n.taints = spec.get("taints", [])
        n.conditions = status.get("conditions", [])
        n.images = [name for img in status.get("images", []) for name in img.get("names", [])]
        if located is None and len(objs) == 1:
            located = Span(0, len(lines), name)
        if marked:  # the paste's "...." inside a section of this object: read in part
            if located is not None:
                cut = _elided_sections(lines[located.start : located.end])
            else:  # objects the text does not tell apart share the text's marks
                cut = whole_cut = _elided_sections(lines) if whole_cut is None else whole_cut
            n.partial, n.sections = n.sections & cut, n.sections - cut
        if located is not None:
            _locate_lines(
                n, lines[located.start : located.end], artefact.first_line + located.start
            )
        n.label_managers = _label_managers(meta.get("managedFields", []))
        nodes.append(n)
    repeated = {k: v for k, v in seen.items() if v}
    if repeated:
        name, times = next(iter(repeated.items()))
        more = f" (and {len(repeated) - 1} other node(s))" if len(repeated) > 1 else ""
        nodes[0].warnings.append(
            f"node {name} is shown {times + 1} times{more}; the first document is read"
        )
    if not nodes:
        # nothing of the object was read: every section is unknown, not empty (an empty one
        # would read as "no GPU resource, no gpu=on label" and convict the node)
        n = NodeFacts(
            None, artefact.file.name, artefact.first_line, "yaml", frozenset(), warnings=warnings
        )
        n.warnings.append("no Node object could be read")
        nodes.append(n)
    return nodes


def _locate_lines(n: NodeFacts, lines: list[str], first_line: int) -> None:
    """The lines that cite the node's annotations, resources, labels, taints and conditions."""
    n.line_of = _locate(lines, first_line, list(n.annotations))
    paths: list[tuple[str, ...]] = [
        ("status", sec, res)
        for sec in ("allocatable", "capacity")
        for res in (n.allocatable if sec == "allocatable" else n.capacity)
    ]
    paths += [("metadata", "labels", k) for k in n.labels] + [
        ("spec", "taints"),
        ("status", "conditions"),
    ]
    for path, line in yaml_lines(lines, first_line, paths).items():
        key = f"{path[1]}.{path[2]}" if len(path) == 3 else path[1]
        n.line_of.setdefault(key.replace("labels.", "label."), line)


def keep_nodes(nodes: list[NodeFacts]) -> tuple[list[NodeFacts], str | None]:
    """At most MAX_NODES named nodes, those with GPU evidence (HAMi annotations, GPU resources or
    labels) first, in bundle order; and a warning naming what was left out."""
    named = [n for n in nodes if n.form != "fragment"]
    if len(named) <= MAX_NODES:
        return nodes, None
    order = sorted(range(len(named)), key=lambda i: (not _gpu_evidence(named[i]), i))
    kept = {id(named[i]) for i in order[:MAX_NODES]}
    left = [named[i].name or "(unnamed)" for i in sorted(order[MAX_NODES:])]
    shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
    note = (
        f"{len(named)} nodes in the bundle: {MAX_NODES} are analysed (those with GPU evidence first), "
        f"{len(left)} are not ({shown})"
    )
    return [n for n in nodes if n.form == "fragment" or id(n) in kept], note


def _gpu_evidence(n: NodeFacts) -> bool:
    keys = [*n.annotations, *n.capacity, *n.allocatable, *n.labels]
    return any(k.startswith(("hami.io/", "4pd.io/")) or "gpu" in k.lower() for k in keys)


_YAML_SECTIONS = {k: k for k in ("labels", "annotations", "taints", "capacity", "allocatable")}
_YAML_SECTIONS |= {"conditions": "conditions", "images": "images", "nodeInfo": "system"}
_YAML_KEY_RE = re.compile(r"^\s*([\w-]+):\s*$")


def _elided_sections(lines: list[str]) -> frozenset[str]:
    """The node sections holding a paste's mark of lines left out ("....." under `capacity:`):
    their other keys are unknown, not absent. A mark at the margin leaves out whole sections,
    which then do not show at all. One pass, the keys open above each line on a stack (a
    search upwards from each mark was quadratic in a paste of marks). kubectl prints a list's
    items at their key's indent (`taints:` then `- effect: ...`): an item closes only the items
    and deeper lines before it, and a mark aligned with the items is one of them."""
    cut: set[str] = set()
    # (indent, key of a block or None, whether it is a list item), innermost last
    open_keys: list[tuple[int, str | None, bool]] = []
    for line in lines:
        body = line.lstrip()
        if not body:
            continue
        indent = len(line) - len(body)
        mark = ELISION_RE.match(line) is not None
        item = body.startswith("- ") or body == "-"
        among_items = False
        while open_keys and open_keys[-1][0] >= indent:
            top_indent, _key, top_item = open_keys[-1]
            if top_indent == indent and not top_item and (item or (mark and among_items)):
                break  # the key whose list this item or mark belongs to
            among_items = among_items or (top_indent == indent and top_item)
            open_keys.pop()
        if mark:
            key = open_keys[-1][1] if open_keys else None
            if indent and key in _YAML_SECTIONS:
                cut.add(_YAML_SECTIONS[key])
            continue
        m = _YAML_KEY_RE.match(line)
        open_keys.append((indent, m[1] if m else None, item))
    return frozenset(cut)


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
    cut: set[str] = set()  # sections a mark of lines left out is in
    section = None
    last_key: str | None = None
    for i, raw in enumerate(text.split("\n")):
        lineno = artefact.first_line + i
        if ELISION_RE.match(raw):
            if raw[:1].isspace() and section is not None and section in _DESCRIBE_SECTIONS:
                cut.add(_DESCRIBE_SECTIONS[section])  # lines of this section left out
            else:  # at the margin: whole sections left out, the one above ended
                section = None
            last_key = None
            continue
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
            if ELISION_RE.match(rest) and section in _DESCRIBE_SECTIONS:
                cut.add(_DESCRIBE_SECTIONS[section])  # `Labels:  ...`: its lines left out
            elif rest and rest != "<none>":
                _describe_item(n, section, rest, lineno)
                last_key = _last_annotation(n, section)
            continue
        body = raw.strip()
        if not body or section is None:
            continue
        if section in ("Capacity", "Allocatable") and body.endswith(":"):
            # `memory:` without its value: the paste ends there
            cut.add(_DESCRIBE_SECTIONS[section])
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
    n.partial = frozenset(seen & cut)
    n.sections = _uncut(n, frozenset(seen - cut))
    return n


def shows_hami_annotations(n: NodeFacts) -> bool:
    """Whether the node's HAMi annotations can be read: its annotations are shown whole, or in
    part (describe's `...`) with HAMi's among those shown."""
    if "annotations" in n.sections:
        return True
    return "annotations" in n.shown and any(
        k.startswith(("hami.io/", "4pd.io/")) for k in n.annotations
    )


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
        parts = [p.strip("*") for p in re.split(r"\s{2,}", body)]  # Markdown bold around a row
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
