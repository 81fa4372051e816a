"""The artefact-kind catalogue (rules/kinds.yaml): one vocabulary for recognition, parsing and
the commands that collect each kind. It sits below the bundle layer and knows nothing of rules."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import regex
import yaml

from analyzer.catalogue.hami import HamiNames, load_hami_names
from analyzer.errors import RuleLoadError
from analyzer.structured import FastLoader

FAMILIES = ("object", "log", "config", "table", "text", "meta", "junk")
NOT_EVIDENCE = ("meta", "junk")  # about the bundle (a collection manifest) or unusable
KIND_KEYS = {
    "title",
    "family",
    "parser",
    "k8s_kind",
    "counts_as",
    "collect",
    "where",
    "markers",
    "containers",
    "scanned",
    "basic",
    "title_zh",
    "packages",
    "recognise",
    "weak",
    "assigned_by",
    "per_node",
    "pod_templates",
    "record_start",
    "unscanned",
}
LINE = "__line__"
KEY_LINES = "__key_lines__"


def unknown_keys(raw: dict, allowed: Collection[str]) -> list[str]:
    """The keys of a catalogue mapping that its table does not declare, sorted; the loader's
    own bookkeeping keys (`__line__`, ...) are not the author's."""
    return sorted(k for k in set(raw) - set(allowed) if not str(k).startswith("__"))


ATTRIBUTION_KEYS = ("node_paths", "pod_paths", "node_lines")
SCANNED_FAMILIES = ("log", "text", "table")


@dataclass(frozen=True)
class Declared:
    """A mapping of the catalogue as written, with the file:line it starts at."""

    where: str
    spec: dict


@dataclass(frozen=True)
class Kind:
    """An artefact kind of rules/kinds.yaml: how it is parsed, scanned and asked for."""

    id: str
    title: str
    family: str
    # each makes its own facts of the artefact (a Deployment: its values, for HAMi's namespace, and
    # its GPU pod template as a pod)
    parsers: tuple[str, ...] = ()
    k8s_kinds: tuple[str, ...] = ()  # the top-level `kind:` values of the objects of this kind
    counts_as: tuple[str, ...] = ()
    collect: str = ""  # shell command; "" when there is nothing to ask for
    where: str = "cluster"  # cluster | node (the command runs on the GPU node)
    marker: regex.Pattern | None = None  # one alternation of the kind's marker lines
    containers: tuple[str, ...] = ()
    # whether its lines are searched for signatures: by default everything textual but parsed
    # objects and configs, whose values become facts instead (a node's YAML holds no log lines)
    scanned: bool = False
    basic: bool = False  # asked for first when nothing points anywhere
    title_zh: str = ""  # the title in Chinese, for a Chinese issue's checklist
    # Go package paths (or build source paths) of the component that writes this log: a panic
    # whose stack names one of them is this component's crash, whatever file it was pasted in
    packages: regex.Pattern | None = None
    # its own recognition entries as declared (rules/kinds.yaml `recognise:`); their vocabulary
    # is analyzer/bundle/probes.py's, which checks and compiles them
    recognise: tuple[Declared, ...] = ()
    weak: bool = False  # says little about what a part is: a paste is not split for it
    # the module that assigns this kind itself (a binary file, a declared issue text): no probe
    assigned_by: str = ""
    at: str = ""  # file:line of its catalogue entry
    # one node's artefact (its plugin's log, its kubelet journal): in a bundle with several
    # nodes it is evidence only for the node it is attributed to (analyzer/facts/attribution.py)
    per_node: bool = False
    # a workload's pod template is read as a pod when one of its containers asks for a resource
    # this matches (an accelerator); None: its templates are not read
    pod_templates: regex.Pattern | None = None
    # lines opening blocks of a scanned object that are not searched (what its containers run:
    # a probe's grep for an error string is no error); None: every line is
    unscanned: regex.Pattern | None = None

    @property
    def is_log(self) -> bool:
        return self.family == "log"

    @property
    def is_evidence(self) -> bool:
        return self.family not in NOT_EVIDENCE


@dataclass(frozen=True)
class AttributionHints:
    """Where a bundle says which node an artefact is about (kinds.yaml `attribution:`): paths
    with a `node` or `pod` capture, and lines with a `node` capture."""

    node_paths: tuple[regex.Pattern, ...] = ()
    pod_paths: tuple[regex.Pattern, ...] = ()
    node_lines: tuple[regex.Pattern, ...] = ()


@dataclass(frozen=True, eq=False)  # one catalogue is itself: compiled recognition is cached by it
class Catalogue:
    """Every artefact kind of rules/kinds.yaml and the shared recognition steps."""

    kinds: dict[str, Kind]
    by_container: dict[str, str] = field(default_factory=dict)
    by_k8s_kind: dict[str, str] = field(default_factory=dict)
    recognition: Declared | None = None  # the top-level `recognition:` (shared steps)
    attribution: AttributionHints = field(default_factory=AttributionHints)
    hami: HamiNames = field(default_factory=HamiNames)  # which names are HAMi's own
    # recognition's patterns (markers, probes' lines) by their text: literals one of which each
    # match holds, looked for before the pattern is searched (worked out by the rule loader with
    # parse.literals and cached with the rules; a pattern not here is searched in every text)
    literals: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # every kind's `record_start`, as one pattern: a pasted line opening with one opens a record
    # whatever the text it is pasted in (an issue's prose holds HAMi-core lines too)
    record_start: regex.Pattern | None = None

    def __contains__(self, kind_id: str) -> bool:
        return kind_id in self.kinds

    def __getitem__(self, kind_id: str) -> Kind:
        return self.kinds[kind_id]

    def get(self, kind_id: str) -> Kind | None:
        return self.kinds.get(kind_id)

    def basic(self) -> list[Kind]:
        """The kinds every diagnosis starts from, in catalogue order."""
        return [k for k in self.kinds.values() if k.basic]

    def owner_of(self, where: str) -> str | None:
        """The kind whose component a Go package path or source file path belongs to."""
        for k in self.kinds.values():
            if k.packages is not None and k.packages.search(where):
                return k.id
        return None

    def satisfied(self, present: set[str]) -> set[str]:
        """Kind ids a bundle holding `present` provides (describe output counts as the object)."""
        out = set(present)
        for kid in present:
            k = self.kinds.get(kid)
            if k is not None:
                out.update(k.counts_as)
        return out


def _patterns(raw, what: str, problems: list[str]) -> list[str]:
    """Regexes of a kind as `(?:...)` groups to join; a bad one is a problem naming it."""
    out = []
    for m in raw or []:
        try:
            regex.compile(m)
            out.append(f"(?:{m})")
        except regex.error as exc:
            problems.append(f"{what} {m!r}: {exc}")
    return out


class _LineLoader(FastLoader):
    """The fast loader, recording the line of every mapping (for file:line errors)."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        mapping = super().construct_mapping(node, deep=deep)
        mapping[LINE] = node.start_mark.line + 1
        mapping[KEY_LINES] = {k.value: k.start_mark.line + 1 for k, _ in node.value}
        return mapping


def _names(raw) -> tuple[str, ...]:
    """A key that names one thing or a list of them (`parser: pod`, `k8s_kind: [Job, CronJob]`)."""
    if raw is None:
        return ()
    return tuple(str(x) for x in raw) if isinstance(raw, list) else (str(raw),)


def _where(path: Path, spec) -> str:
    return f"{path}:{spec.get(LINE, 0) if isinstance(spec, dict) else 0}"


def _hints(raw, where: str, problems: list[str]) -> AttributionHints:
    """The `attribution:` section: each pattern compiles and has the capture its list needs."""
    if raw is None:
        return AttributionHints()
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping")
        return AttributionHints()
    for key in unknown_keys(raw, ATTRIBUTION_KEYS):
        problems.append(f"{where}: unknown key {key!r}")
    lists: dict[str, tuple[regex.Pattern, ...]] = {}
    for key in ATTRIBUTION_KEYS:
        capture = "pod" if key == "pod_paths" else "node"
        compiled = []
        for p in raw.get(key) or []:
            try:
                pattern = regex.compile(str(p))
            except regex.error as exc:
                problems.append(f"{where}: {key} {p!r}: {exc}")
                continue
            if capture not in pattern.groupindex:
                problems.append(f"{where}: {key} {p!r}: no (?P<{capture}>...) capture")
                continue
            compiled.append(pattern)
        lists[key] = tuple(compiled)
    return AttributionHints(**lists)


def load_catalogue(path: Path) -> Catalogue:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise RuleLoadError([f"{path}: cannot read the kind catalogue: {exc}"]) from exc
    problems: list[str] = []
    kinds: dict[str, Kind] = {}
    starts: list[str] = []  # every kind's `record_start:`, compiled once for the catalogue
    doc = doc if isinstance(doc, dict) else {}
    catalogued = doc.get("kinds") or {}
    for kid, spec in catalogued.items():
        if kid in (LINE, KEY_LINES):
            continue
        where = f"{path}:{catalogued[KEY_LINES].get(kid, 0)}"
        if not isinstance(spec, dict):
            problems.append(f"{where}: kind {kid}: expected a mapping")
            continue
        for key in unknown_keys(spec, KIND_KEYS):
            problems.append(f"{where}: kind {kid}: unknown key {key!r}")
        family = spec.get("family", "text")
        if family not in FAMILIES:
            problems.append(f"{where}: kind {kid}: family {family!r} not one of {FAMILIES}")
        parsers = _names(spec.get("parser"))  # checked against analyzer/parse/registry.py's table
        markers = _patterns(spec.get("markers"), f"{where}: kind {kid}: bad marker", problems)
        packages = _patterns(spec.get("packages"), f"{where}: kind {kid}: bad package", problems)
        templates = _patterns(
            spec.get("pod_templates"), f"{where}: kind {kid}: bad pod_templates", problems
        )
        starts += _patterns(
            spec.get("record_start"), f"{where}: kind {kid}: bad record_start", problems
        )
        unscanned = _patterns(
            spec.get("unscanned"), f"{where}: kind {kid}: bad unscanned", problems
        )
        entries = spec.get("recognise") or []
        if not isinstance(entries, list):
            problems.append(f"{where}: kind {kid}: recognise: expected a list of entries")
            entries = []
        kinds[kid] = Kind(
            id=kid,
            title=str(spec.get("title", kid)),
            family=family,
            parsers=parsers,
            k8s_kinds=_names(spec.get("k8s_kind")),
            counts_as=tuple(spec.get("counts_as") or ()),
            collect=" ".join(str(spec.get("collect", "")).split()),
            where=str(spec.get("where", "cluster")),
            marker=regex.compile("|".join(markers)) if markers else None,
            containers=tuple(spec.get("containers") or ()),
            scanned=bool(spec.get("scanned", family in SCANNED_FAMILIES)),
            basic=bool(spec.get("basic", False)),
            title_zh=str(spec.get("title_zh", "")),
            packages=regex.compile("|".join(packages)) if packages else None,
            recognise=tuple(Declared(_where(path, e), e) for e in entries),
            weak=spec.get("weak") is True,
            assigned_by=str(spec.get("assigned_by", "")),
            at=where,
            per_node=bool(spec.get("per_node", False)),
            pod_templates=regex.compile("|".join(templates)) if templates else None,
            # tried where a line starts: a run of blanks is read once, not from each position
            unscanned=regex.compile("(?m)^(?:" + "|".join(unscanned) + ")") if unscanned else None,
        )
    for k in kinds.values():
        for other in k.counts_as:
            if other not in kinds:
                problems.append(f"{path}: kind {k.id}: counts_as unknown kind {other!r}")
    by_k8s_kind = {name: k.id for k in kinds.values() for name in k.k8s_kinds}
    raw = doc.get("recognition")
    recognition = Declared(_where(path, raw), raw) if isinstance(raw, dict) else None
    if recognition is None:
        problems.append(f"{path}: the catalogue has no `recognition:` mapping")
    hints = _hints((doc or {}).get("attribution"), f"{path}: attribution", problems)
    hami = load_hami_names(doc.get("hami"), _where(path, doc.get("hami")) + ": hami", problems)
    if problems:
        raise RuleLoadError(problems)
    return Catalogue(
        kinds,
        by_container={c: k.id for k in kinds.values() for c in k.containers},
        by_k8s_kind=by_k8s_kind,
        recognition=recognition,
        attribution=hints,
        hami=hami,
        record_start=regex.compile(r"[ \t]*(?:" + "|".join(starts) + ")") if starts else None,
    )
