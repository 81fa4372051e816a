"""Register facts: the GPUs the device plugin published in hami.io/node-nvidia-register, decoded
with the formats of rules/annotations.yaml (omitempty JSON, 9/7/5-field CSV). Without a Node
object, register data a HAMi log printed (the plugin's patch, the scheduler's encoded devices)
stands in, marked `register.from = log`."""

from __future__ import annotations

import json
import re

from analyzer.facts.model import UNKNOWN, FactSet, Match, Where
from analyzer.parse.annotations import AnnotationSpec, RegisterAnnotation
from analyzer.parse.node import NodeFacts, shows_hami_annotations
from analyzer.structured import load_json

NVIDIA = "nvidia"


_CSV_RECORD_START = re.compile(r"[\w.-]+,\d+,")


def _cut_off(value: str) -> bool:
    """A pasted value that stops mid-way: describe's `...`, a quote never closed, CSV records
    without the `:` every record ends with, or JSON that ends early.

    >>> _cut_off("'GPU-3fe7,10,24564,100,NVIDIA-NVIDIA"), _cut_off("GPU-3fe7,10,24564,100,NVIDIA-A10")
    (True, True)
    >>> _cut_off("GPU-3fe7,10,24564,100,NVIDIA-A10,0,true:"), _cut_off("'GPU-1,10,1,100,T,0,true:'")
    (False, False)
    >>> _cut_off('[{"id":"GPU-4b3f","count":10,"type":"NVIDIA GeForce RTX 4'), _cut_off('[{"id":"GPU-1",,}]')
    (True, False)
    """
    v = value.rstrip()
    if v.endswith(("...", "…")):
        return True
    if v[:1] in ("'", '"') and (len(v) < 2 or v[-1] != v[0]):
        return True
    if ":" not in v and _CSV_RECORD_START.match(v.strip("'\"")):
        return True
    if v.startswith("["):
        try:
            load_json(v)
        except json.JSONDecodeError as exc:
            # a string never closed runs to the end of the text: the paste stopped inside it
            return exc.pos >= len(v) - 2 or exc.msg.startswith("Unterminated string")
        except ValueError:
            return False
    return False


def _normalised(value: str) -> str:
    """Log lines print Go structs as JSON with capitalised keys ({"Id": ..., "Health": true})."""
    v = value.strip()
    if not v.startswith("["):
        return v
    try:
        data = load_json(v)
    except ValueError:
        return v
    if isinstance(data, list) and all(isinstance(d, dict) for d in data):
        return json.dumps([{str(k).lower(): x for k, x in d.items()} for d in data])
    return v


# (annotation key, its text, where it came from: "annotation" | "log", where, cut by kubectl)
_Found = tuple[str, str, str, Where, bool]


def _from_annotation(node: NodeFacts, spec: AnnotationSpec) -> _Found | None:
    """The node's NVIDIA register annotation, and whether kubectl describe cut its value."""
    key = next((k for k in node.annotations if spec.register_vendor(k) == NVIDIA), None)
    if key is None:
        return None
    value = node.annotations[key]
    cut = key in node.elided or (node.form != "yaml" and _cut_off(value))
    return key, value, "annotation", Where(*node.source_of(key)), cut


def _from_log(match: Match, spec: AnnotationSpec) -> _Found | None:
    """The register value a device plugin logged, when it decodes."""
    candidate = _normalised(match.captures.get("register") or match.captures.get("devices") or "")
    decoded = spec.decode_register("hami.io/node-nvidia-register", candidate)
    if decoded.status not in ("ok", "empty"):
        return None
    return decoded.key, candidate, "log", Where(match.file, match.line), False


def produce(
    node: NodeFacts | None,
    spec: AnnotationSpec,
    facts: FactSet,
    from_log: Match | None = None,
) -> RegisterAnnotation | None:
    """
    >>> from analyzer.dev.samples import node, annotation_spec
    >>> fs = FactSet()
    >>> r = produce(node('kind: Node\\nmetadata:\\n  name: n1\\n  annotations:\\n    hami.io/node-nvidia-register: \\'[{"id":"GPU-1","count":10,"devmem":24564}]\\''), annotation_spec(), fs)
    >>> fs.value("register.status"), fs.value("register.unhealthy_count"), fs.value("register.health_absent_count")
    ('ok', 1, 1)
    >>> fs = FactSet(); _ = produce(node('[{"id":"GPU-1","count":10,"health":true},{"id":"G', "node-annotations"), annotation_spec(), fs)
    >>> fs.value("register.status")
    'elided'
    """
    annotated = node if node is not None and shows_hami_annotations(node) else None
    found = None
    if annotated is not None:
        others = sorted(
            k for k in annotated.annotations if spec.register_vendor(k) not in (None, NVIDIA)
        )
        facts.put("register.other_vendor_keys", others, Where(annotated.file, annotated.first_line))
        found = _from_annotation(annotated, spec)
    if found is None and from_log is not None:
        found = _from_log(from_log, spec)
    if found is None:
        if annotated is not None:
            at = Where(annotated.file, annotated.first_line)
            facts.put("register.present", False, at)
            facts.put("register.status", "absent", at)
            for path in ("format", "error", "text", "from"):
                facts.put(f"register.{path}", None, at)
        return None
    key, value, origin, where, cut = found
    reg = spec.decode_register(key, value, cut)
    if cut and reg.status != "ok":
        reg = spec.decode_register(key, value, True)
    facts.put("register.present", True, where)
    facts.put("register.from", origin, where)
    facts.put("register.status", reg.status, where)
    facts.put("register.format", reg.format, where)
    facts.put("register.error", reg.error, where)
    facts.put("register.text", reg.text, where)
    devs = reg.devices
    if reg.status not in ("ok", "empty"):
        return reg
    allocatable = facts.lookup("node.allocatable.gpu")
    if (
        origin == "annotation"
        and devs
        and allocatable is not UNKNOWN
        and isinstance(allocatable.value, int)
    ):
        gap = allocatable.value - sum(d.count for d in devs)
        facts.put("register.allocatable_gap", gap, where)  # only where both sides are known
    json_fmt = reg.format == "json"
    for path, v in {
        "register.device_count": len(devs),
        "register.unhealthy_count": sum(1 for d in devs if d.health is False),
        "register.health_unknown_count": sum(1 for d in devs if d.health is None),
        "register.health_absent_count": sum(1 for d in devs if json_fmt and "health" in d.absent),
        "register.split_total": sum(d.count for d in devs),
        "register.split_counts": sorted({d.count for d in devs}),
        "register.max_devmem": max((d.devmem for d in devs), default=None),
        "register.max_devcore": max((d.devcore for d in devs), default=None),
        "register.types": sorted({d.type for d in devs}),
        "register.modes": sorted({d.mode for d in devs if d.mode}),
        "register.index_or_numa_absent": sum(
            1 for d in devs if json_fmt and {"index", "numa"} & set(d.absent)
        ),
    }.items():
        facts.put(path, v, where)
    return reg
