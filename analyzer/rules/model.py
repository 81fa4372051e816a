"""Typed rule and signature definitions, as loaded from the YAML files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from analyzer.versions import Range

SEVERITIES = ("critical", "error", "warning", "info")
KINDS = ("fault", "normal", "ok")
LINKS = ("count", "spec", "liveness", "runtime", "platform", "scheduling")
CATEGORIES = (
    "no-device-plugin-pod",
    "plugin-crash-nvml",
    "plugin-init-toolkit-wait",
    "plugin-nodename",
    "no-allocatable-kubelet-socket",
    "annotation-missing-or-stale",
    "device-unhealthy",
    "rbac-patch-forbidden",
    "scheduler-not-seeing-node",
    "scheduler-not-leader",
    "handshake-misread",
    "cdi-unresolvable",
    "runtimeclass",
    "aks-managed-conflict",
    "multiple-device-plugins",
    "resource-insufficient",
    "scheduling-other",
    "runtime-other",
    "healthy",
    "inconclusive",
)


@dataclass(frozen=True)
class Signature:
    id: str
    sources: tuple[str, ...]
    pattern: str
    compiled: regex.Pattern
    level: str
    verbosity: int
    meaning: str
    versions: Range
    implies_version: bool
    file: str
    line: int
    examples_match: tuple[str, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    node_capture: str | None = None  # capture naming the node the line is about
    prefilter: tuple[str, ...] = ()  # literals for the fast scan (default: derived from regex)
    version_capture: str | None = None  # capture holding a version (evidence)
    component: str = "hami"  # whose version the capture is: hami, toolkit, gpu-operator


@dataclass
class Rule:
    id: str
    title: str
    severity: str
    kind: str
    category: str
    link: str | None
    case: int | None
    requires: list[str | list[str]]  # a nested list means any one of them
    versions: Range
    when: dict[str, Any]
    explanation: str
    remediation: list[dict[str, str]]
    references: list[str]
    priority: int
    file: str
    line: int
    summary: str = ""
    tests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    disabled: bool = False
    component_versions: dict[str, Range] = field(default_factory=dict)


@dataclass
class RuleSet:
    sources: dict
    signatures: dict[str, Signature]
    rules: dict[str, Rule]
    annotations: Any
    files: list[str]
    episodes: dict[str, Any] = field(default_factory=dict)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    version: str = ""  # digest of the rule files, cited by every diagnosis
