"""The engine's output: findings with evidence, link states, what was not evaluated."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

SEVERITY_RANK = {"critical": 0, "error": 1, "warning": 2, "info": 3}


@dataclass
class Evidence:
    kind: str  # log | fact | absence
    file: str | None = None
    line: int | None = None
    text: str | None = None
    path: str | None = None
    value: Any = None
    span: tuple[int, int] | None = None
    signature: str | None = None
    count: int | None = None  # total matching lines (evidence lists only the first few)


@dataclass
class Step:
    text: str
    command: str | None = None


@dataclass
class Finding:
    rule_id: str
    title: str
    category: str
    severity: str
    kind: str
    link: str | None
    case: int | None
    explanation: str
    remediation: list[Step]
    references: list[str]
    evidence: list[Evidence]
    priority: int = 50


@dataclass
class NotEvaluated:
    rule_id: str
    title: str
    missing: list[str]


@dataclass
class Collect:
    source: str
    title: str
    command: str
    needed_by: list[str]


@dataclass
class LinkState:
    link: str
    state: str  # ok | broken | unknown
    reason: str
    rule_id: str | None = None


@dataclass
class Primary:
    rule_id: str | None
    category: str
    severity: str
    title: str
    case: int | None = None


@dataclass
class Diagnosis:
    node: str | None
    primary: Primary
    findings: list[Finding]
    links: list[LinkState]
    not_evaluated: list[NotEvaluated]
    not_applicable: list[str]
    not_fired: list[str]
    rule_errors: list[str]
    collect: list[Collect]
    version: dict[str, Any]
    clock: dict[str, Any]
    register: dict[str, Any] | None
    handshake: dict[str, Any] | None
    inventory: list[dict[str, Any]]
    warnings: list[str]
    log_stats: list[dict[str, Any]]
    other_nodes: list[str] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    timeline_total: int = 0
    episodes: list[dict[str, Any]] = field(default_factory=list)
    clock_issues: list[str] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)  # pod x node scheduler outcomes
    analyzer_version: str = ""
    rules_version: str = ""

    def faults(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "fault"]

    def normals(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "normal"]

    def to_dict(self) -> dict[str, Any]:
        return _as_plain_data(self)


def _as_plain_data(value: Any) -> Any:
    """`dataclasses.asdict` without its deep copies (a tenth of a small bundle's run): a
    diagnosis is not changed once built, so its leaves can be shared."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_plain_data(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list | tuple):
        return type(value)(_as_plain_data(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_plain_data(v) for k, v in value.items()}
    return value
