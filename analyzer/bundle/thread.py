"""An issue thread as one bundle: the issue and the comments the bot takes ("posts"), each with
the files attached to it.

Each post's code blocks and prose become files named after the post (`issue-block-01.log`,
`comment-2-text.md`); each attachment is read by a bundle reader of its own within what the limits
leave (members and bytes are shared by the whole thread), so a bad attachment is a line, not a
failed analysis. Where posts disagree the newest wins, per kind of artefact: the artefacts of a
kind come from the latest post (in thread order) that has that kind, and older ones of the kind
are left out with a warning; generic text (the prose, unrecognised pastes) adds up instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import regex

from analyzer.bundle.issue import parse_issue
from analyzer.bundle.model import Artefact, InputWarning, Inventory
from analyzer.bundle.reader import BundleReader, Limits
from analyzer.errors import BundleError

MAX_BLOCKS = 200  # code blocks read from one post (real issues paste a handful)
_LABEL = regex.compile(r"^(?:issue|comment-(\d+))[-/]")
_UNSAFE = regex.compile(r"[^\w.+-]")


@dataclass(frozen=True)
class Attachment:
    name: str  # the file name as uploaded
    path: Path | None  # the downloaded file; None when it could not be fetched
    problem: str = ""  # why it could not be fetched
    sha256: str = ""  # of the downloaded bytes


@dataclass(frozen=True)
class Post:
    label: str  # "issue", then "comment-1", "comment-2", ... in thread order
    text: str  # Markdown ("# title" and the body, for the issue)
    attachments: tuple[Attachment, ...] = ()


@dataclass
class ThreadFiles:
    """The thread's files, read; `.inventory` is what `parse_files` reads."""

    inventory: Inventory = field(default_factory=Inventory)
    prose: str = ""  # every post's prose, for the language of the answer
    problems: list[tuple[str, str]] = field(default_factory=list)  # (attachment, why unread)


def digest_source(posts: list[Post]) -> bytes:
    """Everything analysed: the issue's text (alone, it is exactly what `analyze --from-issue`
    digests), each comment read, and each attachment's bytes' digest or why it is missing."""
    parts = [posts[0].text]
    parts += [f"\n\n<!-- {p.label} -->\n{p.text}" for p in posts[1:]]
    parts += [
        f"\n<!-- {p.label}/{a.name} {a.sha256 or a.problem} -->"
        for p in posts
        for a in p.attachments
    ]
    return "".join(parts).encode("utf-8", errors="replace")


def post_order(name: str) -> int:
    """The position in the thread of the post a file comes from (0: the issue)."""
    m = _LABEL.match(name)
    return int(m[1]) if m and m[1] else 0


def where(order: int) -> str:
    return "the issue" if order == 0 else f"comment {order}"


@contextmanager
def read_thread(posts: list[Post], limits: Limits | None = None) -> Iterator[ThreadFiles]:
    """The posts' blocks and prose and their attachments' files, on disk until the block ends
    (`redact.bundle.redacted_thread` turns them into their redacted copies)."""
    limits = limits or Limits()
    readers = [BundleReader(limits)]
    out = ThreadFiles()
    try:
        prose = []
        texts, cut = post_texts(posts)  # a post's blocks not all read: a warning, as in any bundle
        out.inventory.warnings += [InputWarning("read", f"{who}: {why}") for who, why in cut]
        for name, body, kind in texts:
            readers[0].add_bytes(name, body.encode("utf-8", errors="replace"), kind=kind)
            prose += [body] if kind else []
        out.prose = "\n".join(prose)
        _take(out, readers[0])
        for post in posts:
            for att in post.attachments:
                _read_attachment(out, readers, limits, post.label, att)
        yield out
    finally:
        for reader in readers:
            reader.close()


def post_texts(
    posts: list[Post],
) -> tuple[list[tuple[str, str, str | None]], list[tuple[str, str]]]:
    """(name, text, declared kind) of every post's code blocks and prose, and a line for each
    post whose blocks were not all read. A block pasted twice is one file: its first copy in the
    latest post that has it (a paste repeated later is news, for the newest-wins choice). A post
    reads at most MAX_BLOCKS blocks: a comment of thousands of tiny fences is a line in the
    answer, not a thread over the file limit that no later event could analyse."""
    parsed = [parse_issue(post.text, post.label) for post in posts]
    latest = {body: i for i, issue in enumerate(parsed) for _, body in issue.blocks}
    out: list[tuple[str, str, str | None]] = []
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, (post, issue) in enumerate(zip(posts, parsed, strict=True)):
        kept = 0
        for name, body in issue.blocks:
            if body.strip() and latest[body] == i and body not in seen:
                seen.add(body)
                kept += 1
                if kept <= MAX_BLOCKS:
                    out.append((name, body, None))
        if kept > MAX_BLOCKS:
            problems.append((post.label, f"{kept} code blocks: the first {MAX_BLOCKS} read"))
        if issue.prose.strip():
            out.append((f"{post.label}-text.md", issue.prose, "issue-text"))
    return out, problems


def _read_attachment(
    out: ThreadFiles, readers: list[BundleReader], limits: Limits, label: str, att: Attachment
) -> None:
    """One attachment by a reader of its own within what the limits leave; a failure is a
    problem line, and nothing of it is kept."""
    shown = f"{label}/{att.name}"
    if att.path is None:
        out.problems.append((shown, att.problem))
        return
    left = _left(limits, readers)
    if left is None:
        out.problems.append((shown, "not read: the bundle limits are used up"))
        return
    reader = BundleReader(left)
    try:
        reader.add_input(str(_place(att.path, att.name, label, reader)))
    except BundleError as exc:
        reader.close()
        out.problems.append((shown, str(exc).removeprefix(f"{shown}: ")))
        return
    except BaseException:
        reader.close()
        raise
    readers.append(reader)
    _take(out, reader)


def _take(out: ThreadFiles, reader: BundleReader) -> None:
    out.inventory.files += reader.inventory.files
    out.inventory.warnings += reader.inventory.warnings


def _left(limits: Limits, readers: list[BundleReader]) -> Limits | None:
    members = limits.max_members - sum(r.budget.members for r in readers)
    size = limits.max_total_bytes - sum(
        max(r.budget.bytes, sum(f.size for f in r.inventory.files)) for r in readers
    )
    if members <= 0 or size <= 0:
        return None
    return Limits(max_members=members, max_total_bytes=size, max_depth=limits.max_depth)


def _place(path: Path, name: str, label: str, reader: BundleReader) -> Path:
    """A folder in the reader's own temporary space holding only the attachment, as
    LABEL/NAME, so its files are named `comment-2/bundle.tar.gz!node.yaml`."""
    folder = reader.tmp / "post"
    (folder / label).mkdir(parents=True)
    name = _UNSAFE.sub("_", name).lstrip(".")[-100:] or "attachment"
    try:
        os.link(path, folder / label / name)
    except OSError:  # another file system
        shutil.copyfile(path, folder / label / name)
    return folder


def newest_per_kind(
    artefacts: list[Artefact], accumulate: frozenset[str], warnings: list[InputWarning]
) -> list[Artefact]:
    """Of each kind not in `accumulate`, only the artefacts of the latest post that has it."""
    newest: dict[str, int] = {}
    for a in artefacts:
        if a.kind not in accumulate:
            newest[a.kind] = max(newest.get(a.kind, 0), post_order(a.file.name))
    kept = []
    for a in artefacts:
        latest = newest.get(a.kind)
        if latest is None or post_order(a.file.name) == latest:
            kept.append(a)
        else:
            replaced = f"{a.kind} replaced by the newer one in {where(latest)}"
            warnings.append(InputWarning.about("select", a.file.name, replaced))
    return kept
