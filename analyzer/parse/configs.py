"""Config-like artefacts (helm values, toolkit/containerd TOML, CDI specs, K8s objects) into
flat dotted-key dictionaries that rules can address as facts (config.<kind>.<dotted.key>)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

from analyzer.bundle.model import Artefact
from analyzer.parse.structured import load_documents

MAX_KEYS = 20_000


@dataclass
class ConfigFacts:
    kind: str
    file: str
    first_line: int
    values: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def flatten(obj: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    if len(out) > MAX_KEYS:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = obj
    return out


def parse_config(artefact: Artefact) -> ConfigFacts:
    cf = ConfigFacts(artefact.kind, artefact.file.name, artefact.first_line)
    text = artefact.text or ""
    if artefact.kind in ("toolkit-config", "containerd-config"):
        try:
            cf.values = flatten(tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            cf.warnings.append(f"TOML error: {exc}")
        return cf
    docs, warnings = load_documents(text)
    cf.warnings.extend(warnings)
    merged: dict[str, Any] = {}
    for i, d in enumerate(docs):
        flat = flatten(d)
        if len(docs) > 1:
            flat = {f"{i}.{k}": v for k, v in flat.items()} | flat
        merged.update(flat)
    cf.values = merged
    return cf
