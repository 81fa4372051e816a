"""Whether and how the bot answers an issue: relevance, language and the comment policy, from
rules/bot.yaml and the action's inputs. Pure functions of the report and the issue text.

>>> share = LanguagePolicy(0.2)
>>> share.detect("The device plugin crashes on start"), share.detect("设备插件启动后崩溃 device plugin")
('en', 'zh')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import regex
import yaml

from analyzer.errors import AnalyzerError
from analyzer.parse.structured import load_yaml
from analyzer.report.model import CONFIDENCE_RANK, Report
from analyzer.rules import builtin_rules_dir

COMMENT_WHEN = ("fault", "fault-or-inconclusive", "always")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
_LATIN = regex.compile(r"[A-Za-z]")


class BotInputError(AnalyzerError):
    """A bad action input or event: one line, exit 2."""


@dataclass(frozen=True)
class LanguagePolicy:
    zh_min_share: float

    def detect(self, prose: str) -> str:
        """'zh' when CJK characters are at least the share of the prose's letters, else 'en'."""
        cjk = len(_CJK.findall(prose))
        letters = cjk + len(_LATIN.findall(prose))
        return "zh" if letters and cjk / letters >= self.zh_min_share else "en"


@dataclass(frozen=True)
class Relevance:
    not_material: frozenset[str]
    words: regex.Pattern

    def material(self, report: Report) -> list[str]:
        """The artefacts that are bundle material (a node object, a HAMi log, ...)."""
        return [a.file for a in report.inventory if a.kind not in self.not_material]

    def relevant(self, report: Report, text: str) -> bool:
        return bool(self.material(report)) or self.words.search(text) is not None


@dataclass(frozen=True)
class BotConfig:
    relevance: Relevance
    language: LanguagePolicy


@functools.cache
def load_config() -> BotConfig:
    doc = load_yaml((builtin_rules_dir() / "bot.yaml").read_text(encoding="utf-8"))
    rel = doc["relevance"]
    words = regex.compile("|".join(f"(?:{w})" for w in rel["words"]), regex.I)
    return BotConfig(
        Relevance(frozenset(rel["not_material"]), words),
        LanguagePolicy(float(doc["language"]["zh"]["min_share"])),
    )


@dataclass(frozen=True)
class Options:
    """The action's inputs that shape the decision."""

    min_confidence: str = "medium"
    comment_when: str = "fault-or-inconclusive"
    labels: dict[str, str] = field(default_factory=dict)  # category -> issue label

    def __post_init__(self) -> None:
        if self.min_confidence not in CONFIDENCE_RANK:
            raise BotInputError(
                f"min-confidence {self.min_confidence!r} not one of {', '.join(CONFIDENCE_RANK)}"
            )
        if self.comment_when not in COMMENT_WHEN:
            raise BotInputError(
                f"comment-when {self.comment_when!r} not one of {', '.join(COMMENT_WHEN)}"
            )


def parse_labels(text: str) -> dict[str, str]:
    """The `labels` input: a YAML or JSON mapping from category to label ('' is none).

    >>> parse_labels('plugin-crash-nvml: "bug: nvml"\\nhealthy: ')
    {'plugin-crash-nvml': 'bug: nvml'}
    """
    if not text.strip():
        return {}
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as exc:
        raise BotInputError(f"labels is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) for k in doc):
        raise BotInputError("labels must be a mapping from category to label")
    from analyzer.rules.model import CATEGORIES

    unknown = sorted(set(doc) - set(CATEGORIES))
    if unknown:
        raise BotInputError(f"labels: unknown category {unknown[0]!r}")
    return {k: str(v) for k, v in doc.items() if v not in (None, "")}


@dataclass(frozen=True)
class Decision:
    category: str
    rule_id: str
    confidence: str
    verdict: (
        str  # fault | inconclusive | healthy, a fault below min-confidence counting as inconclusive
    )
    relevant: bool
    comment: bool
    labels: frozenset[str]  # the labels of the map the issue should carry now
    why: str


def decide(report: Report, text: str, options: Options, config: BotConfig) -> Decision:
    p = report.primary
    fault = p.category not in ("healthy", "inconclusive")
    sure = CONFIDENCE_RANK[p.confidence] <= CONFIDENCE_RANK[options.min_confidence]
    verdict = (
        "fault" if fault and sure else ("healthy" if p.category == "healthy" else "inconclusive")
    )
    allowed = {
        "fault": {"fault"},
        "fault-or-inconclusive": {"fault", "inconclusive"},
        "always": {"fault", "inconclusive", "healthy"},
    }[options.comment_when]
    relevant = config.relevance.relevant(report, text)
    comment = relevant and verdict in allowed
    # a fault below the bar is labelled as what it counts as: inconclusive
    label = options.labels.get(p.category if sure or not fault else "inconclusive")
    label = label if relevant else None
    if not relevant:
        why = "no bundle material and no HAMi/GPU wording"
    elif fault and not sure:
        why = f"{p.category} at {p.confidence} confidence, below min-confidence {options.min_confidence}"
    else:
        why = f"{verdict} verdict, comment-when {options.comment_when}"
    return Decision(
        p.category,
        p.rule_id or "",
        p.confidence,
        verdict,
        relevant,
        comment,
        frozenset([label] if label else []),
        why,
    )
