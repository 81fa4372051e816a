"""`redact BUNDLE` and `analyze --redact`: whatever `analyze` accepts (folders, archives, files,
stdin) is read by the bundle reader with its limits, redacted, and then written out (a .tar.gz or
a folder) or analysed; the analysis only ever sees the redacted copy."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analyzer.atomic import atomic_dir, atomic_path, private_folder
from analyzer.bundle.model import InputWarning, Inventory
from analyzer.bundle.reader import BundleReader, Limits, open_bundle
from analyzer.bundle.thread import ThreadFiles
from analyzer.errors import AnalyzerError, BundleError
from analyzer.redact.discover import SourceFile
from analyzer.redact.output import ArchiveSink, FolderSink
from analyzer.redact.tree import (
    ARCHIVE_SUFFIX,
    RedactionResult,
    check_map_outside,
    redact_files,
    redact_into,
)


@contextmanager
def _sources(
    inputs: list[str], limits: Limits | None
) -> Iterator[tuple[list[SourceFile], list[InputWarning]]]:
    """The files of the inputs as the bundle reader reads them (with its limits), and its
    warnings."""
    with open_bundle(inputs, limits) as reader:
        files = reader.inventory.files
        if not files:
            why = "; ".join(w.text for w in reader.inventory.warnings[:3]) or "no files"
            raise BundleError(f"nothing to redact: {why}")
        yield [SourceFile(f.name, f.path, f.mtime) for f in files], list(reader.inventory.warnings)


@contextmanager
def _redacted(
    inputs: list[str], limits: Limits | None, redactors: list[Path], map_file: Path | None
) -> Iterator[tuple[RedactionResult, list[InputWarning]]]:
    """The inputs redacted into a private temporary folder, with the reader's warnings."""
    with (
        _sources(inputs, limits) as (sources, warnings),
        private_folder("hami-redacted-") as tmp,
    ):
        result = redact_files(sources, Path(tmp) / "bundle", redactors=redactors, map_file=map_file)
        yield result, warnings


def redact_bundle(
    inputs: list[str],
    output: Path,
    *,
    redactors: list[Path],
    map_file: Path | None,
    limits: Limits | None = None,
) -> tuple[RedactionResult, list[InputWarning]]:
    """Write the redacted bundle to `output`: a .tar.gz/.tgz archive, or else a new folder. Either
    appears whole when done (written beside it under a random private name, then renamed)."""
    for spec in inputs:
        if spec != "-" and Path(spec).is_dir() and _inside(output, Path(spec)):
            raise AnalyzerError(f"{output} is inside the input {spec}: inputs are never modified")
    check_map_outside(map_file, output)
    if not output.parent.is_dir():
        raise AnalyzerError(f"cannot write {output}: no such directory {output.parent}")
    archive = bool(ARCHIVE_SUFFIX.search(output.name))
    if archive and not output.name.lower().endswith((".tar.gz", ".tgz")):
        raise AnalyzerError(f"{output}: write a .tar.gz or .tgz archive, or a folder")
    if not archive and output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise AnalyzerError(f"{output}: exists and is not an empty folder")
    with _sources(inputs, limits) as (sources, warnings):
        try:
            if archive:
                with atomic_path(output) as tmp, tmp.open("wb") as fh, ArchiveSink(fh) as sink:
                    result = redact_into(
                        sources, sink, output, redactors=redactors, map_file=map_file
                    )
            else:
                with atomic_dir(output) as tmp:
                    result = redact_into(
                        sources,
                        FolderSink(tmp, release=True),
                        output,
                        redactors=redactors,
                        map_file=map_file,
                    )
        except OSError as exc:
            raise AnalyzerError(f"cannot write {output}: {exc.strerror or exc}") from None
    return result, warnings


def _redacted_warning(result: RedactionResult, w: InputWarning) -> InputWarning:
    """A warning of the original inputs as the redacted copy would say it: its file named as
    the redacted copy names it."""
    file = result.run.text(w.file, "a file name") if w.file is not None else None
    return InputWarning(w.source, result.run.text(w.text, "a warning"), file)


def _inside(path: Path, folder: Path) -> bool:
    p, f = path.resolve(), folder.resolve()
    return p == f or f in p.parents


@contextmanager
def redacted_reader(
    inputs: list[str],
    limits: Limits | None,
    redactors: list[Path],
    map_file: Path | None,
) -> Iterator[tuple[BundleReader, RedactionResult]]:
    """A bundle reader over the redacted copy (names and member times kept, so the collection
    time is inferred as from the original), for `analyze --redact`."""
    with _redacted(inputs, limits, redactors, map_file) as (result, warnings):
        reader = BundleReader(limits)
        try:
            reader.inventory.warnings.extend(_redacted_warning(result, w) for w in warnings)
            reader.inventory.warnings.extend(result.skipped)
            for f in result.files:
                reader.add_local(f.path, f.name, f.mtime)
            yield reader, result
        finally:
            reader.close()


@contextmanager
def redacted_thread(files: ThreadFiles, limits: Limits | None) -> Iterator[ThreadFiles]:
    """An issue thread's files replaced by their redacted copies (one run, so one token map for
    the whole thread; binary files are left out), held by a reader of their own until the block
    ends. The prose is kept as written: it only chooses the language of the answer."""
    reader = BundleReader(limits)
    try:
        declared = {f.name: f.declared_kind for f in files.inventory.files}
        result = redact_files(
            [SourceFile(f.name, f.path, f.mtime) for f in files.inventory.files],
            Path(tempfile.mkdtemp(dir=reader.tmp)) / "redacted",
        )
        for f in result.files:
            kind = declared.get(f.name)
            if kind is not None:  # the prose: its kind is declared, not guessed from content
                reader.add_bytes(f.name, f.path.read_bytes(), kind=kind)
            else:
                reader.add_local(f.path, f.name, f.mtime)
        warnings = [_redacted_warning(result, w) for w in files.inventory.warnings]
        yield ThreadFiles(
            Inventory(
                files=list(reader.inventory.files),
                warnings=[*warnings, *result.skipped, *reader.inventory.warnings],
            ),
            files.prose,
            [(result.run.text(n, "a file name"), why) for n, why in files.problems],
        )
    finally:
        reader.close()


def redact_issue(raw: bytes, redactors: list[Path], map_file: Path | None) -> bytes:
    """An issue (Markdown or event JSON) as redacted Markdown, for `analyze --redact` of issues."""
    from analyzer.bundle.issue import issue_from_payload

    with private_folder("hami-issue-") as tmp:
        src = Path(tmp) / "issue.md"
        src.write_text(issue_from_payload(raw), encoding="utf-8", errors="surrogateescape")
        result = redact_files(
            [SourceFile("issue.md", src, os.stat(src).st_mtime)],
            Path(tmp) / "out",
            redactors=redactors,
            map_file=map_file,
        )
        return b"".join(f.path.read_bytes() for f in result.files)
