"""Bundle -> parsed artefacts (one pass over every file). Later stages never re-read files.

Recognition and parsing see only what they need: the kind catalogue and the compiled signature
scan, not the rules."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from analyzer.bundle.model import Artefact, InputWarning, Inventory
from analyzer.bundle.reader import Limits, open_bundle
from analyzer.bundle.recognise import recognise
from analyzer.bundle.text import diff_after_side
from analyzer.catalogue.kinds import Catalogue
from analyzer.parse.logs import ParsedLog, parse_log
from analyzer.parse.matcher import Matcher
from analyzer.parse.node import NodeFacts, keep_nodes
from analyzer.parse.registry import PARSERS, parse_artefact
from analyzer.parse.unfold import unfold
from analyzer.parse.unscanned import blank_blocks

if TYPE_CHECKING:  # imported when a bundle holds their kinds (parse/registry.py)
    from analyzer.parse.configs import ConfigFacts
    from analyzer.parse.manifest import ManifestFacts
    from analyzer.parse.pod import PodFacts
    from analyzer.parse.pod_table import PodTable


@dataclass
class ParsedBundle:
    """What the parse stage returns. `inventory` is the reader's, as the reader built it; the
    stage's own output (artefacts, warnings) is here."""

    inventory: Inventory
    artefacts: list[Artefact] = field(default_factory=list)  # recognised (and selected) pieces
    # the reader's warnings, then recognition's and the parsers' (each naming its file)
    input_warnings: list[InputWarning] = field(default_factory=list)
    nodes: list[NodeFacts] = field(default_factory=list)
    pods: list[PodFacts] = field(default_factory=list)
    configs: list[ConfigFacts] = field(default_factory=list)
    logs: list[ParsedLog] = field(default_factory=list)  # every scanned (line-oriented) artefact
    member_mtimes: list[float] = field(default_factory=list)
    manifests: list[ManifestFacts] = field(default_factory=list)  # of `hami-analyzer collect`
    pod_tables: list[PodTable] = field(default_factory=list)  # `kubectl get pods` rows
    digest: str = ""  # of the file fingerprints: the same bundle gives the same digest
    content_digest: str = ""  # if asked: every file's whole content, names/times/container ignored
    analysable: bool = False  # some artefact is more than junk (binary, empty, unreadable...)

    @property
    def warnings(self) -> list[str]:
        """The warnings' texts, as every output prints them."""
        return [w.text for w in self.input_warnings]

    @property
    def kinds(self) -> list[str]:
        return [a.kind for a in self.artefacts]


def parse_bundle(
    inputs: list[str],
    catalogue: Catalogue,
    matcher: Matcher,
    limits: Limits | None = None,
    content: bool = False,
) -> ParsedBundle:
    with open_bundle(inputs, limits) as reader:
        return parse_files(reader, catalogue, matcher, content)


def content_digest(files) -> str:
    """The same files re-zipped, renamed or recompressed give the same digest: each file's bytes
    (as read, archives and gzip opened) are hashed, and the sorted hashes hashed again."""
    digests = []
    for f in files:
        h = hashlib.sha256()
        try:
            with f.path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
        except OSError:
            h.update(f.fingerprint.encode())
        digests.append(h.hexdigest())
    return hashlib.sha256("".join(sorted(digests)).encode()).hexdigest()


def parse_files(
    reader,
    catalogue: Catalogue,
    matcher: Matcher,
    content: bool = False,
    select: Callable[..., list[Artefact]] | None = None,
) -> ParsedBundle:
    """`content`: also hash every file whole (`content_digest`; one more read, for batches).
    `select(artefacts, warnings=)`: which recognised artefacts to parse (an issue thread keeps
    the newest of a kind), adding to `warnings` one for each artefact it left out."""
    inv = reader.inventory
    artefacts, recognition_warnings = recognise(inv.files, catalogue)
    warnings = [*inv.warnings, *recognition_warnings]
    if select is not None:
        artefacts = select(artefacts, warnings=warnings)
    out = ParsedBundle(inv, artefacts, warnings)
    out.member_mtimes = [f.mtime for f in inv.files if f.mtime and "!" in f.name]
    h = hashlib.sha256()
    for f in sorted(inv.files, key=lambda f: f.fingerprint):
        h.update(f.fingerprint.encode())
    out.digest = h.hexdigest()
    out.content_digest = content_digest(inv.files) if content else ""
    for a in artefacts:
        kind = catalogue.get(a.kind)
        if kind is None:  # no kind of the catalogue: nothing reads it
            continue
        out.analysable = out.analysable or kind.is_evidence
        if any(PARSERS[n].structured for n in kind.parsers if n in PARSERS) and a.text:
            # a unified diff of an object or config: its after side is the state in use
            after = diff_after_side(a.text)
            a = replace(a, text=after) if after is not None else a
        said: set[str] = set()  # two parsers of one document find its YAML error once
        for parser, parsed in parse_artefact(a, kind):
            if parser.into:
                getattr(out, parser.into).extend(parsed.items)
            news = [w for w in parsed.warnings if w not in said]
            said.update(news)
            warnings.extend(InputWarning("parse", w, a.file.name) for w in news)
        if kind.scanned:
            # an object's YAML (or a part of one pasted as text): its folded strings on one line
            if (kind.k8s_kinds or a.kind == "text") and a.text:
                a = replace(a, text=unfold(a.text))
            if kind.unscanned is not None and a.text:  # what it runs is not what happened
                a = replace(a, text=blank_blocks(a.text, kind.unscanned))
            out.logs.append(parse_log(a, matcher, catalogue.record_start))
    out.nodes, note = keep_nodes(out.nodes)
    if note:
        warnings.append(InputWarning("nodes", note))
    return out
