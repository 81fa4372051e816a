"""Source catalogue: what a bundle may hold, how to collect it, how to recognise its logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import regex
import yaml

from analyzer.errors import RuleLoadError


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    collect: str
    is_log: bool
    marker: regex.Pattern | None  # one alternation of the source's marker patterns
    containers: tuple[str, ...] = ()


def load_sources(path: Path) -> dict[str, Source]:
    try:
        doc = yaml.load(
            path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except (OSError, yaml.YAMLError) as exc:
        raise RuleLoadError([f"{path}: cannot read sources: {exc}"]) from exc
    out: dict[str, Source] = {}
    problems: list[str] = []
    for sid, spec in (doc or {}).get("sources", {}).items():
        markers = []
        for m in spec.get("markers", []) or []:
            try:
                regex.compile(m)
                markers.append(f"(?:{m})")
            except regex.error as exc:
                problems.append(f"{path}: source {sid}: bad marker {m!r}: {exc}")
        out[sid] = Source(
            id=sid,
            title=spec.get("title", sid),
            collect=" ".join(str(spec.get("collect", "")).split()),
            is_log=bool(spec.get("log", False)),
            marker=regex.compile("|".join(markers)) if markers else None,
            containers=tuple(spec.get("containers", []) or []),
        )
    if problems:
        raise RuleLoadError(problems)
    return out
