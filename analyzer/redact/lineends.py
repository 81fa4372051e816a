"""Carriage returns before line ends, taken out of a piece for the redactors and put back in
what they wrote. Every pattern, block rule and key rule is written for `\\n` line ends (`$`, a
`Name:` line followed by `Roles:`, a value read to its line's end): in a file saved with CRLF
the names were not found and a Secret's values were read with their `\\r`, then sought nowhere
else, so they stayed in clear in every other file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from analyzer.redact.output import Parts

T = TypeVar("T", str, bytes)


@dataclass(frozen=True)
class LineEnds:
    """Which lines of a piece ended with `\\r\\n` (`crlf`: line numbers, or None for all of
    them), how many lines it had, and whether it ended with a lone `\\r` (a file cut there)."""

    crlf: frozenset[int] | None
    lines: int
    final_cr: bool


def split_ends(data: T) -> tuple[T, LineEnds | None]:
    """`data` with its `\\r\\n` made `\\n` (and a final lone `\\r` dropped), and what was there;
    None when it holds neither (the piece is then as it was)."""
    cr, lf = ("\r", "\n") if isinstance(data, str) else (b"\r", b"\n")
    if cr not in data:  # most pieces: 1.4 ms a 16 MiB one, where counting `\r\n` takes 21
        return data, None
    crlf = data.count(cr + lf)
    final_cr = data.endswith(cr)
    if not crlf and not final_cr:
        return data, None
    if final_cr:
        data = data[:-1]
    newlines = data.count(lf)
    if crlf == newlines:
        which = None
    else:
        which = frozenset(n for n, line in enumerate(data.split(lf)[:-1]) if line.endswith(cr))
    return data.replace(cr + lf, lf), LineEnds(which, newlines + 1, final_cr)


def only_crlf(data: bytes | bytearray) -> bool:
    """Whether every carriage return of `data` is just before a newline."""
    return b"\r" not in data or data.count(b"\r") == data.count(b"\r\n")


def join_ends(data: T, ends: LineEnds | None) -> T:
    """What was written from a piece `split_ends` made, with its line ends as they were. Where a
    multi-line value was replaced in a file of mixed line ends, the lines no longer match: each
    line then gets the ending most of the piece's lines had."""
    if ends is None:
        return data
    cr, lf = ("\r", "\n") if isinstance(data, str) else (b"\r", b"\n")
    if ends.crlf is None:
        data = data.replace(lf, cr + lf)
    else:
        lines = data.split(lf)
        if len(lines) == ends.lines:
            data = lf.join(line + cr if n in ends.crlf else line for n, line in enumerate(lines))
        elif 2 * len(ends.crlf) > ends.lines:
            data = data.replace(lf, cr + lf)
    return data + cr if ends.final_cr else data


def joined_parts(parts: Parts, ends: LineEnds | None) -> Parts:
    """A piece's written parts (see `output.Parts`) with its line ends put back."""
    if ends is None:
        return parts
    made = parts() if callable(parts) else parts
    return [join_ends(b"".join(made), ends)]
