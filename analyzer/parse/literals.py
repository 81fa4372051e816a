"""Required literals of a regex, for a fast Aho-Corasick/Teddy prefilter before the regex.

A line can only match `nvml Init err:\\s*(?P<ret>.*)` if it contains "nvml Init err:". Scanning
a big log for such literals (one alternation of escaped strings) is several times faster than
the combined regexes, and lets us attribute lines to signatures with one regex check per
candidate instead of one per signature per line.
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    import re._constants as C  # type: ignore[import-not-found]
    import re._parser as P  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

MIN_LITERAL = 4


def _seq_literal(items) -> str:
    """Longest run of consecutive literal characters in a parsed sequence (all mandatory)."""
    best, cur = "", ""
    for op, av in items:
        if op is C.LITERAL:
            cur += chr(av)
            continue
        if op is C.SUBPATTERN:
            inner = _seq_literal(av[-1])
            best = max(best, cur, inner, key=len)
            cur = ""
            continue
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            inner = _seq_literal(av[2])
            best = max(best, cur, inner, key=len)
            cur = ""
            continue
        best = max(best, cur, key=len)
        cur = ""
    return max(best, cur, key=len)


def required_literals(pattern: str) -> list[str] | None:
    """Literals one of which every match must contain; None when no useful literal exists."""
    try:
        parsed = P.parse(pattern)
    except (re.error, TypeError, ValueError, RecursionError):
        return None
    if parsed.state.flags & re.IGNORECASE or "(?i" in pattern:
        return None  # a case-sensitive literal scan would miss matches
    return _literals_of(list(parsed))


def _literals_of(items) -> list[str] | None:
    if len(items) == 1 and items[0][0] is C.SUBPATTERN:
        return _literals_of(list(items[0][1][-1]))
    if len(items) == 1 and items[0][0] is C.BRANCH:  # top-level alternation: one per branch
        out = []
        for branch in items[0][1][1]:
            lit = _seq_literal(list(branch))
            if len(lit) < MIN_LITERAL:
                return None
            out.append(lit)
        return out
    lit = _seq_literal(items)
    return [lit] if len(lit) >= MIN_LITERAL else None
