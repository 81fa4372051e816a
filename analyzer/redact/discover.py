"""The first pass over a bundle: the names to replace everywhere and the tokens already taken.

Node names come from where Kubernetes states them: the analyzer's own parsers (Node objects in
any form, `kubectl describe node`, a pod's node) and the `find` patterns of the redactors
(`kubernetes.io/hostname`, `nodeName`, `Node:` of describe pod, log keys)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from analyzer.bundle.model import BundleFile, Inventory
from analyzer.bundle.text import looks_binary
from analyzer.redact.engine import find_names, token_shapes
from analyzer.redact.redactors import Redactor

CHUNK = 16 << 20  # bytes of a big file redacted at once, cut at a line end


@dataclass(frozen=True)
class SourceFile:
    """A bundle file to redact: its name inside the bundle, where it is, its time."""

    name: str
    path: Path
    mtime: float | None = None


@dataclass(frozen=True)
class Found:
    names: dict[str, str]  # value -> token prefix
    reserved: frozenset[str]  # token-shaped words of the original


def is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return looks_binary(fh.read(8192))


def chunks(path: Path) -> Iterator[str]:
    """The file as text in pieces of about CHUNK bytes ending at a newline; undecodable bytes
    survive the round trip (surrogateescape)."""
    with path.open("rb") as fh:
        rest = b""
        while block := fh.read(CHUNK):
            block = rest + block
            cut = block.rfind(b"\n") + 1 or len(block)
            rest = block[cut:] if cut < len(block) else b""
            yield block[:cut].decode("utf-8", errors="surrogateescape")
        if rest:
            yield rest.decode("utf-8", errors="surrogateescape")


def discover(sources: list[SourceFile], redactors: list[Redactor]) -> Found:
    names: dict[str, str] = {}
    reserved: set[str] = set()
    shapes = token_shapes(redactors)
    texts = [s for s in sources if not is_binary(s.path)]
    for s in texts:
        for text in chunks(s.path):
            for value, prefix in find_names(redactors, text, s.name).items():
                names.setdefault(value, prefix)
            reserved.update(shapes.findall(text))
    parsed = [r for r in redactors if r.mode == "find" and r.parsed_nodes]
    if parsed:
        for value in sorted(parsed_node_names(texts)):
            if not parsed[0].kept(value):
                names.setdefault(value, parsed[0].token)
    return Found(names, frozenset(reserved))


def parsed_node_names(sources: list[SourceFile]) -> set[str]:
    """Node names as the analysis itself reads them (so every node it reports gets a token)."""
    from analyzer.bundle.recognise import recognise
    from analyzer.kinds import load_catalogue
    from analyzer.parse.node import parse_node
    from analyzer.parse.pod import parse_pod
    from analyzer.redact.redactors import builtin_file

    catalogue = load_catalogue(builtin_file().with_name("kinds.yaml"))
    files = [BundleFile(s.name, s.path, s.path.stat().st_size, s.mtime) for s in sources]
    inv = Inventory(files=files)
    out: set[str] = set()
    for a in recognise(files, catalogue, inv):
        kind = catalogue.get(a.kind)
        parser = kind.parser if kind else None
        if parser == "node":
            out.update(n.name for n in parse_node(a) if n.name)
        elif parser == "pod":
            out.update(p.node for p in parse_pod(a) if p.node)
    return out
