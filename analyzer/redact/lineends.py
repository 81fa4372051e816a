"""Carriage returns before line ends, taken out of a piece for the redactors and put back in
what they wrote. Every pattern, block rule and key rule is written for `\\n` line ends (`$`, a
`Name:` line followed by `Roles:`, a value read to its line's end): in a file saved with CRLF
the names were not found and a Secret's values were read with their `\\r`, then sought nowhere
else, so they stayed in clear in every other file."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Generic, TypeVar

from analyzer.redact.output import Parts

T = TypeVar("T", str, bytes)


@dataclass(frozen=True)
class LineEnds(Generic[T]):
    """The carriage returns each line of a piece had before its newline: `crs`, line number ->
    how many (None: one each, the CRLF file); the piece as the redactors read it (kept where
    lines have different ends, to pair them with what was written); and the lone `\\r`s it ended
    with (a file cut there)."""

    crs: dict[int, int] | None
    read: T | None
    final_crs: int


def split_ends(data: T) -> tuple[T, LineEnds | None]:
    """`data` with the `\\r`s before each newline (and at its very end) taken out, and what was
    there; None when it holds none (the piece is then as it was)."""
    cr, lf = ("\r", "\n") if isinstance(data, str) else (b"\r", b"\n")
    if cr not in data:  # most pieces: 1.4 ms a 16 MiB one, where counting `\r\n` takes 21
        return data, None
    final = len(data) - len(data.rstrip(cr))
    body = data[: len(data) - final]
    crlf = body.count(cr + lf)
    if crlf == body.count(lf) and cr + cr + lf not in body:
        if not crlf and not final:
            return data, None  # lone `\r`s only, inside lines: left as they are
        return body.replace(cr + lf, lf), LineEnds(None, None, final)
    lines = body.split(lf)
    crs = {n: len(x) - len(x.rstrip(cr)) for n, x in enumerate(lines[:-1]) if x.endswith(cr)}
    read = lf.join([x.rstrip(cr) if n in crs else x for n, x in enumerate(lines)])
    return read, LineEnds(crs, read, final)


def join_ends(data: T, ends: LineEnds | None) -> T:
    """What was written from a piece `split_ends` made, with its line ends as they were. Where a
    value over several lines (a PEM key) became one token, the lines written are paired with
    those read by their content: each keeps its own end, a merged one the end of the last line
    it took."""
    if ends is None:
        return data
    cr, lf = ("\r", "\n") if isinstance(data, str) else (b"\r", b"\n")
    if ends.crs is None:
        data = data.replace(lf, cr + lf)
    elif ends.crs:
        lines = data.split(lf)
        crs = _paired(ends.read.split(lf), lines, ends.crs) if ends.read is not None else {}
        data = lf.join([x + cr * crs[n] if n in crs else x for n, x in enumerate(lines)])
    return data + cr * ends.final_crs


def _paired(read: list, written: list, crs: dict[int, int]) -> dict[int, int]:
    """The carriage returns of each written line: those of the line read it pairs with (the
    same line number while the counts match; else by content, a changed stretch ending as the
    last line read of it ends)."""
    if len(read) == len(written):
        return crs
    out: dict[int, int] = {}
    matcher = SequenceMatcher(None, read, written, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            i = i1 + (j - j1) if tag == "equal" else min(i1 + (j - j1), i2 - 1)
            if j == j2 - 1 and tag != "equal":
                i = i2 - 1  # a merged line ends as the last line it took
            if 0 <= i < len(read) and i in crs:
                out[j] = crs[i]
    return out


def only_crlf(data: bytes | bytearray) -> bool:
    """Whether every carriage return of `data` is just before a newline (or ends it)."""
    return b"\r" not in data or data.rstrip(b"\r").count(b"\r") == data.count(b"\r\n")


def joined_parts(parts: Parts, ends: LineEnds | None) -> Parts:
    """A piece's written parts (see `output.Parts`) with its line ends put back."""
    if ends is None:
        return parts
    made = parts() if callable(parts) else parts
    return [join_ends(b"".join(made), ends)]
