"""Block redactors: every value under a YAML key or JSON member (a Secret's `data:` and
`stringData:`), when the object holding the block has the redactor's kind. Indentation decides
what belongs to a block and to an object, as in `kubectl get -o yaml|json` output."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

import regex

from analyzer.redact.redactors import Redactor

_LINE_KEY = regex.compile(
    r"(?P<lead>[ \t]*(?:-[ \t]+)?)(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s:#\"'{}\[\],][^:\n#]*?)[ \t]*:(?:[ \t]+|$)"
)
_STRUCTURE = regex.compile(r"[|>][-+]?\d*|[{}\[\]]|\{\}|\[\]|~|null")


def block_spans(
    r: Redactor, header: regex.Pattern, text: str, limit: float
) -> Iterator[tuple[int, int]]:
    """The values of every block opened by a key `header` matches (a mapping under `data:`, the
    members of `"data": {`), when the object holding it has the redactor's `kind`: the scalar
    after each key, each line of a block scalar, each list item."""
    heads = list(header.finditer(text, timeout=limit))
    kinds = _Objects(text, r.kind) if heads and r.kind is not None else None
    for m in heads:
        col = len(m.group("indent"))
        if kinds is not None and not kinds.has_kind(m.start(), col):
            continue
        pos = m.end() + 1
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            body = line.lstrip(" \t")
            if body and len(line) - len(body) <= col:
                break
            if body:
                yield from _line_value(line, pos)
            pos = end + 1


def _line_value(line: str, offset: int) -> Iterator[tuple[int, int]]:
    """The value on one line of a block: after `key:`, else the line's content."""
    km = _LINE_KEY.match(line)
    start = km.end() if km else len(line) - len(line.lstrip(" \t-"))
    end = len(line.rstrip(" \t,"))
    value = line[start:end]
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        start, end = start + 1, end - 1
    elif not value or _STRUCTURE.fullmatch(value):
        return
    if end > start:
        yield offset + start, offset + end


class _Objects:
    """Which YAML/JSON object each line belongs to, per key column, and whether that object says
    `kind: <kind>`: one sweep over the lines per column asked (a block's header and its object's
    `kind` are keys of the same column, with no list item start, shallower line or `---` between)."""

    def __init__(self, text: str, kind: str):
        self.lines = text.split("\n")
        self.starts: list[int] = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1
        self.kind = regex.compile(
            rf"[ \t]*(?:-[ \t]+)?[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?{regex.escape(kind)}[\"']?[ \t]*,?[ \t]*"
        )
        self._by_col: dict[int, tuple[list[int], set[int]]] = {}

    def has_kind(self, offset: int, col: int) -> bool:
        if col not in self._by_col:
            self._by_col[col] = self._sweep(col)
        objects, with_kind = self._by_col[col]
        return objects[bisect_right(self.starts, offset) - 1] in with_kind

    def _sweep(self, col: int) -> tuple[list[int], set[int]]:
        objects: list[int] = []
        with_kind: set[int] = set()
        current = 0
        for line in self.lines:
            body = line.lstrip(" \t")
            if body:
                indent = len(line) - len(body)
                item = body.startswith("- ") or body == "-"
                key_col = indent + len(body) - len(body[1:].lstrip(" \t")) if item else indent
                if line.startswith("---") or (indent < col and not (item and key_col == col)):
                    objects.append(-1)  # a boundary: what follows is another object
                    current += 1
                    continue
                if item and key_col == col:
                    current += 1  # a list item starts a new object on its own line
                if key_col == col and self.kind.fullmatch(line):
                    with_kind.add(current)
            objects.append(current)
        return objects, with_kind
