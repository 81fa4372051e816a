"""Typed rule and signature definitions, as loaded from the YAML files, and the rule set split
into the parts each stage needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analyzer.catalogue.datafiles import DecisionSpec, EpisodeSpec
from analyzer.catalogue.kinds import Catalogue
from analyzer.catalogue.signatures import Signature
from analyzer.confidence import LEVELS as STRENGTHS
from analyzer.packed import packed
from analyzer.rules.conditions import Cond
from analyzer.versions import ANY, Range

SEVERITIES = ("critical", "error", "warning", "info")
KINDS = ("fault", "normal", "ok")
LINKS = ("count", "spec", "liveness", "runtime", "platform", "scheduling")
CONFIDENCES = STRENGTHS
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
class Step:
    """One step of a fix: what to do, and the command that does it."""

    text: str
    command: str | None = None


@dataclass(frozen=True)
class Translation:
    """A rule's texts in another language: the same templates reworded. Remediation is one text
    per English step; the commands are the English steps' own (they are not words)."""

    title: str
    explanation: str
    remediation: tuple[str, ...] = ()


LANGUAGES = ("en", "zh")


# read only when the rule fires, by `rules show` and `rules test` (analyzer/packed.py)
@packed("explanation", "remediation", "references", "zh", "tests")
@dataclass(frozen=True)
class Rule:
    """A diagnosis rule of rules/: its condition and what it says when it holds."""

    id: str
    title: str
    severity: str
    kind: str
    category: str
    when: Cond
    file: str
    line: int
    link: str | None = None
    case: int | None = None
    priority: int = 50
    confidence: str = "high"  # the most this rule can claim; evidence may lower it
    summary: str = ""
    versions: Range = ANY
    component_versions: dict[str, Range] = field(default_factory=dict)
    unless: Cond | None = None  # true: explained away; unknown: fires, one confidence level lower
    explains: tuple[str, ...] = ()  # rules whose findings are consequences of this one
    collect: tuple[str, ...] = ()  # kinds that would confirm or overturn this verdict
    explanation: str = ""
    remediation: tuple[Step, ...] = ()
    references: tuple[str, ...] = ()
    tests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    disabled: bool = False
    zh: Translation | None = None  # Chinese texts; without them a Chinese comment uses English

    def texts(self, lang: str = "en") -> tuple[str, str, tuple[Step, ...]]:
        """Title, explanation and remediation templates in `lang`, English when untranslated."""
        tr = self.zh if lang == "zh" else None
        if tr is None:
            return self.title, self.explanation, self.remediation
        steps = tuple(
            Step(t, s.command) for t, s in zip(tr.remediation, self.remediation, strict=True)
        )
        return tr.title, tr.explanation, steps


@dataclass
class RuleSet:
    """Everything loaded from rules/, split by the stage that uses it: the catalogue drives
    recognition and collection, the signatures the scan, the annotation spec the decoders, the
    rules the engine, episodes and decisions the timeline."""

    catalogue: Catalogue
    signatures: dict[str, Signature]
    rules: dict[str, Rule]
    annotations: Any  # parse.annotations.AnnotationSpec
    files: list[str]
    episodes: EpisodeSpec = field(default_factory=EpisodeSpec)
    decisions: tuple[DecisionSpec, ...] = ()
    version: str = ""  # digest of the rule files, cited by every diagnosis
    warnings: list[str] = field(default_factory=list)  # lint findings that do not block loading
    # parse.matcher.Matcher: the signatures' scan, built with the rule set and cached with it
    # (building it cost a small run ~3 ms); None: built when first asked
    matcher: Any = field(default=None, compare=False, repr=False)

    @property
    def fact_inputs(self):
        """What the facts stage needs: signatures, kinds and annotation formats."""
        from analyzer.facts.producers import FactInputs

        return FactInputs(self.signatures, self.catalogue, self.annotations)
