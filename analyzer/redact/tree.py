"""Redact a set of bundle files into a folder or an archive: discover names over the whole bundle,
then write each text file redacted piece by piece (its name too). Binary files are left out: they
cannot be redacted, and the analysis treats them as junk anyway. The token map goes only to
`map_file`, which a later run extends."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import regex

from analyzer.bundle.model import InputWarning
from analyzer.errors import AnalyzerError
from analyzer.progress import Progress
from analyzer.redact.discover import SourceFile, discover, is_binary, prepared
from analyzer.redact.engine import Redaction, example_failure
from analyzer.redact.output import FolderSink, Sink
from analyzer.redact.redactors import load_redactors
from analyzer.redact.tokens import TokenMap

ARCHIVE_SUFFIX = regex.compile(r"\.(?:tar\.gz|tgz|tar|zip|tar\.bz2|tar\.xz)$", regex.I)
UNSAFE_CHARS = regex.compile(r"[^\w.+=@-]")


@dataclass
class RedactionResult:
    """What a run wrote: the files (redacted bundle name, path, time), what it left out, and
    the run itself (its counts per redactor and token map, never written into the bundle)."""

    run: Redaction
    root: Path
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[InputWarning] = field(default_factory=list)  # files left out, as the reader says

    @property
    def tokens(self) -> TokenMap:
        return self.run.tokens

    @property
    def counts(self) -> Counter[str]:
        return self.run.counts


def redact_tree(
    src: Path,
    dst: Path,
    *,
    redactors: list[Path] = (),  # type: ignore[assignment]  # the signature collect calls
    map_file: Path | None = None,
) -> RedactionResult:
    """Copy the folder `src` to `dst` redacted (links are not followed); `src` is only read."""
    src = Path(src)
    if not src.is_dir():
        raise AnalyzerError(f"{src}: not a folder")
    sources: list[SourceFile] = []
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        dirnames.sort()
        for p in (Path(dirpath) / f for f in sorted(filenames)):
            if p.is_file() and not p.is_symlink():
                sources.append(SourceFile(p.relative_to(src).as_posix(), p, p.stat().st_mtime))
    return redact_files(sources, Path(dst), redactors=redactors, map_file=map_file)


def redact_files(
    sources: list[SourceFile],
    dst: Path,
    *,
    redactors: list[Path] | tuple[Path, ...] = (),
    map_file: Path | None = None,
) -> RedactionResult:
    """Redact `sources` into the folder `dst` (created; it must not hold files yet)."""
    check_map_outside(map_file, dst)
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise AnalyzerError(f"{dst}: exists and is not an empty folder")
    existed = dst.exists()
    try:
        dst.mkdir(parents=True, exist_ok=True)
        return redact_into(sources, FolderSink(dst), dst, redactors=redactors, map_file=map_file)
    except (OSError, AnalyzerError) as exc:
        # a half-redacted copy must not be mistaken for a finished one (dst was empty)
        shutil.rmtree(dst, ignore_errors=True)
        if existed:
            dst.mkdir(exist_ok=True)
        if isinstance(exc, AnalyzerError):
            raise
        raise AnalyzerError(f"cannot write {dst}: {exc.strerror or exc}") from None


def redact_into(
    sources: list[SourceFile],
    sink: Sink,
    root: Path,
    *,
    redactors: list[Path] | tuple[Path, ...] = (),
    map_file: Path | None = None,
) -> RedactionResult:
    """Redact `sources` into `sink` (a folder or an archive at `root`); the token map, loaded
    from `map_file` when it exists and extended, is written back there only on success."""
    catalogue = load_redactors(list(redactors), check=example_failure)
    tokens = TokenMap.load(map_file) if map_file is not None else TokenMap()
    found = discover(sources, catalogue, tokens)
    tokens.reserved |= found.reserved
    run = Redaction(catalogue, found.names, tokens)
    result = RedactionResult(run, root)
    plans: list[tuple[SourceFile, str, str]] = []
    taken: set[str] = set()
    for s in sources:
        name = run.text(s.name, "a file name")
        if is_binary(s.path):
            result.skipped.append(InputWarning.about("read", name, "binary, left out"))
            continue
        plans.append((s, name, _unique(_out_name(name), taken)))
    progress = Progress("redacting", sum(s.path.stat().st_size for s, _, _ in plans), "bytes")
    try:
        for s, name, rel in plans:
            seen = found.plans.get(s.path, [])

            def prepare(n: int, raw: bytes, seen=seen):
                return run.prepare(raw, seen[n] if n < len(seen) else None)

            with sink.file(rel, s.mtime) as write:
                for _, piece in prepared(s.path, prepare):
                    write(run.finish(piece, s.name))
                    progress.advance(piece.lines.size)
            result.files.append(SourceFile(name, root / rel, s.mtime))
    finally:
        progress.close()
    if map_file is not None:
        run.tokens.write(map_file)
    return result


def check_map_outside(map_file: Path | None, dst: Path) -> None:
    """The map undoes the redaction: it must never land inside what is shared."""
    if map_file is None:
        return
    m, d = Path(map_file).resolve(), Path(dst).resolve()
    if m == d or d in m.parents:
        raise AnalyzerError(
            f"--map {map_file} is inside the redacted output {dst}; put it elsewhere"
        )
    if not m.parent.is_dir():
        raise AnalyzerError(f"cannot write {map_file}: no such directory {m.parent}")


def _out_name(name: str) -> str:
    """A bundle name as a safe relative path: `ticket.tgz!logs/dp.log` -> `ticket/logs/dp.log`.

    >>> _out_name("ticket.tgz!logs/dp.log"), _out_name("<stdin>"), _out_name("../a b/c")
    ('ticket/logs/dp.log', '_stdin_', 'a_b/c')
    """
    layers = name.split("!")
    layers = [ARCHIVE_SUFFIX.sub("", p) for p in layers[:-1]] + layers[-1:]
    parts = [
        UNSAFE_CHARS.sub("_", p)
        for layer in layers
        for p in PurePosixPath(layer.replace("\\", "/")).parts
        if p not in ("", ".", "..", "/")
    ]
    return "/".join(parts) or "file"


def _unique(name: str, taken: set[str]) -> str:
    """Two inputs may hold the same name (node.yaml of two folders): the second is node-2.yaml."""
    candidate, n = name, 1
    while candidate.lower() in taken:
        n += 1
        stem, dot, ext = name.rpartition(".")
        candidate = f"{stem}-{n}.{ext}" if dot and stem else f"{name}-{n}"
    taken.add(candidate.lower())
    return candidate
