"""Required literals of a regex, for a fast Aho-Corasick/Teddy prefilter before the regex.

A line can only match `nvml Init err:\\s*(?P<ret>.*)` if it contains "nvml Init err:". Scanning
a big log for such literals (one alternation of escaped strings) is several times faster than
the combined regexes, and lets us attribute lines to signatures with one regex check per
candidate instead of one per signature per line. A pattern that ignores case as a whole still
has required literals, to be found ignoring case (`ignores_case`): without them its regex would
run on every line of a big log.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

try:  # Python 3.11+
    import re._constants as C  # type: ignore[import-not-found]
    import re._parser as P  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

MIN_LITERAL = 4  # bytes of UTF-8: two Chinese characters are a usable literal, two letters not
# ... but three bytes when a part of the pattern has nothing longer ('xid', 'oom'): a frequent
# short literal costs a big log's scan no more than the regex it spares (such a signature is then
# flagged by its regex), a rare one far less
SHORT_LITERAL = 3


def _size(text: str) -> int:
    return len(text.encode())


def _score(lits: Sequence[str]) -> tuple[int, int]:
    """A set of literals is as selective as its shortest one; fewer literals scan faster."""
    return (min(_size(x) for x in lits), -len(lits))


def _usable(options: list[list[str]]) -> list[list[str]]:
    """The options whose literals are all long enough (the shorter ones only when nothing else)."""
    sized = [(o, min(_size(x) for x in o)) for o in options if o]
    return [o for o, n in sized if n >= MIN_LITERAL] or [o for o, n in sized if n >= SHORT_LITERAL]


def _best(options: list[list[str]]) -> list[str] | None:
    usable = _usable(options)
    return max(usable, key=_score) if usable else None


def _element(op, av) -> list[str] | None:
    """Literals one of which every match of one mandatory element contains."""
    if op is C.SUBPATTERN:
        if av[1] & C.SRE_FLAG_IGNORECASE:
            return None  # (?i:...): a case-sensitive literal scan would miss matches
        return _sequence(list(av[-1]))
    if op is C.BRANCH:  # one literal from each alternative
        return _per_alternative(op, av, _sequence)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
        return _sequence(list(av[2]))
    return None


def _per_alternative(op, av, each) -> list[str] | None:
    """`each` applied to every alternative of a group or alternation, the results joined (None
    when one alternative gives None, or the element is neither)."""
    if op is C.SUBPATTERN and not av[1] & C.SRE_FLAG_IGNORECASE:
        items = list(av[-1])
        if len(items) == 1 and items[0][0] is not C.LITERAL:
            inner_op, inner_av = items[0]
            return _per_alternative(inner_op, inner_av, each)
        return each(items)
    if op is C.BRANCH:
        out: list[str] = []
        for branch in av[1]:
            texts = each(list(branch))
            if texts is None:
                return None
            out.extend(x for x in texts if x not in out)
        return out
    return None


def _leading(op, av) -> list[str] | None:
    """The literal text each match of an element starts with, one per alternative."""
    return _per_alternative(op, av, _prefix_of)


def _prefix_of(items) -> list[str] | None:
    run = ""
    for op, av in items:
        if op is not C.LITERAL:
            if run:
                return [run]
            return _leading(op, av)
        run += chr(av)
    return [run] if run else None


MAX_EXPANSION = 16  # literal alternatives one run may expand into


def _exact(op, av) -> list[str] | None:
    """The complete texts an element can match when it is a group of plain literal alternatives
    (`(?:get|save)`) or a class of plain characters (`[:=]`, or what the parser makes of
    `不足|不够`: 不[足够]), else None."""
    if op is C.IN and av and all(o is C.LITERAL for o, _ in av):
        return [chr(c) for _, c in av]
    return _per_alternative(op, av, _plain)


def _plain(items) -> list[str] | None:
    if all(op is C.LITERAL for op, _ in items):
        return ["".join(chr(av) for _, av in items)]
    if len(items) == 1:
        return _exact(*items[0])
    return None


def _sequence(items) -> list[str] | None:
    """The best set of literals one of which every match of a sequence contains (`_options`)."""
    return _best(_options(items))


def _options(items) -> list[list[str]]:
    """Sets of literals one of which every match of a sequence contains: its runs of mandatory
    literal text, where a run continues through groups of plain alternatives ("failed to
    (?:get|save) CDI spec" needs "failed to get CDI spec" or "failed to save CDI spec") and into
    the literal start of the alternatives after it, and what each mandatory group or
    alternation requires."""
    options: list[list[str]] = []
    run = [""]  # the texts the current run can be

    def flush() -> None:
        if any(run):
            options.append(sorted(set(run)))

    for op, av in items:
        if op is C.LITERAL:
            run = [r + chr(av) for r in run]
            continue
        exact = _exact(op, av)
        if exact and len(run) * len(exact) <= MAX_EXPANSION:
            run = [r + x for r in run for x in exact]
            continue
        if any(run):
            lead = _leading(op, av)
            if lead and len(run) * len(lead) <= MAX_EXPANSION:
                options.append(sorted({r + x for r in run for x in lead}))
        flush()
        run = [""]
        inner = _element(op, av)
        if inner:
            options.append(inner)
    flush()
    return options


def required_literals(
    pattern: str, commonness: Callable[[str], int] | None = None
) -> list[str] | None:
    r"""Literals one of which every match must contain; None when no useful literal exists.
    For a pattern that ignores case as a whole they must be looked for ignoring case.

    Without `commonness` the pattern gets its longest literals. With it (how many lines of a
    sample of the log hold a literal), each alternative gets the set of `literal_options` the
    sample holds least: a literal that is long but in most lines of a log is the worst filter.

    >>> required_literals(r"nvml Init err:\s*(?P<ret>.*)")
    ['nvml Init err:']
    >>> required_literals(r"failed to (?:get|save) CDI spec")
    ['failed to get CDI spec', 'failed to save CDI spec']
    >>> required_literals(r"nvidia-container-cli(?:\.real)?: (?i:unknown error)")
    ['nvidia-container-cli']
    >>> required_literals(r"(?i)\bhami\b"), required_literals(r"a|bc"), required_literals("卡住|hang")
    (['hami'], None, ['hang', '卡住'])
    >>> required_literals(r"(?i)\bxid\s*\d+"), required_literals(r"(?:^|\W)oom\b|out of memory")
    (['xid'], ['oom', 'out of memory'])
    >>> p = r"(?:device plugin|daemonset)[^.]{0,60}(?:restart|crash)"
    >>> required_literals(p), required_literals(p, lambda x: {"device plugin": 900}.get(x, 0))
    (['daemonset', 'device plugin'], ['crash', 'restart'])
    """
    if commonness is None:
        try:
            return _sequence(list(P.parse(pattern)))
        except (re.error, TypeError, ValueError, RecursionError):
            return None
    options = literal_options(pattern)
    return None if options is None else least_common(options, commonness)


def least_common(
    options: Sequence[Sequence[Sequence[str]]], commonness: Callable[[str], int]
) -> list[str]:
    """Per alternative, the set of literals whose lines are fewest (then the longest)."""
    out: list[str] = []
    for usable in options:
        pick = min(usable, key=lambda o: (sum(commonness(x) for x in o), -_score(o)[0]))
        out.extend(x for x in pick if x not in out)
    return out


def literal_options(pattern: str) -> list[list[list[str]]] | None:
    """Per alternative of the pattern (one when it is not an alternation), every usable set of
    literals one of which each of its matches contains; None when an alternative has none."""
    try:
        items = list(P.parse(pattern))
        alternatives = (
            [list(b) for b in items[0][1][1]]
            if len(items) == 1 and items[0][0] is C.BRANCH
            else [items]
        )
        out = [_usable(_options(alternative)) for alternative in alternatives]
    except (re.error, TypeError, ValueError, RecursionError):
        return None
    return None if not all(out) else out


_GLOBAL_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))+")  # where Python allows them: at the start


def ignores_case(pattern: str) -> bool:
    """True when the whole pattern ignores case (a leading `(?i)`): its literals are too.
    Read from the text, not parsed: a run asks it of every signature.

    >>> ignores_case(r"(?i)\bhami\b"), ignores_case(r"(?s)(?i)x"), ignores_case(r"hami (?i:v2)")
    (True, True, False)
    """
    flags = _GLOBAL_FLAGS.match(pattern)
    return flags is not None and "i" in flags.group()


_CATEGORIES = {
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}
_ANCHORS = {C.AT_BEGINNING: "^", C.AT_BEGINNING_STRING: r"\A"}


class _Unprintable(Exception):
    """An element `_text` does not write back."""


def leading_superset(pattern: str) -> str | None:
    r"""A shorter regex that every match of `pattern` starts with a match of: each alternative
    cut after the element that follows its first unbounded repeat. A scan for a pattern without
    a literal can look for this instead (its lines are checked with the pattern itself): a
    multi-pattern matcher anchors on a literal inside the rest (".go:") that most lines of a
    log hold. None when nothing would be cut, or the pattern has flags or parts not written
    back here.

    >>> leading_superset(r"^(?P<p>[a-z.]+(?:/[a-z.]+)+)\.\w+\(|^\s+(?P<path>/[^\s:]+\.go):\d+")
    '^(?:[a-z\\.]+/|[\\s]+/)'
    >>> leading_superset(r"(?:a+)*b")
    '(?:a+)*b'
    >>> leading_superset(r"^panic: .*"), leading_superset(r"(?i)^\s+x")
    (None, None)
    """
    try:
        parsed = P.parse(pattern)
        if parsed.state.flags & ~(C.SRE_FLAG_UNICODE | C.SRE_FLAG_MULTILINE):
            return None
        return _cut(list(parsed))
    except (re.error, TypeError, ValueError, RecursionError, _Unprintable):
        return None


def _cut(items) -> str | None:
    """The text of a sequence up to the element after its first unbounded repeat, looking into
    groups and into each alternative (with what follows it); None when nothing is cut."""
    out: list[str] = []
    flat = _flatten(items)
    for i, (op, av) in enumerate(flat):
        if op is C.BRANCH:
            ways = [list(b) + flat[i + 1 :] for b in av[1]]
            cuts = [_cut(w) for w in ways]
            if all(c is None for c in cuts):
                return None
            texts = [_sequence_text(w) if c is None else c for c, w in zip(cuts, ways, strict=True)]
            return "".join(out) + "(?:" + "|".join(texts) + ")"
        out.append(_text(op, av))
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[1] is C.MAXREPEAT and i + 1 < len(flat):
            out.append(_first(*flat[i + 1]))
            return "".join(out)
    return None


def _flatten(items) -> list:
    """A sequence with its plain groups' elements in their place."""
    out = []
    for op, av in items:
        if op is C.SUBPATTERN and not av[1] and not av[2]:
            out.extend(_flatten(list(av[-1])))
        else:
            out.append((op, av))
    return out


def _first(op, av) -> str:
    """An element every match of this element starts with a match of."""
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
        return _first(*_flatten(list(av[2]))[0])
    if op is C.SUBPATTERN and not av[1] and not av[2]:
        return _first(*_flatten(list(av[-1]))[0])
    return _text(op, av)


def _sequence_text(items) -> str:
    return "".join(_text(op, av) for op, av in items)


def _char(code: int) -> str:
    if chr(code).isprintable():
        return re.escape(chr(code))
    return f"\\x{code:02x}" if code < 0x100 else f"\\U{code:08x}"


def _text(op, av) -> str:
    """One parsed element written back as a regex."""
    if op is C.LITERAL:
        return _char(av)
    if op is C.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op is C.ANY:
        return "."
    if op is C.AT and av in _ANCHORS:
        return _ANCHORS[av]
    if op is C.IN:
        negate = bool(av) and av[0][0] is C.NEGATE
        parts = []
        for o, a in av[1:] if negate else av:
            if o is C.LITERAL:
                parts.append(_char(a))
            elif o is C.RANGE:
                parts.append(f"{_char(a[0])}-{_char(a[1])}")
            elif o is C.CATEGORY and a in _CATEGORIES:
                parts.append(_CATEGORIES[a])
            else:
                raise _Unprintable(o)
        return "[" + ("^" if negate else "") + "".join(parts) + "]"
    if op is C.CATEGORY and av in _CATEGORIES:
        return _CATEGORIES[av]
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        lo, hi, body = av
        upper = "" if hi is C.MAXREPEAT else str(hi)
        quantifier = {(0, ""): "*", (1, ""): "+", (0, "1"): "?"}.get(
            (lo, upper), f"{{{lo},{upper}}}"
        )
        body = list(body)
        bare = len(body) == 1 and body[0][0] in (C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY, C.CATEGORY)
        inner = _text(*body[0]) if bare else f"(?:{_sequence_text(body)})"
        return inner + quantifier + ("?" if op is C.MIN_REPEAT else "")
    if op is C.SUBPATTERN:
        return f"(?:{_sequence_text(list(av[-1]))})"
    if op is C.BRANCH:
        return "(?:" + "|".join(_sequence_text(list(b)) for b in av[1]) + ")"
    raise _Unprintable(op)


class _Reachable(Exception):
    """A match may start or end at the start of such a line, or get past it."""


def misses_lines_starting(pattern: str, head: Sequence[str]) -> bool:
    r"""True when no line whose first characters match `head` (one character class each, as
    `parse.batch.KLOG_HEADER`) holds a match of `pattern`: each alternative starts at a line's
    start (`^` before anything is matched) and dies within those characters. The byte scan looks
    for such a pattern in a klog log's other lines only. False wherever that is not certain:
    flags, look-arounds, back-references, other anchors.

    >>> klog = ["[IWEF]", *["[0-9]"] * 4, " "]
    >>> misses_lines_starting(r"^(?:[A-Za-z0-9_\.\~\-]+/|[\s]+/)", klog)
    True
    >>> misses_lines_starting(r"^[A-Z]\d+ ", klog), misses_lines_starting(r"^I?\d", klog)
    (False, False)
    >>> misses_lines_starting(r"[a-z]+/", klog), misses_lines_starting(r"^(?i)[a-z]+/", klog)
    (False, False)
    """
    try:
        parsed = P.parse(pattern)
        if parsed.state.flags & ~(C.SRE_FLAG_UNICODE | C.SRE_FLAG_MULTILINE):
            return False
        items = list(parsed)
        if not _anchored(items):
            return False
        ascii_chars = [chr(c) for c in range(128)]
        sets = [frozenset(c for c in ascii_chars if re.fullmatch(h, c)) for h in head]
        return not _Steps(sets).after(items, {0})  # a match ending within them: reachable
    except (re.error, TypeError, ValueError, RecursionError, _Reachable, _Unprintable):
        return False


def _anchored(items) -> bool:
    """Every match of the sequence starts at a line's start: `^` comes before anything else."""
    if not items:
        return False
    op, av = items[0]
    if op is C.AT:
        return av is C.AT_BEGINNING
    if op is C.SUBPATTERN and not av[1] and not av[2]:
        return _anchored(list(av[-1]))
    if op is C.BRANCH:
        return all(_anchored(list(b)) for b in av[1])
    return False


class _Steps:
    """The positions a match can reach within a line's first characters (one set each), from
    a start at the line's start; `_Reachable` when it can get past them."""

    def __init__(self, sets: list[frozenset[str]]):
        self.sets = sets
        self._chars: dict[str, frozenset[str]] = {}

    def after(self, items, positions: set[int]) -> set[int]:
        for op, av in items:
            if not positions:
                break
            positions = self._one(op, av, positions)
        return positions

    def _one(self, op, av, positions: set[int]) -> set[int]:
        if op is C.AT:
            if av is not C.AT_BEGINNING:
                raise _Reachable
            return positions & {0}
        if op is C.SUBPATTERN:
            if av[1] or av[2]:  # flags set or cleared inside
                raise _Reachable
            return self.after(list(av[-1]), positions)
        if op is C.BRANCH:
            return set().union(*(self.after(list(b), positions) for b in av[1]))
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            least, most, sub = av[0], av[1], list(av[2])
            # past as many rounds as there are positions, more give the same set: it only grows
            # where `sub` matches the empty string, else each round moves every position on
            for _ in range(min(least, len(self.sets) + 1)):
                if not positions:
                    return positions
                positions = self.after(sub, positions)
            seen, fresh, n = set(positions), set(positions), least
            while fresh and (most is C.MAXREPEAT or n < most):
                fresh = self.after(sub, fresh) - seen
                seen |= fresh
                n += 1
            return seen
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            chars = self._chars_of(_text(op, av))
            out = {i + 1 for i in positions if self.sets[i] & chars}
            if len(self.sets) in out:
                raise _Reachable
            return out
        raise _Reachable

    def _chars_of(self, element: str) -> frozenset[str]:
        """The ASCII characters one element matches."""
        if element not in self._chars:
            one = re.compile(element)
            self._chars[element] = frozenset(c for c in map(chr, range(128)) if one.fullmatch(c))
        return self._chars[element]


_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
# categories that hold all ten ASCII digits or none of them
_WHOLE_CATEGORIES = frozenset(_CATEGORIES)


def digit_blind(pattern: str) -> bool:
    r"""True when the regex matches a text exactly where it matches the text with each ASCII digit
    made `0`: no digit is written in it, a class holds all ten or none, and nothing compares
    what a group took (a back-reference). The byte scan then counts the lines of a log that
    repeats itself but for its numbers (clocks, counters) by their distinct digit-blind texts.
    False wherever that is not certain (a part this check does not know).

    >>> digit_blind(r"retrying after (?P<s>\d+|N) seconds"), digit_blind(r"[^\]\s]+ \w{3}\b")
    (True, True)
    >>> digit_blind(r"v2\.\d"), digit_blind(r"[3-9]\d\d"), digit_blind(r"(\d)\1"), digit_blind(r"[0-9a-f]")
    (False, False, False, True)
    """
    try:
        return _blind(list(P.parse(pattern)))
    except (re.error, TypeError, ValueError, RecursionError):
        return False


def _blind(items) -> bool:
    for op, av in items:
        if op in (C.LITERAL, C.NOT_LITERAL):
            if av in _DIGITS:
                return False
        elif op is C.IN:
            if not _class_blind(av):
                return False
        elif op in (C.ANY, C.AT):
            continue
        elif op is C.SUBPATTERN:
            if not _blind(list(av[-1])):
                return False
        elif op is C.BRANCH:
            if not all(_blind(list(b)) for b in av[1]):
                return False
        elif op in _REPEATS:
            if not _blind(list(av[2])):
                return False
        elif op in (C.ASSERT, C.ASSERT_NOT):
            if not _blind(list(av[1])):
                return False
        elif op is _ATOMIC:
            if not _blind(list(av)):
                return False
        else:  # a back-reference, a conditional group, a part not known here
            return False
    return True


def _class_blind(items) -> bool:
    """A class holds all ten ASCII digits or none (negated or not, the same)."""
    held: set[int] = set()
    for op, av in items:
        if op is C.LITERAL:
            held.update({av} & _DIGITS)
        elif op is C.RANGE:
            held.update(_DIGITS.intersection(range(av[0], av[1] + 1)))
        elif op is C.CATEGORY:
            if av not in _WHOLE_CATEGORIES:
                return False
            if av in (C.CATEGORY_DIGIT, C.CATEGORY_WORD, C.CATEGORY_NOT_SPACE):
                held.update(_DIGITS)
        elif op is not C.NEGATE:
            return False
    return not held or held == _DIGITS


_REPEATS = tuple(
    getattr(C, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(C, name)
)
_ATOMIC = getattr(C, "ATOMIC_GROUP", None)
