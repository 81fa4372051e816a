"""Signature matches of a whole bundle, with provenance, and the per-node view rules evaluate.

A match is evidence wherever it is: the kind of the artefact it was found in decides only how
much it weighs (a line in a recognised log, a bare line pasted among prose, the issue's own
words). Whether a signature's absence means anything depends on the bundle holding an artefact
of a kind where the line would have been printed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from analyzer.bundle.text import LOG_LINE_RE, in_script
from analyzer.catalogue.kinds import Catalogue
from analyzer.catalogue.signatures import MATCH_TIMEOUT, Signature
from analyzer.facts.model import Match
from analyzer.parse.logs import READ_WHOLE_ROWS, ParsedLog, rows_of

PROSE_KINDS = ("text", "issue-text")
HIT_COLUMNS = ("line", "text", "ts", "sigs")


_HEADING_RE = re.compile(r"^#{1,6}\s")


def strength_of(kind: str, text: str, sig: Signature) -> str:
    """high: a line of a recognised artefact, or a pasted line with its own log header;
    medium: a quoted error without one, or the issue's prose; low: a described symptom, or an
    error named only in the issue's title (or a heading): the reporter's summary, often cut or
    retyped, of what the body should quote."""
    if sig.symptom:
        return "low"
    if kind == "issue-text":
        return "low" if _HEADING_RE.match(text) else "medium"
    if kind == "text":
        return "high" if LOG_LINE_RE.match(text) else "medium"
    return "high"


@dataclass
class ArtefactInfo:
    """An artefact as the facts stage sees it: its file, kind and node."""

    file: str
    kind: str
    first_line: int
    node: str | None = None  # the node the artefact says it is about (a device-plugin log's)
    counts: dict[str, int] = field(default_factory=dict)  # exact matches per signature


@dataclass
class SignatureIndex:
    """Matches by signature id, exact counts, the kinds the bundle holds, per-log node names."""

    signatures: dict[str, Signature]
    catalogue: Catalogue
    matches: dict[str, list[Match]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)  # kinds recognised, incl. what they count as
    artefacts: list[ArtefactInfo] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # evidence kinds of the bundle's artefacts

    def count(self, sid: str) -> int:
        return max(len(self.matches.get(sid, [])), self.counts.get(sid, 0))

    def sources(self, sid: str, kinds: frozenset[str] = frozenset()) -> frozenset[str]:
        """Kinds where the line is expected (`kinds`, when a condition narrows them)."""
        return (kinds or frozenset(self.signatures[sid].sources)).difference(PROSE_KINDS)

    def absence_known(self, sid: str, kinds: frozenset[str] = frozenset()) -> bool:
        srcs = self.sources(sid, kinds)
        return not srcs or bool(srcs & self.present)

    def kind_matches(self, kind: str, kinds: frozenset[str]) -> bool:
        k = self.catalogue.get(kind)
        return kind in kinds or (k is not None and bool(set(k.counts_as) & kinds))

    def for_node(
        self,
        node: str | None,
        others: set[str],
        excluded: frozenset[tuple[str, int]] = frozenset(),
        held: set[str] | None = None,
    ) -> SignatureIndex:
        """The view of one node: lines naming another node, and the artefacts `excluded` (about
        another node, or about none: analyzer/facts/attribution.py) are left out. `held`: the
        kinds of the artefacts left to the node; a kind it does not hold is not present for it
        (another node's log says nothing of this one's)."""
        if not node and not others and not excluded:
            return self
        start_of = _artefact_starts(self) if excluded else {}
        kept: dict[str, list[Match]] = {}
        dropped_by_line: set[str] = set()
        for sid, ms in self.matches.items():
            cap = self.signatures[sid].node_capture
            sel = []
            for m in ms:
                if excluded and (m.file, _start(start_of, m)) in excluded:
                    continue
                if cap and node and m.captures.get(cap) not in (None, "", node):
                    dropped_by_line.add(sid)
                    continue
                sel.append(m)
            if sel:
                kept[sid] = sel
        kept_arts = [a for a in self.artefacts if (a.file, a.first_line) not in excluded]
        counts: dict[str, int] = {}
        for a in kept_arts:
            for sid, n in a.counts.items():
                counts[sid] = counts.get(sid, 0) + n
        for sid in dropped_by_line:
            counts[sid] = len(kept.get(sid, []))
        mine = self.held if held is None else self.held & held
        present = self.present if mine == self.held else self.catalogue.satisfied(mine)
        return SignatureIndex(
            self.signatures, self.catalogue, kept, counts, present, kept_arts, self.errors, mine
        )


def _artefact_starts(index: SignatureIndex) -> dict[str, list[int]]:
    starts: dict[str, list[int]] = {}
    for a in index.artefacts:
        starts.setdefault(a.file, []).append(a.first_line)
    return {f: sorted(v) for f, v in starts.items()}


def _start(starts: dict[str, list[int]], m: Match) -> int:
    """The first line of the artefact of the file a match is in (a file may hold several)."""
    best = 0
    for first in starts.get(m.file, ()):
        if first > m.line:
            break
        best = first
    return best


def collect_matches(
    logs: list[ParsedLog], kinds: list[str], signatures: dict[str, Signature], catalogue: Catalogue
) -> SignatureIndex:
    index = SignatureIndex(signatures, catalogue)
    index.held = {k for k in kinds if catalogue.get(k) and catalogue[k].is_evidence}
    index.present = catalogue.satisfied(index.held)
    for log in logs:
        art = log.artefact
        info = ArtefactInfo(art.file.name, art.kind, art.first_line, counts=log.stats.sig_counts)
        index.artefacts.append(info)
        for sid, n in log.stats.sig_counts.items():
            index.counts[sid] = index.counts.get(sid, 0) + n
        index.errors.extend(
            f"signature {sid}: regex timed out on {art.file.name}:{line}; read as no match"
            for sid, line in log.stats.timeouts
        )
        if "sigs" not in log.frame.columns:
            continue
        for line, text, ts, sigs in _hit_rows(log.frame):
            for sid in sigs:
                sig = signatures[sid]
                found = log.matched.get((line, sid))  # the parse stage's own check found it
                if found is None:
                    try:
                        m = sig.compiled.search(text, timeout=MATCH_TIMEOUT)
                    except TimeoutError:
                        index.errors.append(
                            f"signature {sid}: regex timed out on {art.file.name}:{line}"
                        )
                        continue
                    if not m:
                        continue  # Rust and Python regex dialects disagreed; trust the stricter
                    found = (m.span(), m.groupdict())
                span, groups = found
                if in_script(text[: span[0]]):
                    continue  # a command that echoes the words is not the event
                caps = {k: v or "" for k, v in groups.items()}
                match = Match(
                    sid,
                    art.file.name,
                    line,
                    text,
                    ts,
                    caps,
                    span,
                    art.kind,
                    strength_of(art.kind, text, sig),
                )
                index.matches.setdefault(sid, []).append(match)
                if sig.artefact_node and caps.get(sig.artefact_node):
                    info.node = info.node or caps[sig.artefact_node]
    return index


def _hit_rows(frame: pl.DataFrame) -> Iterable[tuple]:
    """(line, text, ts, sigs) of the rows some signature matched, in frame order."""
    if frame.height <= READ_WHOLE_ROWS:
        return (row for row in rows_of(frame, HIT_COLUMNS) if row[3])
    return frame.filter(pl.col("sigs").list.len() > 0).select(HIT_COLUMNS).iter_rows()
