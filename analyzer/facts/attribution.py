"""Which node each log and config is about, in a bundle with several Node objects.

A per-node kind (kinds.yaml `per_node`: a device plugin's log, a kubelet journal, the node's
toolkit config) is evidence only for its node. It finds that node, in this order, from: the folder `hami-analyzer collect`
writes it in (`nodes/NODE/`), a line stating the node its process runs on, the pod whose log it
is (its folder `logs/POD/`, its `kubectl logs --prefix` lines or its name, mapped to a node by a
pod describe or a `kubectl get pods -o wide` table), a node name in its file or folder name, and
last the one node of the bundle its lines name (a config has only its path). One that finds none
is unattributed: reported, and evidence for no node. Every other kind is shared by all nodes (a scheduler log speaks of
every node), unless its folder or its own lines name its node.

A bundle with one node keeps every artefact for that node. The patterns are data: kinds.yaml
`attribution:`; the order is this module's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl
import regex

from analyzer.bundle.model import InputWarning
from analyzer.catalogue.kinds import AttributionHints, Catalogue
from analyzer.parse.logs import ParsedLog

if TYPE_CHECKING:  # imported when a bundle holds their kinds (parse/registry.py)
    from analyzer.parse.configs import ConfigFacts
    from analyzer.parse.pod import PodFacts
    from analyzer.parse.pod_table import PodTable

ArtefactKey = tuple[str, int]  # (file name, first line): how matches and evidence name a piece
_NAME_CHARS = r"[A-Za-z0-9]"


def key_of(log: ParsedLog) -> ArtefactKey:
    return (log.artefact.file.name, log.artefact.first_line)


@dataclass(frozen=True)
class Piece:
    """What attribution reads of a log or a config."""

    key: ArtefactKey
    kind: str
    texts: pl.Series  # its kept lines (none for a config: only its path speaks)
    pods: tuple[str, ...] = ()  # named by `kubectl logs --prefix` lines

    @property
    def path(self) -> str:
        return _inner_path(self.key[0])


def _pieces(logs: list[ParsedLog], configs: list[ConfigFacts]) -> list[Piece]:
    out = [
        Piece(key_of(log), log.artefact.kind, _column(log), tuple(log.stats.pods)) for log in logs
    ]
    no_lines = pl.Series([], dtype=pl.String)
    return out + [Piece((c.file, c.first_line), c.kind, no_lines) for c in configs]


@dataclass(frozen=True)
class Owner:
    """The node an artefact is about, and why."""

    node: str | None  # None: about no node of the bundle (unattributed)
    how: str  # why, for the report: "its folder nodes/gpu-node-1/", ...


@dataclass(frozen=True)
class Attribution:
    """The owner of every artefact that is not shared by all nodes, and what to tell the user."""

    owners: dict[ArtefactKey, Owner] = field(default_factory=dict)
    warnings: tuple[InputWarning, ...] = ()

    def keeps(self, key: ArtefactKey, node: str | None) -> bool:
        """Whether the artefact is evidence for `node` (shared ones are for every node)."""
        owner = self.owners.get(key)
        return owner is None or (owner.node is not None and owner.node == node)

    def excluded(self, node: str | None) -> frozenset[ArtefactKey]:
        return frozenset(k for k in self.owners if not self.keeps(k, node))

    def logs_of(self, logs: list[ParsedLog], node: str | None) -> list[ParsedLog]:
        return [log for log in logs if self.keeps(key_of(log), node)]

    def configs_of(self, configs: list[ConfigFacts], node: str | None) -> list[ConfigFacts]:
        return [c for c in configs if self.keeps((c.file, c.first_line), node)]


def attribute(
    logs: list[ParsedLog],
    configs: list[ConfigFacts],
    names: list[str],
    pods: list[PodFacts],
    pod_tables: list[PodTable],
    stated: dict[ArtefactKey, str],
    catalogue: Catalogue,
) -> Attribution:
    """`names`: the bundle's node names; `stated`: the node a log says it works on, read by a
    signature's `artefact_node` capture."""
    if len(names) < 2:
        return Attribution()
    hints = catalogue.attribution
    by_name = _name_pattern(names)
    pieces = _pieces(logs, configs)
    pod_nodes = _pod_nodes(pod_tables, pods, names, hints)
    owners: dict[ArtefactKey, Owner] = {}
    warnings: list[InputWarning] = []
    for piece in pieces:
        kind = catalogue.get(piece.kind)
        per_node = kind is not None and kind.per_node
        owner = _owner(piece, per_node, names, pod_nodes, stated, hints, by_name)
        if owner is None:
            continue
        owners[piece.key] = owner
        if owner.node is None:
            text = (
                f"{piece.key[0]}: a {piece.kind} of none of the bundle's "
                f"{len(names)} nodes ({_listed(names)}): {owner.how}; not used as evidence for "
                "any node (name the file or its folder after its node, or analyse it with that "
                "node's object alone)"
            )
            warnings.append(InputWarning("attribution", text, piece.key[0]))
    return Attribution(owners, tuple(warnings))


def _owner(
    piece: Piece,
    per_node: bool,
    names: list[str],
    pod_nodes: dict[str, str],
    stated: dict[ArtefactKey, str],
    hints: AttributionHints,
    by_name: regex.Pattern,
) -> Owner | None:
    path = piece.path
    for pattern in hints.node_paths:
        m = pattern.search(path)
        if m and (node := _known(m["node"], names)):
            return Owner(node, f"its folder {m.group(0).strip('/!')}")
    said = stated.get(piece.key) or _stated_in_lines(piece.texts, hints)
    if said and (node := _known(said, names)):
        return Owner(node, f"its lines say it runs on node {node}")
    if not per_node:
        return None
    pods = _pods_named(piece, hints, pod_nodes)
    for pod in pods:
        if pod in pod_nodes:
            return Owner(pod_nodes[pod], f"it is the log of pod {pod}, on {pod_nodes[pod]}")
    in_path = _longest(by_name.findall(path))
    if in_path:
        return Owner(in_path, f"its name {path}")
    mentioned = _mentioned(piece.texts, names, by_name)
    if len(mentioned) == 1:
        return Owner(mentioned[0], f"its lines name node {mentioned[0]} and no other")
    if mentioned:
        return Owner(None, f"its lines name several nodes ({_listed(mentioned)})")
    if said:
        return Owner(None, f"its lines say it runs on node {said}, which the bundle has no Node of")
    if pods:
        return Owner(
            None,
            f"it is the log of pod {pods[0]}, which no pod describe or `kubectl get pods -o wide` "
            "in the bundle places on a node, and its name and lines name none",
        )
    return Owner(None, "nothing in its name, folder, pod or lines names one of them")


def _listed(names: Iterable[str]) -> str:
    names = list(names)
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _inner_path(name: str) -> str:
    """The path inside the input: an archive's own file name says nothing of its members."""
    return name.split("!", 1)[1] if "!" in name else name


def _name_pattern(names: list[str]) -> regex.Pattern:
    """Any of the names, longest first, not inside a longer run of letters and digits
    (`gpu-node-1` is in `device-plugin-gpu-node-1.log`, not in `gpu-node-10.log`)."""
    alternatives = "|".join(regex.escape(n) for n in sorted(names, key=len, reverse=True))
    return regex.compile(f"(?<!{_NAME_CHARS})(?:{alternatives})(?!{_NAME_CHARS})")


def _known(value: str, names: list[str]) -> str | None:
    """The bundle's node this captured value is: the name itself, as collect writes it in a
    folder name (unsafe characters replaced by `_`), or a host name that is the first label
    of exactly one node's name (`ip-10-0-0-1` of `ip-10-0-0-1.ec2.internal`, in a journal)."""
    if value in names:
        return value
    safe = [n for n in names if regex.sub(r"[^A-Za-z0-9._-]", "_", n) == value]
    host = [n for n in names if "." in n and n.split(".", 1)[0] == value]
    found = safe or host
    return found[0] if len(found) == 1 else None


def _longest(found: list[str]) -> str | None:
    return max(found, key=len) if found else None


def _column(log: ParsedLog) -> pl.Series:
    return (
        log.frame.get_column("text")
        if "text" in log.frame.columns
        else pl.Series([], dtype=pl.String)
    )


def _stated_in_lines(texts: pl.Series, hints: AttributionHints) -> str | None:
    """The node a `node_lines` pattern captures in the first such line (polars selects the
    candidate lines; a pattern Rust's regex cannot read is tried on every line)."""
    for pattern in hints.node_lines:
        try:
            candidates = texts.filter(texts.str.contains(pattern.pattern).fill_null(False))
        except pl.exceptions.PolarsError:
            candidates = texts
        for text in candidates.to_list():
            m = pattern.search(text or "")
            if m and m["node"]:
                return m["node"]
    return None


def _mentioned(texts: pl.Series, names: list[str], by_name: regex.Pattern) -> list[str]:
    """The bundle's node names the kept lines hold, each once, in order of appearance."""
    if texts.is_empty():
        return []
    mask = texts.str.contains(names[0], literal=True)
    for n in names[1:]:
        mask = mask | texts.str.contains(n, literal=True)
    hits = texts.filter(mask.fill_null(False))
    seen: list[str] = []
    for text in hits.head(2000).to_list():
        for name in by_name.findall(text or ""):
            if name not in seen:
                seen.append(name)
    return seen


def _pods_named(piece: Piece, hints: AttributionHints, pod_nodes: dict[str, str]) -> list[str]:
    """Pods the log is from: its folder (collect's `logs/POD/`), its `--prefix` lines, a known
    pod's name in its path."""
    path = piece.path
    pods = [m["pod"] for p in hints.pod_paths if (m := p.search(path))]
    pods += piece.pods
    pods += [
        p
        for p in pod_nodes
        if regex.search(f"(?<!{_NAME_CHARS}){regex.escape(p)}(?!{_NAME_CHARS})", path)
    ]
    return pods


def _pod_nodes(
    tables: list[PodTable],
    pods: list[PodFacts],
    names: list[str],
    hints: AttributionHints,
) -> dict[str, str]:
    """Pod name -> node of the bundle, from pod objects and describes (`Node: n1/10.0.0.1`)
    and from pod tables (a row whose NODE is a node of the bundle; in collect's
    `nodes/NODE/pods.txt`, a row naming no node is that folder's node)."""
    out: dict[str, str] = {}
    for p in pods:
        node = (p.node or "").split("/")[0]
        if p.name and node in names:
            out[p.name] = node
    for table in tables:
        path = _inner_path(table.file)
        folder = next(
            (
                n
                for pat in hints.node_paths
                if (m := pat.search(path)) and (n := _known(m["node"], names))
            ),
            None,
        )
        for row in table.rows:
            if owner := (row.node if row.node in names else None) or folder:
                out.setdefault(row.name, owner)
    return out
