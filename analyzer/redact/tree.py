"""Redact a set of bundle files into a folder: discover names over the whole bundle, then write
each text file redacted (its name too). Binary files are left out: they cannot be redacted, and
the analysis treats them as junk anyway. The token map goes only to `map_file`."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import regex

from analyzer.errors import AnalyzerError
from analyzer.redact.discover import SourceFile, chunks, discover, is_binary
from analyzer.redact.engine import Redaction
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
    skipped: list[str] = field(default_factory=list)

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
    catalogue = load_redactors(list(redactors))
    check_map_outside(map_file, dst)
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise AnalyzerError(f"{dst}: exists and is not an empty folder")
    found = discover(sources, catalogue)
    run = Redaction(catalogue, found.names, TokenMap(found.reserved))
    result = RedactionResult(run, dst)
    plans: list[tuple[SourceFile, str, str]] = []
    taken: set[str] = set()
    for s in sources:
        name = run.text(s.name, "a file name")
        if is_binary(s.path):
            result.skipped.append(f"{name}: binary, left out")
            continue
        plans.append((s, name, _unique(_out_name(name), taken)))
    existed = dst.exists()
    try:
        dst.mkdir(parents=True, exist_ok=True)
        for s, name, rel in plans:
            out = dst / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
                for text in chunks(s.path):
                    fh.write(run.text(text, s.name))
            if s.mtime is not None:
                os.utime(out, (s.mtime, s.mtime))
            result.files.append(SourceFile(name, out, s.mtime))
    except (OSError, AnalyzerError) as exc:
        # a half-redacted copy must not be mistaken for a finished one (dst was empty)
        shutil.rmtree(dst, ignore_errors=True)
        if existed:
            dst.mkdir(exist_ok=True)
        if isinstance(exc, AnalyzerError):
            raise
        raise AnalyzerError(f"cannot write {dst}: {exc.strerror or exc}") from None
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
