"""Split each file into artefacts and recognise each by content.

Small files are read whole so that mixed pastes can be split where their content changes: at
Markdown fences, shell prompts and headings, and between blank-line separated parts that are
different things (a pods table, then a describe's events, then a config). Big files are
recognised from their head and streamed later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.bundle.model import Artefact, BundleFile, InputWarning
from analyzer.bundle.sniff import sniff
from analyzer.bundle.text import clean, decode, looks_binary, toml_line, unframe
from analyzer.catalogue.kinds import Catalogue, Kind
from analyzer.structured import ELISION_RE, SHELL_PROMPT, loads_as_yaml

SMALL_FILE = 16 << 20  # read whole and segment below this size; stream logs above it
# ... or a log of more lines than this (16 MiB of lines of 67 bytes): reading and segmenting
# is Python work per line, and a file of blank lines holds a line per byte (4 MiB of them took
# 22 s and 1.7 GB)
SMALL_LINES = 250_000
HEAD_BYTES = 256 << 10
PARAGRAPH_SPLIT_MAX = 1 << 20  # split blank-line separated parts only in pastes up to this

# a fence line; "```code```" on one line is inline code (a backtick fence's info holds no backtick)
_FENCE_RE = re.compile(r"^\s*(?:```[^`]*$|~~~)")
_PROMPT_RE = re.compile(
    rf"^\s*(?:(?P<prompt>{SHELL_PROMPT})\s*)?"
    r"(?P<cmd>(?:sudo\s+)?(?P<prog>kubectl|k|helm|cat|nvidia-smi|journalctl|containerd|crictl"
    r"|docker|nvidia-ctk|ls|grep|tail|less|dmesg)(?:\s+\S.*)?)\s*$"
)
# without a prompt, only these unambiguous commands start a new pasted output
_BARE_COMMANDS = ("kubectl", "helm", "journalctl", "crictl", "nvidia-ctk", "nvidia-smi")
_DEFAULTED_RE = re.compile(r'^Defaulted container "([\w.-]+)"')
_CONTAINER_FLAG_RE = re.compile(r"(?:^|\s)(?:-c|--container)[ =]([\w.-]+)")
_HEADER_RE = re.compile(r"^#{1,6}\s+\S")
# `kubectl describe` starts each object with `Name:` at column 0, then its namespace or labels
_DESCRIBE_START_RE = re.compile(r"^Name:\s+\S")
_DESCRIBE_SECOND_RE = re.compile(r"^(?:Namespace|Roles|Labels|Priority):")
# a line a YAML block mapping or sequence can hold at column 0: a key, an item, a comment, a
# document marker (greedy up to the first colon: a lazy key and optional blanks before it took
# time in the square of a line of spaces; no `=` in a key, which a TOML line's string may hold)
_YAML_COLUMN0_RE = re.compile(
    r"""^(?:(?:[^\s#\[\]{}"'|>@`%&*!?,=-][^:#=]*|"[^"]*"|'[^']*'):(?:[ \t]|$)"""
    r"|-(?:[ \t]|$)|#|---|\.\.\.)"
)


@dataclass
class _Segment:
    """A stretch of a file's lines that is one thing (cut at fences, prompts, ...)."""

    first: int  # 1-based line of the segment's first line in the file
    lines: list[str]
    container: str | None


def recognise(
    files: list[BundleFile], catalogue: Catalogue
) -> tuple[list[Artefact], list[InputWarning]]:
    """The artefacts of the files, and what recognition could not read or decode (warnings,
    each naming its file). The reader's inventory is left as the reader built it."""
    out: list[Artefact] = []
    warnings: list[InputWarning] = []
    for f in files:
        try:
            with f.path.open("rb") as fh:
                head = fh.read(HEAD_BYTES if f.size > SMALL_FILE else SMALL_FILE)
        except OSError as exc:
            warnings.append(
                InputWarning.about("recognise", f.name, f"unreadable ({exc.strerror or exc})")
            )
            out.append(Artefact(f, "unreadable", str(exc.strerror or exc)))
            continue
        if looks_binary(head):
            out.append(Artefact(f, "binary", "binary content (NUL or control bytes)"))
            continue
        text, warns = decode(head)
        warnings.extend(InputWarning.about("recognise", f.name, w) for w in warns)
        text = clean(text)
        if f.declared_kind:
            out.append(Artefact(f, f.declared_kind, "declared by the input", 1, text))
            continue
        if f.size > SMALL_FILE:  # a framed head is sniffed without its frame; the log streams as is
            kind, reason = sniff(unframe(text), catalogue)
            k = catalogue.get(kind)
            if k is not None and k.is_log:
                out.append(Artefact(f, kind, reason + " (streamed)"))
            else:
                out.append(
                    Artefact(f, "unrecognised", f"{f.size >> 20} MiB {kind}: too large to parse")
                )
            continue
        text = unframe(text)  # a small file is parsed without a terminal's frame
        if not text.strip():
            out.append(Artefact(f, "empty", "empty or only white space", 1, ""))
            continue
        if (lines := text.count("\n")) > SMALL_LINES:
            kind, reason = sniff(text, catalogue)
            k = catalogue.get(kind)
            if k is not None and k.is_log:
                out.append(Artefact(f, kind, reason + " (streamed: many short lines)"))
                continue
            if not _structured(kind, catalogue):  # an object or a config is parsed whole
                out.append(
                    Artefact(f, "unrecognised", f"{lines:,} lines of {kind}: too many to parse")
                )
                continue
        out.extend(_split(f, text, catalogue))
    return out, warnings


def _structured(kind: str, catalogue: Catalogue) -> bool:
    k = catalogue.get(kind)
    return k is not None and k.family in ("object", "config")


def _weak(kind: str, catalogue: Catalogue) -> bool:
    """A kind that says little about what a part is (`weak: true` in the catalogue)."""
    k = catalogue.get(kind)
    return k is not None and k.weak


def _yaml_tail(lines: list[str]) -> int | None:
    """Where a YAML object pasted with other text right after it ends (no blank line, no fence
    between them: a log line, a `[... ...]` marker): the index of the first line at column 0
    that neither a block mapping nor a sequence can hold, when the text loads as YAML only
    without it (`[a]: b` parses, as a key no mapping takes). None for any other text (valid
    YAML, JSON, TOML, prose)."""
    first = next((i for i, x in enumerate(lines) if x.strip() and not x.startswith("#")), None)
    if first is None or not _YAML_COLUMN0_RE.match(lines[first]):
        return None
    tail = _foreign_line(lines, first + 1)
    if tail is None or loads_as_yaml("\n".join(lines)):
        return None
    return tail if loads_as_yaml("\n".join(lines[:tail])) else None


def _past_unscanned(text: str, lines: list[str], tail: int, kind: Kind | None) -> int | None:
    """Where a YAML object's tail starts (`_yaml_tail`) once the blocks the kind leaves
    unscanned (kinds.yaml `unscanned:`) are skipped: kubectl describe prints an exec probe's
    script with its own line breaks, at column 0, and such a line is the object's; the tail is
    then the next column-0 line after the probe that the object cannot hold (a log pasted right
    below it), or None."""
    if kind is None or kind.unscanned is None:
        return tail
    offset = sum(len(x) + 1 for x in lines[:tail])
    for m in kind.unscanned.finditer(text):
        if m.start() < offset < m.end():
            return _foreign_line(lines, text.count("\n", 0, m.end()) + 1)  # after the probe
    return tail


def _foreign_line(lines: list[str], start: int) -> int | None:
    """The first line from `start` on at column 0 that neither a block mapping nor a sequence
    can hold (a log line, a `[... ...]` marker), or None."""
    return next(
        (
            i
            for i in range(start, len(lines))
            if lines[i][:1].strip() and not _YAML_COLUMN0_RE.match(lines[i])
        ),
        None,
    )


def _explicit_segments(
    lines: list[str], split_headers: bool, yaml_tail: int | None = None
) -> list[_Segment]:
    """Split at fences, shell prompts (the command names the container), Markdown headings,
    `Defaulted container` lines, the `Name:` line that starts a described object and where a
    YAML object ends (`yaml_tail`, the index of the first line after it)."""
    segments: list[_Segment] = []
    cur: list[str] = []
    start = 1
    container: str | None = None

    def flush(next_start: int) -> None:
        nonlocal cur, start
        if any(x.strip() for x in cur):
            segments.append(_Segment(start, cur, container))
        cur, start = [], next_start

    fence_indent = None  # a fence indented under a list item indents its whole block
    prompt_only = False  # cur holds nothing but a command line (and blank lines)
    for i, line in enumerate(lines, 1):
        if yaml_tail is not None and i == yaml_tail + 1:
            flush(i)
        if _FENCE_RE.match(line):
            flush(i + 1)
            fence_indent = None if fence_indent is not None else len(line) - len(line.lstrip())
            continue
        if fence_indent and line[:fence_indent].isspace():
            line = line[fence_indent:]
        prompt = _PROMPT_RE.match(line) if len(line) < 600 else None
        bare = prompt and prompt["prog"] in _BARE_COMMANDS and not line[:1].isspace()
        if prompt and (prompt["prompt"] or bare):
            flush(i)
            m = _CONTAINER_FLAG_RE.search(prompt.group("cmd"))
            container = m.group(1) if m else None
            cur.append(line)  # the command stays with its output (its flags are evidence too)
            start = i
            prompt_only = True
            continue
        if split_headers and _HEADER_RE.match(line) and (i == 1 or not lines[i - 2].strip()):
            flush(i + 1)
            container = None
            continue
        if (
            cur
            and not prompt_only
            and _DESCRIBE_START_RE.match(line)
            and i < len(lines)
            and _DESCRIBE_SECOND_RE.match(lines[i].strip())
        ):
            flush(i)  # a new described object: the part before it is something else
            cur.append(line)
            continue
        if line.strip():
            prompt_only = False
        dm = _DEFAULTED_RE.match(line)
        if dm:
            container = container or dm.group(1)
            flush(i + 1)
            continue
        if not cur:
            start = i
        cur.append(line)
    flush(len(lines) + 1)
    return segments


def _paragraphs(seg: _Segment) -> list[_Segment]:
    """Blank-line separated parts; a line that only marks lines left out (`...`, `[...]`, the
    `[... ...]` of joined excerpts) separates them too: what follows it may be another thing."""
    out: list[_Segment] = []
    cur: list[str] = []
    start = seg.first
    for i, line in enumerate(seg.lines):
        if not line.strip() or ELISION_RE.match(line):
            if cur:
                out.append(_Segment(start, cur, seg.container))
            cur = []
            start = seg.first + i + 1
            continue
        if not cur:
            start = seg.first + i
        cur.append(line)
    if cur:
        out.append(_Segment(start, cur, seg.container))
    return out


def _regions(
    seg: _Segment, catalogue: Catalogue, known: tuple[str, str] | None = None
) -> list[tuple[_Segment, str, str]]:
    """A segment as one artefact, or split where blank-line separated parts are different
    things (more than one specific kind among them). Only a paste-sized segment is split: a
    big one with blank lines is a log, and sniffing each of its paragraphs would cost seconds.
    `known` is the segment's kind when the caller sniffed the same text already."""
    whole = "\n".join(seg.lines)
    wk, wr = known or sniff(whole, catalogue)
    if len(whole) > PARAGRAPH_SPLIT_MAX:
        return [(seg, wk, wr)]
    paras = _paragraphs(seg)
    if len(paras) <= 1:
        return [(seg, wk, wr)]
    kinds = [sniff("\n".join(p.lines), catalogue) for p in paras]
    specific = {k for k, _ in kinds if not _weak(k, catalogue)}
    if len(specific) <= 1 and (not specific or wk in specific or _weak(wk, catalogue)):
        return [(seg, wk, wr)]
    out: list[tuple[_Segment, str, str]] = []
    for p, (k, reason) in zip(paras, kinds, strict=True):
        if out:
            prev, pk, preason = out[-1]
            prev_log = catalogue.get(pk) is not None and catalogue[pk].is_log
            # a weak log part (klog lines of no known component) continues the log before it
            gap = p.first - (prev.first + len(prev.lines))
            merged = _Segment(prev.first, prev.lines + [""] * gap + p.lines, prev.container)
            if pk == k or (prev_log and _weak(k, catalogue) and catalogue[k].is_log):
                out[-1] = (merged, pk, preason)
                continue
            # a config file's keys before its first table or section (TOML's top-level keys, and
            # tables the kind's own markers are not in): a part of nothing but `key = value` lines,
            # table headers and comments, never prose
            if (
                _weak(pk, catalogue)
                and catalogue[k].family == "config"
                and all(toml_line(x) for x in prev.lines)
            ):
                together = sniff("\n".join(merged.lines), catalogue)
                if together[0] == k:
                    out[-1] = (merged, *together)
                    continue
        out.append((p, k, reason))
    return out


def _split(f: BundleFile, text: str, catalogue: Catalogue) -> list[Artefact]:
    whole_kind, whole_reason = sniff(text, catalogue)
    lines = text.split("\n")
    structured = _structured(whole_kind, catalogue)
    tail = _yaml_tail(lines) if structured else None
    if tail is not None:  # a describe's probe script printed at column 0 is the object's
        tail = _past_unscanned(text, lines, tail, catalogue.get(whole_kind))
    has_breaks = any(_FENCE_RE.match(x) or _DEFAULTED_RE.match(x) for x in lines[:20000]) or any(
        _DESCRIBE_START_RE.match(x) for x in lines[1:20000]
    )
    if structured and tail is None and not has_breaks and "\n\n" not in text.strip():
        return [Artefact(f, whole_kind, whole_reason, 1, text)]
    segments = _explicit_segments(lines, split_headers=not structured, yaml_tail=tail)
    out: list[Artefact] = []
    texts: list[str] = []  # each artefact's text, as built (Artefact.text may be None elsewhere)
    whole = len(segments) == 1 and segments[0].lines == lines
    for seg in segments:
        for part, kind, reason in _regions(
            seg, catalogue, (whole_kind, whole_reason) if whole else None
        ):
            cont = part.container
            if cont and cont in catalogue.by_container and not _structured(kind, catalogue):
                kind, reason = (
                    catalogue.by_container[cont],
                    f"pasted `kubectl logs -c {cont}` output",
                )
            part_text = "\n".join(part.lines)
            if (
                out
                and out[-1].kind == kind
                and not _structured(kind, catalogue)
                and out[-1].container == cont
            ):
                prev, prev_text = out[-1], texts[-1]
                gap = part.first - (prev.first_line + prev_text.count("\n") + 1)
                texts[-1] = prev_text + "\n" * (gap + 1) + part_text
                out[-1] = Artefact(f, kind, prev.reason, prev.first_line, texts[-1], cont)
                continue
            out.append(Artefact(f, kind, reason, part.first, part_text, cont))
            texts.append(part_text)
    if not out:
        return [Artefact(f, "empty", "empty or only white space", 1, "")]
    return out
