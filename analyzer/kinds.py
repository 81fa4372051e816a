"""The artefact-kind catalogue (rules/kinds.yaml): one vocabulary for recognition, parsing and
the commands that collect each kind. It sits below the bundle layer and knows nothing of rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import regex
import yaml

from analyzer.bundle.probes import (
    UNWRAPPERS,
    MarkerStep,
    ObjectStep,
    Probe,
    Recognition,
    Step,
    UnwrapStep,
    parse_probe,
)
from analyzer.errors import RuleLoadError
from analyzer.parse.structured import FastLoader

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
}
RECOGNITION_KEYS = {"head_chars", "log_lines", "objects", "markers", "unwrap"}
LINE = "__line__"
KEY_LINES = "__key_lines__"
SCANNED_FAMILIES = ("log", "text", "table")


@dataclass(frozen=True)
class Kind:
    id: str
    title: str
    family: str
    parser: str | None = None
    k8s_kind: str | None = None
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
    recognise: tuple[Probe, ...] = ()  # its own recognition entries (rules/kinds.yaml `recognise:`)
    weak: bool = False  # says little about what a part is: a paste is not split for it
    # the module that assigns this kind itself (a binary file, a declared issue text): no probe
    assigned_by: str = ""
    at: str = ""  # file:line of its catalogue entry

    @property
    def is_log(self) -> bool:
        return self.family == "log"

    @property
    def is_evidence(self) -> bool:
        return self.family not in NOT_EVIDENCE


@dataclass(frozen=True)
class Catalogue:
    kinds: dict[str, Kind]
    by_container: dict[str, str] = field(default_factory=dict)
    by_k8s_kind: dict[str, str] = field(default_factory=dict)
    recognition: Recognition = field(default_factory=Recognition)

    def __contains__(self, kind_id: str) -> bool:
        return kind_id in self.kinds

    def __getitem__(self, kind_id: str) -> Kind:
        return self.kinds[kind_id]

    def get(self, kind_id: str) -> Kind | None:
        return self.kinds.get(kind_id)

    def basic(self) -> list[Kind]:
        """The kinds every diagnosis starts from, in catalogue order."""
        return [k for k in self.kinds.values() if k.basic]

    def log_kinds(self) -> list[Kind]:
        return [k for k in self.kinds.values() if k.is_log and k.marker is not None]

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


def _where(path: Path, spec) -> str:
    return f"{path}:{spec.get(LINE, 0) if isinstance(spec, dict) else 0}"


def load_catalogue(path: Path) -> Catalogue:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise RuleLoadError([f"{path}: cannot read the kind catalogue: {exc}"]) from exc
    problems: list[str] = []
    kinds: dict[str, Kind] = {}
    doc = doc if isinstance(doc, dict) else {}
    catalogued = doc.get("kinds") or {}
    for kid, spec in catalogued.items():
        if kid in (LINE, KEY_LINES):
            continue
        where = f"{path}:{catalogued[KEY_LINES].get(kid, 0)}"
        if not isinstance(spec, dict):
            problems.append(f"{where}: kind {kid}: expected a mapping")
            continue
        for key in sorted(set(spec) - KIND_KEYS - {LINE, KEY_LINES}):
            problems.append(f"{where}: kind {kid}: unknown key {key!r}")
        family = spec.get("family", "text")
        if family not in FAMILIES:
            problems.append(f"{where}: kind {kid}: family {family!r} not one of {FAMILIES}")
        parser = spec.get("parser")  # checked against analyzer/parse/registry.py's table
        markers = _patterns(spec.get("markers"), f"{where}: kind {kid}: bad marker", problems)
        packages = _patterns(spec.get("packages"), f"{where}: kind {kid}: bad package", problems)
        entries = spec.get("recognise") or []
        if not isinstance(entries, list):
            problems.append(f"{where}: kind {kid}: recognise: expected a list of entries")
            entries = []
        probes = tuple(
            p for e in entries if (p := parse_probe(kid, e, _where(path, e), problems)) is not None
        )
        kinds[kid] = Kind(
            id=kid,
            title=str(spec.get("title", kid)),
            family=family,
            parser=parser,
            k8s_kind=spec.get("k8s_kind"),
            counts_as=tuple(spec.get("counts_as") or ()),
            collect=" ".join(str(spec.get("collect", "")).split()),
            where=str(spec.get("where", "cluster")),
            marker=regex.compile("|".join(markers)) if markers else None,
            containers=tuple(spec.get("containers") or ()),
            scanned=bool(spec.get("scanned", family in SCANNED_FAMILIES)),
            basic=bool(spec.get("basic", False)),
            title_zh=str(spec.get("title_zh", "")),
            packages=regex.compile("|".join(packages)) if packages else None,
            recognise=probes,
            weak=spec.get("weak") is True,
            assigned_by=str(spec.get("assigned_by", "")),
            at=where,
        )
    for k in kinds.values():
        for other in k.counts_as:
            if other not in kinds:
                problems.append(f"{path}: kind {k.id}: counts_as unknown kind {other!r}")
    by_k8s_kind = {k.k8s_kind: k.id for k in kinds.values() if k.k8s_kind}
    recognition = _recognition(path, doc.get("recognition"), kinds, by_k8s_kind, problems)
    if problems:
        raise RuleLoadError(problems)
    return Catalogue(
        kinds,
        by_container={c: k.id for k in kinds.values() for c in k.containers},
        by_k8s_kind=by_k8s_kind,
        recognition=recognition,
    )


def _recognition(
    path: Path, raw, kinds: dict[str, Kind], by_k8s_kind: dict[str, str], problems: list[str]
) -> Recognition:
    """The steps of recognition in order: every kind's entries and the shared steps (objects,
    log markers, unwrapping) declared under the top-level `recognition:`. Two kinds may not
    share an order: which would win is then a matter of file order, which nobody reads."""
    where = _where(path, raw)
    if not isinstance(raw, dict):
        problems.append(f"{where}: recognition: expected a mapping ({sorted(RECOGNITION_KEYS)})")
        return Recognition()
    for key in sorted(set(raw) - RECOGNITION_KEYS - {LINE, KEY_LINES}):
        problems.append(f"{where}: recognition: unknown key {key!r}")
    steps: list[Step] = [p for k in kinds.values() for p in k.recognise]
    objects = raw.get("objects")
    if isinstance(objects, dict):
        steps.append(
            ObjectStep(
                order=_order(objects, path, problems),
                reason=str(objects.get("reason", "")),
                list_reason=str(objects.get("list_reason", "")),
                list_items=tuple(objects.get("list_items") or ()),
                by_k8s_kind=by_k8s_kind,
                where=_where(path, objects),
            )
        )
        for item in objects.get("list_items") or ():
            if item not in by_k8s_kind:
                problems.append(
                    f"{_where(path, objects)}: list_items: no kind has k8s_kind {item!r}"
                )
    else:
        problems.append(f"{where}: recognition.objects: expected a mapping (order, reason, ...)")
    markers = raw.get("markers")
    if isinstance(markers, dict):
        steps.append(
            MarkerStep(
                order=_order(markers, path, problems),
                reason=str(markers.get("reason", "")),
                markers=tuple(
                    (k.id, k.marker) for k in kinds.values() if k.is_log and k.marker is not None
                ),
                where=_where(path, markers),
            )
        )
    else:
        problems.append(f"{where}: recognition.markers: expected a mapping (order, reason)")
    for u in raw.get("unwrap") or []:
        if not isinstance(u, dict) or u.get("transform") not in UNWRAPPERS:
            problems.append(
                f"{_where(path, u)}: recognition.unwrap: expected a transform among"
                f" {sorted(UNWRAPPERS)}, an order and a reason"
            )
            continue
        steps.append(
            UnwrapStep(
                order=_order(u, path, problems),
                reason=str(u.get("reason", "{reason}")),
                unwrap=UNWRAPPERS[u["transform"]],
                where=_where(path, u),
            )
        )
    last = [s for s in steps if isinstance(s, Probe) and s.otherwise]
    if not last:
        problems.append(
            f"{where}: recognition: no kind declares the last resort (`otherwise: true`)"
        )
    for s in last if len(last) > 1 else ():
        others = ", ".join(f"{o.kind} ({o.where})" for o in last if o is not s)
        problems.append(
            f"{s.where}: kind {s.kind}: only one kind may be the last resort (`otherwise: true`);"
            f" also {others}"
        )
    if len(last) == 1 and any(s.order >= last[0].order for s in steps if s is not last[0]):
        problems.append(f"{last[0].where}: the `otherwise` entry must have the highest order")
    owner: dict[int, tuple[str, str]] = {}
    for s in steps:
        name = s.kind if isinstance(s, Probe) else type(s).__name__
        seen = owner.setdefault(s.order, (name, s.where))
        if seen[0] != name:
            problems.append(
                f"{s.where}: recognise order {s.order} is also {seen[0]}'s ({seen[1]}):"
                " give each kind its own order"
            )
    return Recognition(
        head_chars=int(raw.get("head_chars", 200_000)),
        log_lines=int(raw.get("log_lines", 3000)),
        steps=tuple(sorted(steps, key=lambda s: s.order)),
    )


def _order(spec: dict, path: Path, problems: list[str]) -> int:
    order = spec.get("order")
    if isinstance(order, bool) or not isinstance(order, int):
        problems.append(f"{_where(path, spec)}: order must be a whole number, got {order!r}")
        return 0
    return order
