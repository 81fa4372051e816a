"""The report: immutable, typed, one entry per node. Renderers read only this; datetimes stay
datetimes until a renderer formats them."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, fields, is_dataclass
from typing import TYPE_CHECKING, Any

import regex

from analyzer.bundle.model import InputWarning
from analyzer.confidence import RANK
from analyzer.facts.model import Evidence
from analyzer.parse.annotations import GpuDevice
from analyzer.rules.model import SEVERITIES, Step

if TYPE_CHECKING:  # the stages below build these rows; the report only carries them
    from analyzer.decisions import Decision
    from analyzer.timeline import Episode

SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
CONFIDENCE_RANK = RANK


@dataclass(frozen=True)
class Finding:
    """A rule that fired, with its texts and evidence."""

    rule_id: str
    title: str
    category: str
    severity: str
    kind: str  # fault | normal | ok
    link: str | None
    case: int | None
    confidence: str
    confidence_reason: str
    explanation: str
    remediation: tuple[Step, ...]
    references: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    priority: int = 50
    consequences: tuple[Finding, ...] = ()  # findings this cause explains


@dataclass(frozen=True)
class NotEvaluated:
    """A rule that could not be decided, and the kinds that would decide it."""

    rule_id: str
    title: str
    missing: tuple[str, ...]


@dataclass(frozen=True)
class NextStep:
    """One item of what to collect next (`report/next_steps.py`); the output's `collect` list."""

    kind: str
    title: str
    command: str
    where: str  # cluster | node (run it on the GPU node)
    why: str
    needs: tuple[str, ...] = ()  # shell variables the user must set (values the bundle lacks)


@dataclass(frozen=True)
class LinkState:
    """The state of one registration link (ok, broken, unknown) and the finding that says so."""

    link: str
    state: str  # ok | broken | unknown
    reason: str
    rule_id: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The node's verdict: its first fault (and the faults as certain as it), else its state."""

    rule_id: str | None
    category: str
    severity: str
    title: str
    case: int | None = None
    confidence: str = "high"
    confidence_reason: str = ""
    competing: tuple[str, ...] = ()  # rule ids of other causes as certain as this one

    @property
    def likely(self) -> bool:
        """Wording for renderers: a verdict below high confidence is 'likely'."""
        return self.confidence != "high" and self.category not in ("inconclusive",)


@dataclass(frozen=True)
class VersionClue:
    """A clue to the HAMi version, as the report shows it."""

    range: str
    reason: str
    where: str


@dataclass(frozen=True)
class VersionInfo:
    """The HAMi version the bundle points to, and the clues for and against it."""

    range: str | None
    summary: str
    evidence: tuple[VersionClue, ...] = ()
    conflicts: tuple[VersionClue, ...] = ()
    components: tuple[tuple[str, str], ...] = ()  # (component, range) of toolkit, operator, ...
    missing: str | None = None  # unknown range: the clues the bundle lacked


@dataclass(frozen=True)
class ClockInfo:
    """When the bundle was collected, as far as it says."""

    collected_at: dt.datetime | None
    year: int | None
    how: str
    missing: str | None = None  # undated: the clues the bundle lacked


@dataclass(frozen=True)
class NamespaceInfo:
    """The namespace the printed commands address HAMi in, and whether the bundle states it."""

    name: str
    stated: bool  # False: nothing in the bundle says; the chart's usual namespace is assumed
    how: str  # the sentence every output shows
    where: str | None = None  # file:line of the statement


@dataclass(frozen=True)
class RegisterInfo:
    """The node's device register: its annotation or log line, decoded."""

    key: str
    status: str
    source: str  # annotation | log
    format: str | None = None
    error: str | None = None
    text: str = ""
    devices: tuple[GpuDevice, ...] = ()


@dataclass(frozen=True)
class HandshakeInfo:
    """The node's handshake annotation and how old it was at collection."""

    present: bool
    key: str = "hami.io/node-handshake"
    state: str | None = None
    value: str | None = None
    time: dt.datetime | None = None
    age_seconds: float | None = None
    other_vendor_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class TimelineRow:
    """One event of the node's timeline."""

    time: dt.datetime | None
    source: str
    file: str
    line: int
    severity: str | None
    signature: str | None
    message: str
    findings: str | None = None


@dataclass(frozen=True)
class ArtefactRow:
    """One artefact of the inventory."""

    file: str
    kind: str
    reason: str
    first_line: int
    size: int


@dataclass(frozen=True)
class LogStatsRow:
    """A log's statistics, as the report shows them."""

    file: str
    kind: str
    first_line: int
    lines: int
    klog_lines: int
    severities: dict[str, int]
    first: str | None
    last: str | None
    containers: tuple[str, ...]
    hard_wrap_joins: int
    truncated_last_line: bool
    all_lines_kept: bool
    signature_counts: dict[str, int]
    restarts: int | None


@dataclass(frozen=True)
class NodeReport:
    """Everything the report says about one node."""

    node: str | None
    primary: Verdict
    findings: tuple[Finding, ...]  # causes; consequences sit under them
    links: tuple[LinkState, ...]
    not_evaluated: tuple[NotEvaluated, ...]
    not_applicable: tuple[str, ...]
    not_fired: tuple[str, ...]
    explained_away: tuple[str, ...]  # fired, but their `unless` held
    rule_errors: tuple[str, ...]
    collect: tuple[NextStep, ...]  # the next steps (JSON key `collect`, a stable output field)
    version: VersionInfo
    clock: ClockInfo
    namespace: NamespaceInfo
    register: RegisterInfo | None
    handshake: HandshakeInfo | None
    decisions: tuple[Decision, ...] = ()
    timeline: tuple[TimelineRow, ...] = ()
    timeline_total: int = 0
    episodes: tuple[Episode, ...] = ()
    clock_issues: tuple[str, ...] = ()

    def faults(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "fault"]

    def normals(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "normal"]

    def all_findings(self) -> list[Finding]:
        """Causes and their consequences, flattened."""
        return flatten(self.findings)

    @property
    def names_namespace(self) -> bool:
        """Whether a command the report prints (a fix, a next step) names HAMi's namespace: then
        the report says where that namespace came from (`namespace.how`).

        >>> ns = NamespaceInfo("kube-system", False, "")
        >>> n = NodeReport(None, None, (), (), (), (), (), (), (), (), None, None, ns, None, None)
        >>> n.names_namespace
        False
        """
        token = regex.compile(rf"(?<![\w.-]){regex.escape(self.namespace.name)}(?![\w.-])")
        commands = [s.command for f in self.all_findings() for s in f.remediation if s.command]
        commands += [c.command for c in self.collect]
        return any(token.search(c) for c in commands)


def flatten(findings) -> list[Finding]:
    """Causes followed by their consequences."""
    return [g for f in findings for g in (f, *f.consequences)]


@dataclass(frozen=True)
class Report:
    """The whole report: each node's, the inventory and the input's warnings."""

    nodes: tuple[NodeReport, ...]  # the worst node first
    inventory: tuple[ArtefactRow, ...]
    input_warnings: tuple[InputWarning, ...]  # the facts stage's first, then the parse stage's
    log_stats: tuple[LogStatsRow, ...]
    analyzer_version: str
    rules_version: str
    digest: str = ""

    @property
    def warnings(self) -> tuple[str, ...]:
        """The input warnings' texts, as every output prints them."""
        return tuple(w.text for w in self.input_warnings)

    @property
    def worst(self) -> NodeReport:
        return self.nodes[0]

    @property
    def primary(self) -> Verdict:
        return self.nodes[0].primary

    @property
    def archive(self) -> tuple[str, str]:
        """(archive, prefix) when the whole bundle is one archive: every file name then starts
        with `archive!` and usually a top folder (`collect` writes `x.tar.gz!bundle-.../logs/a`),
        which renderers name once and strip, citing paths inside the bundle. ("", "") otherwise.

        >>> r = Report((), (ArtefactRow("b.tgz!top/a.log", "", "", 1, 0), ArtefactRow("b.tgz!top/n/x", "", "", 1, 0)), (), (), "", "")
        >>> r.archive
        ('b.tgz', 'b.tgz!top/')
        """
        names = [a.file for a in self.inventory]
        heads = {n.split("!", 1)[0] for n in names if "!" in n}
        if not names or len(heads) != 1 or not all("!" in n for n in names):
            return "", ""
        archive = heads.pop()
        inner = [n.split("!", 1)[1] for n in names]
        tops = {i.split("/", 1)[0] for i in inner}
        top = tops.pop() + "/" if len(tops) == 1 and all("/" in i for i in inner) else ""
        return archive, f"{archive}!{top}"


# isinstance's type sets, made once: `str | int` written in a call makes a new union at each
# call, 5x the check itself (plain() makes ~1,700 calls for a small bundle's report)
_SCALARS = str | int | float | None
SEQUENCES = list | tuple  # the sequences JSON writes as arrays (jsonout too)


def plain(value: Any) -> Any:
    """Plain data for JSON and tables, without dataclasses.asdict's deep copies."""
    if isinstance(value, _SCALARS):  # most of a report's values
        return value
    if isinstance(value, SEQUENCES):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    cls: type = type(value)
    names = _field_names(cls)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names (dataclasses.fields builds its tuple at each call)."""
    return tuple(f.name for f in fields(cls)) if is_dataclass(cls) else None
