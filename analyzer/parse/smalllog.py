"""A short log's columns, candidates and statistics in plain Python, as polars would give them.

A polars call costs ~0.2 ms whatever its size, and an Aho-Corasick automaton of hundreds of
literals more than that: parsing the two logs of a small bundle (80 lines) through polars took
~45 M instructions, a twentieth of the run. For a short text that is ASCII without the
separators U+001C-U+001F (the only ASCII characters that Python's `\\s` takes and Rust's does
not), each function here gives exactly what its polars counterpart in `parse/logs.py` gives;
tests/test_smalllog.py compares the two on signatures' lines, klog lines and odd characters.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from analyzer.bundle.text import KLOG_RE

SMALL_CHARS = 16 << 10  # a text up to this long, and plain, is parsed here

KLOG_FIELDS = ("sev", "mm", "dd", "clock", "pid", "src", "msg")  # KLOG_HEADER_PATTERN's groups
_NOT_PLAIN = re.compile(r"[^\x00-\x1b\x20-\x7f]")
POD_PREFIX = r"^\[pod/([^/\]\s]+)/"  # `kubectl logs --prefix`: the pod it names (group 1)
PREFIX_POD_ROWS, PREFIX_PODS = 20_000, 20  # the first rows looked at, the first pods kept
_POD_PREFIX = re.compile(POD_PREFIX)

# a candidate row: its index, the literals it holds, those it holds in any ASCII case (lower
# case), and whether it holds a character that folds to an ASCII letter
Candidate = tuple[int, list[str], list[str], bool]


def fits(text: str) -> bool:
    """Short, and of the characters on which Python's and Rust's regexes agree."""
    return len(text) <= SMALL_CHARS and not _NOT_PLAIN.search(text)


def klog_columns(texts: Sequence[str]) -> dict[str, list[str | None]]:
    """The klog header's fields of each line (None where it is no klog line): the columns
    `str.extract_groups(KLOG_HEADER_PATTERN)` gives."""
    columns: dict[str, list[str | None]] = {name: [] for name in KLOG_FIELDS}
    for text in texts:
        m = KLOG_RE.match(text)
        for name in KLOG_FIELDS:
            columns[name].append(m[name] if m else None)
    return columns


def candidates(
    texts: Sequence[str],
    literals: Sequence[str],
    folded: Sequence[str],
    odd_chars: Sequence[str],
    extra: Sequence[str],
    checked: Sequence[bool],
) -> Iterator[Candidate]:
    """The rows that may match a signature, as `Matcher.candidates` finds them: those holding
    one of the `literals`, one of the lower-case `folded` ones in any ASCII case, one of the
    `odd_chars` (only looked for when there are `folded` literals), one of the `extra` literals,
    or `checked` (by the signatures' own prefilter)."""
    whole = "\n".join(texts)
    present = [x for x in literals if x in whole]
    lowered = whole.lower() if folded else ""
    present_folded = [x for x in folded if x in lowered]
    odd_chars = odd_chars if folded else ()
    for i, text in enumerate(texts):
        held = [x for x in present if x in text]
        lower = text.lower() if present_folded else ""
        held_folded = [x for x in present_folded if x in lower]
        odd = any(c in text for c in odd_chars)
        if held or held_folded or odd or checked[i] or any(x in text for x in extra):
            yield i, held, held_folded, odd


def sigs_per_line(lines: Sequence[int], hits: Sequence[tuple[int, str, str]]) -> list[list[str]]:
    """Each line's signatures in the order they were found (`hits`: line, text, signature)."""
    found: dict[int, list[str]] = {}
    for line, _text, sid in hits:
        found.setdefault(line, []).append(sid)
    return [found.get(line, []) for line in lines]


def sig_counts(hits: Sequence[tuple[int, str, str]]) -> dict[str, int]:
    """How many lines each signature matched, in the order of their first match."""
    return dict(Counter(sid for _line, _text, sid in hits))


def severities(sevs: Sequence[str | None]) -> dict[str, int]:
    """Klog lines per severity letter, in letter order."""
    return dict(sorted(Counter(x for x in sevs if x is not None).items()))


def clock(columns: dict[str, list[str | None]], at: int) -> str | None:
    """`MMDD hh:mm:ss.ffffff` of the first (`at` 0) or last (-1) klog line."""
    rows = [i for i, sev in enumerate(columns["sev"]) if sev is not None]
    if not rows:
        return None
    i = rows[at]
    return f"{columns['mm'][i]}{columns['dd'][i]} {columns['clock'][i]}"


def containers(names: Sequence[str | None]) -> list[str]:
    return sorted({x for x in names if x})


def prefix_pods(raws: Sequence[str]) -> list[str]:
    """The pods named by `kubectl logs --prefix` prefixes (the first PREFIX_PODS)."""
    pods = {m[1] for raw in raws[:PREFIX_POD_ROWS] if (m := _POD_PREFIX.match(raw))}
    return sorted(pods)[:PREFIX_PODS]
