"""Handshake facts: hami.io/node-handshake (the NVIDIA key has no vendor suffix; -dcu, -xpu ...
belong to other vendors and say nothing about the NVIDIA GPUs)."""

from __future__ import annotations

import datetime as dt

from analyzer.facts.model import FactSet, Where
from analyzer.parse.annotations import AnnotationSpec, Handshake
from analyzer.parse.node import NodeFacts, shows_hami_annotations


def decode_all(node: NodeFacts | None, spec: AnnotationSpec) -> dict[str, Handshake]:
    """Every handshake annotation of a node, decoded once (the clock needs their times too)."""
    if node is None:
        return {}
    return {
        k: spec.decode_handshake(k, v)
        for k, v in node.annotations.items()
        if spec.handshake_vendor(k)
    }


def produce(
    node: NodeFacts | None,
    decoded: dict[str, Handshake],
    spec: AnnotationSpec,
    facts: FactSet,
    collected_at: dt.datetime | None,
) -> Handshake | None:
    """
    >>> from analyzer.dev.samples import node, annotation_spec
    >>> import datetime as dt
    >>> n = node('kind: Node\\nmetadata:\\n  name: n1\\n  annotations:\\n    hami.io/node-handshake: Requesting_2026-08-15 09:12:44\\n    hami.io/node-handshake-dcu: Deleted_2025-08-01 08:13:35')
    >>> fs = FactSet(); spec = annotation_spec()
    >>> h = produce(n, decode_all(n, spec), spec, fs, dt.datetime(2026, 8, 15, 10, 12, 44, tzinfo=dt.UTC))
    >>> fs.value("handshake.state"), fs.value("handshake.age_seconds"), fs.value("handshake.other_vendor_keys")
    ('Requesting', 3600.0, ['hami.io/node-handshake-dcu'])
    """
    if node is None or not shows_hami_annotations(node):
        return None
    facts.mark_known("handshake.")
    handshake = None
    others = []
    for key, hs in decoded.items():
        if key.endswith("-nvidia"):
            facts.put("handshake.nvidia_suffix_key", True, Where(*node.source_of(key)))
        if spec.handshake_vendor(key) == spec.default_vendor and not key.endswith("-nvidia"):
            handshake = hs
        else:
            others.append(key)
    facts.put("handshake.other_vendor_keys", sorted(others), Where(node.file, node.first_line))
    facts.put("handshake.present", handshake is not None, Where(node.file, node.first_line))
    if handshake is None:
        return None
    where = Where(*node.source_of(handshake.key))
    facts.put("handshake.state", handshake.state, where)
    facts.put("handshake.value", handshake.text, where)
    facts.put("handshake.time", handshake.time, where)
    if handshake.time and collected_at:
        facts.put("handshake.age_seconds", (collected_at - handshake.time).total_seconds(), where)
    return handshake
