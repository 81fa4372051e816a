"""Split each file into artefacts and recognise each by content.

Small files are read whole so that mixed pastes (Markdown fences, several commands and their
outputs in one file) can be split; big files are recognised from their head and streamed later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from analyzer.bundle.model import Artefact, BundleFile, Inventory
from analyzer.bundle.sniff import sniff
from analyzer.bundle.text import clean, decode, looks_binary
from analyzer.rules.sources import Source

SMALL_FILE = 16 << 20  # read whole and segment below this size; stream logs above it
HEAD_BYTES = 256 << 10

_FENCE_RE = re.compile(r"^\s*(?:```|~~~)")
_PROMPT_RE = re.compile(
    r"^\s*(?:[\w.-]+@[\w.:~/-]*[$#]|@?[\w.-]*@?cloudshell:[^$]*\$|\$|#|PS [^>]+>)\s*"
    r"(?P<cmd>(?:sudo\s+)?(?:kubectl|k|helm|cat|nvidia-smi|journalctl|containerd|crictl|docker"
    r"|nvidia-ctk|ls|grep|tail|less)\b.*)$"
)
_DEFAULTED_RE = re.compile(r'^Defaulted container "([\w.-]+)"')
_CONTAINER_FLAG_RE = re.compile(r"(?:^|\s)(?:-c|--container)[ =]([\w.-]+)")
_HEADER_RE = re.compile(r"^#\s+\S")
_STRUCTURED = {
    "node",
    "pod",
    "cdi-spec",
    "toolkit-config",
    "containerd-config",
    "helm-values",
    "runtimeclass",
    "daemonset",
    "configmap",
    "deployment",
    "resourceslice",
    "deviceclass",
    "node-describe",
}


def recognise(
    files: list[BundleFile], sources: Mapping[str, Source], inventory: Inventory
) -> list[Artefact]:
    container_kind = {c: s.id for s in sources.values() for c in s.containers}
    out: list[Artefact] = []
    for f in files:
        try:
            with f.path.open("rb") as fh:
                head = fh.read(HEAD_BYTES if f.size > SMALL_FILE else SMALL_FILE)
        except OSError as exc:
            inventory.warnings.append(f"{f.name}: unreadable ({exc.strerror or exc})")
            out.append(Artefact(f, "unreadable", str(exc.strerror or exc)))
            continue
        if looks_binary(head):
            out.append(Artefact(f, "binary", "binary content (NUL or control bytes)"))
            continue
        text, warns = decode(head)
        inventory.warnings.extend(f"{f.name}: {w}" for w in warns)
        text = clean(text)
        if f.size > SMALL_FILE:
            kind, reason = sniff(text, sources)
            if (kind in sources and sources[kind].is_log) or kind == "klog":
                out.append(Artefact(f, kind, reason + " (streamed)"))
            else:
                out.append(
                    Artefact(f, "unrecognised", f"{f.size >> 20} MiB {kind}: too large to parse")
                )
            continue
        out.extend(_split(f, text, sources, container_kind))
    inventory.artefacts = out
    return out


def _split(
    f: BundleFile, text: str, sources: Mapping[str, Source], container_kind: dict[str, str]
) -> list[Artefact]:
    whole_kind, whole_reason = sniff(text, sources)
    lines = text.split("\n")
    has_breaks = any(_FENCE_RE.match(x) or _PROMPT_RE.match(x) for x in lines[:20000])
    if whole_kind in _STRUCTURED and not has_breaks:
        return [Artefact(f, whole_kind, whole_reason, 1, text)]
    split_headers = whole_kind not in _STRUCTURED
    segments: list[tuple[int, list[str], str | None]] = []  # (first line, lines, container)
    cur: list[str] = []
    start = 1
    container: str | None = None

    def flush(next_start: int) -> None:
        nonlocal cur, start
        if any(x.strip() for x in cur):
            segments.append((start, cur, container))
        cur, start = [], next_start

    for i, line in enumerate(lines, 1):
        prompt = _PROMPT_RE.match(line)
        if _FENCE_RE.match(line):
            flush(i + 1)
            continue
        if prompt:
            flush(i + 1)
            m = _CONTAINER_FLAG_RE.search(prompt.group("cmd"))
            container = m.group(1) if m else None
            continue
        if split_headers and _HEADER_RE.match(line) and (i == 1 or not lines[i - 2].strip()):
            flush(i + 1)
            container = None
            continue
        dm = _DEFAULTED_RE.match(line)
        if dm:
            container = container or dm.group(1)
            flush(i + 1)
            continue
        if not cur:
            start = i
        cur.append(line)
    flush(len(lines) + 1)

    out: list[Artefact] = []
    for first, seg_lines, cont in segments:
        seg_text = "\n".join(seg_lines)
        kind, reason = sniff(seg_text, sources)
        if cont and cont in container_kind and kind not in _STRUCTURED:
            kind, reason = container_kind[cont], f"pasted `kubectl logs -c {cont}` output"
        if out and out[-1].kind == kind and kind not in _STRUCTURED and out[-1].container == cont:
            prev = out[-1]
            gap = first - (prev.first_line + prev.text.count("\n") + 1)
            merged = prev.text + "\n" * (gap + 1) + seg_text
            out[-1] = Artefact(f, kind, prev.reason, prev.first_line, merged, cont)
            continue
        out.append(Artefact(f, kind, reason, first, seg_text, cont))
    if not out:
        return [Artefact(f, "empty", "empty or only white space", 1, "")]
    return out
