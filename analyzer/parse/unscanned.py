"""The blocks of an object that are not searched for log lines (kinds.yaml `unscanned:`).

A pod's YAML or describe output is scanned for its status messages and events, but it also holds
what its containers run: a liveness probe `nvidia-smi 2>&1 | grep -q "Failed to initialize NVML"`
is a check someone wrote, not an error that happened, and read as a line it was that error at
high confidence. A block opened by one of the kind's patterns (the lines the opening match
spans, the lines below it more indented, and YAML's list items at its key's column) is left
blank, so every other line keeps its number. A pattern may span lines: describe prints a probe's
script with its own line breaks, at column 0."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

import regex

_INDENT = regex.compile(r"[ \t]*+")
_KEY_COLUMN = regex.compile(r"[ \t]*+(?:-[ \t]++)*+")  # a list item's key starts after its dash


def blank_blocks(text: str, opener: regex.Pattern) -> str:
    r"""`text` with each block `opener` opens left blank. The opener is anchored at a line's
    start (`(?m)^`, as the catalogue compiles it): a run of blanks is then read once, not from
    each of its positions.

    >>> blank_blocks("spec:\n  livenessProbe:\n    exec:\n    - grep NVML\n  image: x\nstatus: {}",
    ...              regex.compile(r"(?m)^ *livenessProbe:"))
    'spec:\n\n\n\n  image: x\nstatus: {}'
    >>> blank_blocks("  - lifecycle:\n      preStop: {}\n    name: c", regex.compile(r"(?m)^ *- lifecycle:"))
    '\n\n    name: c'
    >>> blank_blocks("    Liveness: exec [sh -c x\nFailed to initialize NVML\n] delay=0s\n    Ready: True",
    ...              regex.compile(r"(?m)^ *Liveness: exec \[(?:.*\n){0,8}?.*?\] delay="))
    '\n\n\n    Ready: True'
    """
    lines = text.split("\n")
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    done = 0  # lines before this one are read (or left blank)
    for m in opener.finditer(text):
        first = bisect_right(starts, m.start()) - 1
        if first < done:
            continue  # inside a block already left blank
        last = bisect_right(starts, max(m.end() - 1, m.start())) - 1
        depth = _KEY_COLUMN.match(lines[first]).end()
        for i in range(first, last + 1):
            lines[i] = ""
        i = last + 1
        while i < len(lines):
            line = lines[i]
            indent = _INDENT.match(line).end()
            item = indent == depth and line.startswith("- ", indent)
            if line.strip() and indent <= depth and not item:
                break
            lines[i] = ""
            i += 1
        done = i
    return "\n".join(lines)
