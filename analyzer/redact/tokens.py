"""Stable tokens: one map per run, so the same value reads the same token in every file and the
diagnosis of the redacted bundle names the same (tokenised) node everywhere."""

from __future__ import annotations

import json
import os
from pathlib import Path

from analyzer.atomic import atomic_path
from analyzer.errors import AnalyzerError


class TokenMap:
    """value -> `<prefix>-N`. Tokens already present in the original text are skipped, so a
    token never collides with a real value (a node really named node-1 becomes node-2)."""

    def __init__(self, reserved: set[str] | frozenset[str] = frozenset()):
        self.reserved = set(reserved)
        self._by_value: dict[tuple[str, str], str] = {}
        self._values: dict[str, str] = {}  # token -> value
        self._next: dict[str, int] = {}

    def token(self, prefix: str, value: str) -> str:
        """
        >>> t = TokenMap({"ip-1"})
        >>> t.token("ip", "10.0.0.5"), t.token("ip", "10.0.0.6"), t.token("ip", "10.0.0.5")
        ('ip-2', 'ip-3', 'ip-2')
        """
        key = (prefix, value)
        hit = self._by_value.get(key)
        if hit is not None:
            return hit
        n = self._next.get(prefix, 1)
        while f"{prefix}-{n}" in self.reserved:
            n += 1
        self._next[prefix] = n + 1
        tok = self._by_value[key] = f"{prefix}-{n}"
        self._values[tok] = value
        return tok

    def is_token(self, value: str) -> bool:
        return value in self._values

    def lookup(self, value: str) -> str | None:
        """The token a real value got in this run (e.g. the node a user names with --node)."""
        return next((t for (_p, v), t in self._by_value.items() if v == value), None)

    def mapping(self) -> dict[str, str]:
        return dict(sorted(self._values.items(), key=lambda kv: _natural(kv[0])))

    def write(self, path: Path) -> None:
        """The token -> value table, readable by its owner only: it undoes the redaction."""
        try:
            with atomic_path(path) as tmp:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(self.mapping(), fh, indent=2, ensure_ascii=False)
                    fh.write("\n")
        except OSError as exc:
            raise AnalyzerError(f"cannot write {path}: {exc.strerror or exc}") from None


def _natural(token: str) -> tuple[str, int]:
    prefix, _, n = token.rpartition("-")
    return prefix, int(n)
