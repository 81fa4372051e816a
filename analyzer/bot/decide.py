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

from analyzer.confidence import at_least
from analyzer.errors import AnalyzerError
from analyzer.report.model import CONFIDENCE_RANK, Report
from analyzer.rules import builtin_rules_dir
from analyzer.structured import load_yaml

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


ASSOCIATIONS = frozenset(
    [
        "OWNER",
        "MEMBER",
        "COLLABORATOR",
        "CONTRIBUTOR",
        "FIRST_TIME_CONTRIBUTOR",
        "FIRST_TIMER",
        "MANNEQUIN",
        "NONE",
    ]
)


@dataclass(frozen=True)
class Authors:
    """Whose comments are read with the issue: always the issue's author, and these logins
    (lower-case) and author associations; never a bot's, never the bot's own.

    >>> from analyzer.bot.github import Comment
    >>> team = Authors.of(["MEMBER", "Alice"])
    >>> [team.takes(Comment(1, "", who, kind, assoc), "rep", "hami-bot") for who, kind, assoc in [
    ...     ("rep", "User", "NONE"), ("alice", "User", "NONE"), ("bob", "User", "MEMBER"),
    ...     ("eve", "User", "NONE"), ("dependabot[bot]", "Bot", "NONE"),
    ...     ("hami-bot", "User", "MEMBER")]]
    [True, True, True, False, False, False]
    """

    logins: frozenset[str] = frozenset()
    associations: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: list[str]) -> Authors:
        """Names in ASSOCIATIONS are associations, anything else a login."""
        return cls(
            frozenset(n.lower() for n in names if n not in ASSOCIATIONS),
            frozenset(n for n in names if n in ASSOCIATIONS),
        )

    def takes(self, comment, issue_author: str, me: str) -> bool:
        who = comment.author.lower()
        if comment.by_bot or not who or who == me.lower():
            return False
        return (
            who == issue_author.lower()
            or who in self.logins
            or comment.association in self.associations
        )


@dataclass(frozen=True)
class BotConfig:
    relevance: Relevance
    language: LanguagePolicy
    authors: tuple[str, ...] = ()  # comments.authors: logins and associations read besides
    accumulate: frozenset[str] = frozenset()  # kinds that add up across the thread
    attachment_suffixes: tuple[str, ...] = ()
    max_attachments: int = 0


@functools.cache
def load_config() -> BotConfig:
    doc = load_yaml((builtin_rules_dir() / "bot.yaml").read_text(encoding="utf-8"))
    rel = doc["relevance"]
    words = regex.compile("|".join(f"(?:{w})" for w in rel["words"]), regex.I)
    return BotConfig(
        Relevance(frozenset(rel["not_material"]), words),
        LanguagePolicy(float(doc["language"]["zh"]["min_share"])),
        tuple(str(a) for a in doc["comments"]["authors"] or ()),
        frozenset(doc["comments"]["accumulate"]),
        tuple(str(s).lower() for s in doc["attachments"]["suffixes"]),
        int(doc["attachments"]["max"]),
    )


@dataclass(frozen=True)
class Options:
    """The action's inputs that shape the decision."""

    min_confidence: str = "medium"
    comment_when: str = "fault-or-inconclusive"
    labels: dict[str, str] = field(default_factory=dict)  # category -> issue label
    comment_authors: tuple[str, ...] = ()  # logins and associations read besides the author
    bot_login: str = ""  # who the bot comments as; "" asks GitHub (GET /user)

    def __post_init__(self) -> None:
        if self.min_confidence not in CONFIDENCE_RANK:
            raise BotInputError(
                f"min-confidence {self.min_confidence!r} not one of {', '.join(CONFIDENCE_RANK)}"
            )
        if self.comment_when not in COMMENT_WHEN:
            raise BotInputError(
                f"comment-when {self.comment_when!r} not one of {', '.join(COMMENT_WHEN)}"
            )


def parse_names(text: str) -> tuple[str, ...]:
    """The `comment-authors` input: logins and associations, split at commas and spaces.

    >>> parse_names("MEMBER, OWNER alice\\nbob")
    ('MEMBER', 'OWNER', 'alice', 'bob')
    """
    names = tuple(n for n in regex.split(r"[\s,]+", text) if n)
    bad = [n for n in names if not regex.fullmatch(r"[A-Za-z0-9_-][\w.\[\]-]{0,99}", n)]
    if bad:
        raise BotInputError(f"comment-authors: {bad[0][:60]!r} is not a login or an association")
    return names


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
    sure = at_least(p.confidence, options.min_confidence)
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
