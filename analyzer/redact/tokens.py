"""Stable tokens: one map per run, so the same value reads the same token in every file and the
diagnosis of the redacted bundle names the same (tokenised) node everywhere. A map written by
`--map` is read back by the next run with the same `--map`, which extends it: files redacted one
at a time, or a bundle and its follow-up, keep their tokens."""

from __future__ import annotations

import json
from pathlib import Path

import regex

from analyzer.atomic import atomic_path
from analyzer.errors import AnalyzerError

TOKEN = regex.compile(r"(?P<prefix>[a-z][a-z0-9]*)-(?P<n>[1-9][0-9]{0,8})")


class TokenMap:
    """value -> `<prefix>-N`. Tokens already present in the original text are skipped, so a
    token never collides with a real value (a node really named node-1 becomes node-2)."""

    def __init__(self, reserved: set[str] | frozenset[str] = frozenset()):
        self.reserved = set(reserved)
        self._by_value: dict[tuple[str, str], str] = {}
        self._values: dict[str, str] = {}  # token -> value
        self._next: dict[str, int] = {}

    @classmethod
    def load(cls, path: Path) -> TokenMap:
        """The map an earlier run wrote to `path` (an empty map when there is no such file)."""
        tokens = cls()
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return tokens
        except (OSError, UnicodeDecodeError) as exc:
            raise AnalyzerError(
                f"--map {path}: cannot read ({getattr(exc, 'strerror', None) or exc})"
            ) from None
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, RecursionError, ValueError):
            doc = None
        if not isinstance(doc, dict):
            raise AnalyzerError(f"--map {path}: not a token map (a JSON object token -> value)")
        for token, value in doc.items():
            m = TOKEN.fullmatch(token) if isinstance(value, str) and value else None
            if m is None:
                raise AnalyzerError(f"--map {path}: {token[:40]!r} is not a token of a token map")
            tokens.add(m["prefix"], value, token)
        return tokens

    def add(self, prefix: str, value: str, token: str) -> None:
        """A pairing from an earlier run; later tokens of `prefix` are numbered after it."""
        self._by_value.setdefault((prefix, value), token)
        self._values[token] = value
        n = int(token.rpartition("-")[2])
        self._next[prefix] = max(self._next.get(prefix, 1), n + 1)

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
        while f"{prefix}-{n}" in self.reserved or f"{prefix}-{n}" in self._values:
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

    def known(self) -> dict[str, str]:
        """value -> token prefix of every pairing (those loaded from an earlier map included)."""
        return {v: p for (p, v) in self._by_value}

    def mapping(self) -> dict[str, str]:
        return dict(sorted(self._values.items(), key=lambda kv: _natural(kv[0])))

    def write(self, path: Path) -> None:
        """The token -> value table, readable by its owner only: it undoes the redaction. A
        byte of invalid UTF-8 in a value (a lone surrogate here) is written as JSON's escape of
        it (`\\udcc3`): the file stays UTF-8, and json reads the same value back."""
        try:
            with atomic_path(path, private=True) as tmp:
                with tmp.open("w", encoding="utf-8", errors="backslashreplace") as fh:
                    json.dump(self.mapping(), fh, indent=2, ensure_ascii=False)
                    fh.write("\n")
        except OSError as exc:
            raise AnalyzerError(f"cannot write {path}: {exc.strerror or exc}") from None


def _natural(token: str) -> tuple[str, int]:
    prefix, _, n = token.rpartition("-")
    return prefix, int(n)
