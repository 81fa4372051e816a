"""A Kubernetes object's YAML with its folded strings on one line each, for the line scanner.

kubectl prints long strings folded over lines (go-yaml breaks them near 80 columns): a pod's
condition message "0/3 nodes are available: 1 node(s) had untolerated taint {...}, 2 Insufficient
nvidia.com/gpu. preemption: ..." lands on three lines, and a signature read line by line saw only
the first, its GPU reason out of sight. Each continuation is joined to the line its value starts
on, with a space as YAML reads the break, and left blank, so every line keeps its number. A quoted
string the paste cuts (its text ends, or a `[... ...]` line stands where the rest was) is joined up
to the cut: what was pasted of it is one message."""

from __future__ import annotations

import re

# a key whose value starts on its line: plain, or opened by a quote
_VALUE_START = re.compile(
    r"""^(?P<indent>[ ]*)(?:- )?[^\s:#'"\-][^:#]*:[ ]+(?P<quote>['"]?)(?P<value>.*)$"""
)
# a line that starts a key or an item: never a plain value's continuation
_STRUCTURE = re.compile(r"^\s*(?:- |-$|#|[^\s:#][^:#]*:(?:\s|$))")
# lines a quoted string is followed over (kubectl's messages take a few): a quote never closed
# on every line of a long file would otherwise be followed to its end from each
FOLDED_MAX = 64
# go-yaml folds a string only where its line would pass 80 columns: a shorter line is whole
FOLDED_FROM = 60


def unfold(text: str) -> str:
    """`text` with each folded string joined onto its first line (its other lines left blank).

    >>> unfold("  message: '0/3 nodes are available: 1 node(s) had taint {a:\\n    }, 2 Insufficient\\n    nvidia.com/gpu.'\\n  reason: Unschedulable")
    "  message: '0/3 nodes are available: 1 node(s) had taint {a: }, 2 Insufficient nvidia.com/gpu.'\\n\\n\\n  reason: Unschedulable"
    >>> unfold("  message: 0/3 nodes are available because the pod's request is more than\\n    any node has\\n  reason: x")
    "  message: 0/3 nodes are available because the pod's request is more than any node has\\n\\n  reason: x"
    >>> unfold("    message: 'pods \\"mps-control-daemon-5e2b-\\" is forbidden: unable to validate\\n      against any security context constraint\\n[... ...]")
    '    message: \\'pods "mps-control-daemon-5e2b-" is forbidden: unable to validate against any security context constraint\\n\\n[... ...]'
    """
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _VALUE_START.match(lines[i]) if len(lines[i]) >= FOLDED_FROM else None
        if m is None or not m["value"]:
            i += 1
            continue
        quote, indent = m["quote"], len(m["indent"])
        end = i + 1
        if quote:
            if _closed(m["value"], quote):
                i += 1
                continue
            # a string goes on more indented than its key, up to the line that closes it
            last = min(len(lines), i + 1 + FOLDED_MAX)
            while (
                end < last
                and not _closed(lines[end], quote)
                and not _cut(lines[end])
                and _deeper(lines[end], indent)
            ):
                end += 1
            if end < last and _closed(lines[end], quote) and not _cut(lines[end]):
                end += 1  # past the line that closes it
            elif end == i + 1 or not _cut_at(lines, end):
                i += 1  # not closed, nor cut by the paste: no folded string, left as it is
                continue
            # else: the paste is cut inside the string (its text ends, or a cut mark): joined
        else:
            while (
                end < len(lines)
                and _deeper(lines[end], indent)
                and not _STRUCTURE.match(lines[end])
            ):
                end += 1
        if end > i + 1:
            lines[i] = " ".join([lines[i].rstrip(), *(x.strip() for x in lines[i + 1 : end])])
            lines[i + 1 : end] = [""] * (end - i - 1)
        i = end
    return "\n".join(lines)


def _closed(part: str, quote: str) -> bool:
    """Whether a quoted string open at the start of `part` (after its opening quote) closes in
    it: a single quote doubled is a quote inside; a double quote after a backslash too."""
    if quote == "'":
        return part.replace("''", "").count("'") % 2 == 1
    return len(re.findall(r'(?<!\\)"', part)) % 2 == 1


def _deeper(line: str, indent: int) -> bool:
    """Whether `line` holds text indented more than `indent` spaces."""
    return bool(line.strip()) and len(line) - len(line.lstrip(" ")) > indent


def _cut_at(lines: list[str], at: int) -> bool:
    """Whether the paste ends, or is cut, at line `at`."""
    return at >= len(lines) or _cut(lines[at])


def _cut(line: str) -> bool:
    """A line that stands for what a paste left out (`[... ...]`, `...`), never a string's part."""
    return line.lstrip().startswith(("[...", "[…", "...", "…"))
