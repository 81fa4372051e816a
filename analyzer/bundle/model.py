"""Typed records handed from the bundle stage to the parsers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class BundleFile:
    """One input file, materialised on disk (archive members in a private temp folder)."""

    name: str  # display name inside the bundle, e.g. "ticket.tgz!logs/dp.log"
    path: Path  # where the (decompressed) bytes are on disk; read-only for us
    size: int
    mtime: float | None = None  # from the archive member or the file system
    fingerprint: str = ""  # sha256 of size + first and last 64 KiB (dedup, comment marker)
    declared_kind: str | None = None  # set by whoever knows better than content (issue prose)


@dataclass(frozen=True)
class Artefact:
    """A recognised piece of a file: the whole file, or a segment of a mixed paste."""

    file: BundleFile
    kind: str  # e.g. node, device-plugin-log, scheduler-log, pod-describe, unrecognised
    reason: str  # why it was recognised (or not)
    first_line: int = 1  # 1-based line of the segment inside the file
    text: str | None = None  # decoded text for small artefacts; None means stream from file
    container: str | None = None  # from `kubectl logs --prefix` or a pasted command


@dataclass(frozen=True)
class InputWarning:
    """Something about the inputs the user should know (a file not read whole, not parsed, a log
    of no node), said by the stage that found it. Reports print `text`; batch tables keep all
    three, so thousands of bundles can be grouped by `source` and `file`."""

    source: str  # the stage: one of WARNING_SOURCES
    text: str  # the message as every output prints it, naming its file first when it has one
    file: str | None = None  # the file it is about (display name inside the bundle)

    @classmethod
    def about(cls, source: str, file: str, what: str) -> InputWarning:
        """A warning about one file, worded `FILE: what` as every output prints it (the reader's,
        recognition's and selection's, built where the warning is raised)."""
        return cls(source, f"{file}: {what}", file)


# read: the reader (unreadable, skipped or truncated members, cut lines); recognise: decoding;
# select: an issue thread's older paste left out; parse: a parser; nodes: Node objects left out;
# attribution: a per-node log of no node; unrecognised: a file no kind matched (batch tables only)
WARNING_SOURCES = ("read", "recognise", "select", "parse", "nodes", "attribution", "unrecognised")


@dataclass
class Inventory:
    """Everything the reader saw, including what it could not use. Built by the reader alone:
    recognition and parsing report in their own results (`ParsedBundle`)."""

    files: list[BundleFile] = field(default_factory=list)
    warnings: list[InputWarning] = field(default_factory=list)  # the reader's ("read")
