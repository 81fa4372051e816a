"""Redacting text with a run's redactors: names found first (`find`), then replaced everywhere as
literals; then every `keys`/`pattern` redactor in order. Every regex call has a timeout."""

from __future__ import annotations

from collections import Counter

import regex

from analyzer.errors import AnalyzerError
from analyzer.redact.redactors import TIMEOUT, TIMEOUT_PER_MIB, Redactor
from analyzer.redact.tokens import TokenMap

MIN_EVERYWHERE = 8  # characters a pattern's value needs to be replaced beyond where it was found
BOUNDARY = r"(?<![\w.-])(?:{alts})(?![\w-])"  # a name is a whole word: gpu-1 is not in gpu-10


def timeout_for(text: str) -> float:
    return TIMEOUT + TIMEOUT_PER_MIB * len(text) / (1 << 20)


def _timed_out(r_id: str, where: str) -> AnalyzerError:
    return AnalyzerError(
        f"redactor {r_id} timed out on {where} (a pattern that backtracks badly?); nothing was written"
    )


def find_names(redactors: list[Redactor], text: str, where: str) -> dict[str, str]:
    """value -> token prefix for each value to replace everywhere: the names a `find` redactor
    reads, and what an `everywhere` redactor matches (if long enough not to be a common word:
    a password `nvidia` replaced everywhere would rewrite every resource name)."""
    out: dict[str, str] = {}
    for r in redactors:
        if not r.everywhere:
            continue
        shortest = 1 if r.mode == "find" else MIN_EVERYWHERE
        for p in r.patterns:
            try:
                for m in p.finditer(text, timeout=timeout_for(text)):
                    value = m.group("value") if "value" in p.groupindex else m.group()
                    if value and len(value) >= shortest and not r.kept(value):
                        out.setdefault(value, r.token)
            except TimeoutError:
                raise _timed_out(r.id, where) from None
    return out


def token_shapes(redactors: list[Redactor]) -> regex.Pattern:
    """What a token looks like, to find the ones the original already holds."""
    prefixes = "|".join(sorted({regex.escape(r.token) for r in redactors}))
    return regex.compile(BOUNDARY.format(alts=f"(?:{prefixes})-\\d+"))


class Redaction:
    """One run: the names found in the whole bundle and the token map every file shares."""

    def __init__(self, redactors: list[Redactor], names: dict[str, str], tokens: TokenMap):
        self.redactors = [r for r in redactors if r.mode != "find"]  # find: all in `names`
        self.names = names
        self.tokens = tokens
        self.counts: Counter[str] = Counter()
        alts = "|".join(regex.escape(n) for n in sorted(names, key=len, reverse=True))
        self.literal = regex.compile(BOUNDARY.format(alts=alts)) if names else None

    def text(self, text: str, where: str) -> str:
        limit = timeout_for(text)
        if self.literal is not None:
            try:
                text = self.literal.sub(self._name, text, timeout=limit)
            except TimeoutError:
                raise _timed_out("(names found)", where) from None
        for r in self.redactors:
            for p in r.patterns:
                try:
                    text = self._replace(r, p, text, limit)
                except TimeoutError:
                    raise _timed_out(r.id, where) from None
        return text

    def _name(self, m: regex.Match) -> str:
        self.counts["names"] += 1
        return self.tokens.token(self.names[m.group()], m.group())

    def _replace(self, r: Redactor, p: regex.Pattern, text: str, limit: float) -> str:
        """Each match's `value` group (or the match) replaced by its token. The group may sit in
        a lookbehind, so a pattern can be anchored on a rare part (`.internal`, `/`) and look back
        for the rest: scanning from every word start costs ten times more on a big log."""
        out: list[str] = []
        pos = 0
        for m in p.finditer(text, timeout=limit):
            has_value = "value" in p.groupindex and m.group("value") is not None
            start, end = m.span("value") if has_value else m.span()
            value = text[start:end]
            if start < pos or not value or r.kept(value) or self.tokens.is_token(value):
                continue
            self.counts[r.id] += 1
            out += (text[pos:start], self.tokens.token(r.token, value))
            pos = end
        return "".join(out) + text[pos:] if out else text


def redact_text_alone(r: Redactor, text: str) -> str:
    """A text as this one redactor would leave it (its examples are checked this way).

    >>> from analyzer.redact.redactors import load_redactors
    >>> ip = next(r for r in load_redactors() if r.id == "ipv4")
    >>> redact_text_alone(ip, "Node: gpu-node-2/10.30.15.55, listen on 0.0.0.0:443")
    'Node: gpu-node-2/ip-1, listen on 0.0.0.0:443'
    """
    names = find_names([r], text, "an example")
    return Redaction([r], names, TokenMap()).text(text, "an example")
