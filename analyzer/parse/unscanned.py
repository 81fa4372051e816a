"""The blocks of an object that are not searched for log lines (kinds.yaml `unscanned:`).

A pod's YAML or describe output is scanned for its status messages and events, but it also holds
what its containers run: a liveness probe `nvidia-smi 2>&1 | grep -q "Failed to initialize NVML"`
is a check someone wrote, not an error that happened, and read as a line it was that error at
high confidence. A block opened by one of the kind's patterns (the opening line, the lines below
it more indented, and YAML's list items at its own indentation) is left blank, so every other
line keeps its number."""

from __future__ import annotations

import regex

_INDENT = regex.compile(r"[ \t]*")
_KEY_COLUMN = regex.compile(r"[ \t]*(?:-[ \t]+)*")  # a list item's key starts after its dash


def blank_blocks(text: str, opener: regex.Pattern) -> str:
    """`text` with each block `opener` opens left blank.

    >>> blank_blocks("spec:\\n  livenessProbe:\\n    exec:\\n    - grep NVML\\n  image: x\\nstatus: {}",
    ...              regex.compile(r" *livenessProbe:"))
    'spec:\\n\\n\\n\\n  image: x\\nstatus: {}'
    >>> blank_blocks("  - lifecycle:\\n      preStop: {}\\n    name: c", regex.compile(r"\\s*- lifecycle:"))
    '\\n\\n    name: c'
    """
    if not opener.search(text):
        return text
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not opener.match(lines[i]):
            i += 1
            continue
        depth = _KEY_COLUMN.match(lines[i]).end()
        lines[i] = ""
        i += 1
        while i < len(lines):
            line = lines[i]
            indent = _INDENT.match(line).end()
            item = indent == depth and line.startswith("- ", indent)
            if line.strip() and indent <= depth and not item:
                break
            lines[i] = ""
            i += 1
    return "\n".join(lines)
