"""A big log's byte-scan plan: which signatures the scan counts, reports line by line or leaves
as candidates, and a better plan when a chunk floods with candidates.

A signature hot in the log's first lines (`hot_signatures`) would make most lines candidates:
the scan counts it (`bytes.count` for plain text), reports its lines (Hyperscan, per line), or
tallies a chunk's distinct lines (`parse.tally`); every other signature's literals make lines
candidates, which the parent attributes (`Matcher.attribute`). Imported by the streamed path
of `parse.logs` only: a small bundle needs neither Hyperscan nor this.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import polars as pl

from analyzer.bundle.text import LINE_PREFIX_PATTERN
from analyzer.parse.literals import digit_blind, leading_superset
from analyzer.parse.matcher import FOLDS_TO_ASCII, Matcher, plain_text

if TYPE_CHECKING:
    from analyzer.parse.bigscan import ByteScan, Replan
    from analyzer.parse.hsdb import ScanPlan


HOT_SHARE = 0.01  # a signature whose literals are in this share of a big log's first lines
HOT_MAX = 8  # is flagged by its own regex in the scan (at most this many: one pass each)
# ... unless it ignores case and its literals have more case variants than Rust's regex takes
# as its own prefilter: then its regex costs as much per line as the whole literal pass
HOT_SHARE_SLOW = 0.05
CASE_VARIANTS = 64
# a hot signature of plain text found at least once in this many bytes of a big log's head
# (PROFILE_BYTES) is counted in each chunk by `bytes.count` (a pass over the chunk, ~3 ms per
# 16 MiB: as much as ~10,000 lines reported one by one at ~0.3 us each, one in 1.7 KB); a
# sparser one's lines are reported
COUNTED_EVERY = 2048
# a big log whose first lines are at least TALLIED_MIN_LINES and repeat themselves but for their
# digits (`parse.tally.DISTINCT_SHARE`) counts its hot signatures blind to digits by distinct
# lines where they are on TALLIED_SHARE of those lines, one in TALLIED_EVERY bytes or more
TALLIED_MIN_LINES = 200
TALLIED_SHARE = 0.5
TALLIED_EVERY = 256


def hot_signatures(matcher: Matcher, lines: list[str], of: float | None = None) -> list[str]:
    """Signatures whose literals are in at least HOT_SHARE of these lines (a big log's first;
    `of`: how many lines of the log they stand for, when they are some of them), most frequent
    first, at most HOT_MAX; one without a literal, where what the scan looks for instead (its
    `leading_superset`) is. Every line of theirs would be a prefilter candidate attributed on
    its own (a periodic line: a third of some logs; every line of Go's `log` format, whose date
    `2018/06/06` starts as a stack frame's path does); flagged by their own regex in the scan
    instead, they are counted and sampled from the flags."""
    if not lines:
        return []
    total = of or len(lines)  # the lines the shares are of
    share: dict[str, float] = {}
    col = pl.Series("text", lines)
    counted = matcher.sample_counts
    if counted is not None and counted[0] is lines:  # counted by `adapted` on these lines
        held = counted[1]
        holding: Iterable[tuple[str, int]] = [(x, held[x]) for x in matcher.literals if x in held]
    elif matcher.literals:
        found = col.str.extract_many(matcher.literals, overlapping=True).list.unique().explode()
        holding = found.drop_nulls().value_counts().iter_rows()
    else:
        holding = []
    for lit, n in holding:
        for sid in matcher.lit_to_sigs[lit]:
            share[sid] = max(share.get(sid, 0.0), n / total)
    for sid in matcher.folded:
        holding_it = float(col.str.contains(matcher.folded_pattern(sid)).sum())
        share[sid] = holding_it / total
    for sid in matcher.fallback:
        pattern = matcher.pattern[sid]
        try:
            looked_for = float(col.str.contains(leading_superset(pattern) or pattern).sum())
        except pl.exceptions.PolarsError:  # a regex Rust does not take: never hot
            continue
        share[sid] = looked_for / total
    slow = {
        sid
        for sid in matcher.folded
        if sum(2 ** sum(c.isalpha() for c in x) for x in matcher.lits[sid] or ()) > CASE_VARIANTS
    }
    hot = [sid for sid, x in share.items() if x >= (HOT_SHARE_SLOW if sid in slow else HOT_SHARE)]
    return sorted(hot, key=lambda sid: (-share[sid], sid))[:HOT_MAX]


def byte_scan(
    matcher: Matcher,
    hot: list[str],
    head: list[str],
    seen: tuple[str, int] | None = None,
    prefixed: bool = False,
    as_text: Sequence[str] = (),
) -> ByteScan | None:
    """The byte scan of this matcher's signatures (the hot ones it can count itself), or None
    where it cannot stand in for the line reader (`head`: the log's first lines as the scan reads
    them, a prefixed log's without their prefixes). A hot signature of plain text is counted by
    `bytes.count` where the log's first lines (`head`), or the text `seen` (of a stretch of so
    many bytes), hold it once in COUNTED_EVERY bytes or more often; its lines are reported one
    by one where it is sparser, unless a plan before counted it so (`as_text`: its lines are
    not among the candidates `seen` holds). Imported here: only big logs need Hyperscan."""
    from analyzer.parse.hsdb import accepted, line_counter

    first = "\n".join(head)
    text, size = seen or (first, len(first))
    texts = {sid: plain_text(matcher.pattern[sid]) for sid in hot}
    plain = {
        sid: x
        for sid, x in texts.items()
        if x and (sid in as_text or text.count(x) * COUNTED_EVERY >= size)
    }
    counters = {sid: line_counter(matcher.pattern[sid]) for sid in hot if sid not in plain}
    reported = {sid: counter for sid, counter in counters.items() if counter is not None}
    sample = first.encode()
    tallied = _tallied(matcher, reported, head)
    scan = _byte_scan_of(matcher, plain, reported, sample, tallied, prefixed)
    if scan is None and reported:  # one counter Hyperscan refuses sinks the whole database
        reported = {sid: counter for sid, counter in reported.items() if accepted(counter)}
        scan = _byte_scan_of(matcher, plain, reported, sample, tallied, prefixed)
    return scan


def _tallied(matcher: Matcher, reported: dict[str, str], lines: list[str]) -> set[str]:
    """The hot signatures to count by a chunk's distinct digit-blind lines (`parse.tally`) rather
    than by reporting each line (`reported`: their counters): those whose regex cannot tell
    digits apart, where the log's first lines repeat themselves and such signatures are on
    TALLIED_SHARE of them, once in TALLIED_EVERY bytes or more often (tallying a chunk costs
    about what reporting half its lines does, and its bytes cost it too: a kubelet journal's
    lines of ~400 bytes, each one of them, cost as much either way). Their lines are found as
    a scan process finds them: the counters over the distinct lines. Asked of the log's first
    lines for a plan made again too: a loop's candidates say nothing of the lines around them."""
    from analyzer.parse.hsdb import Scanner, database, hyperscan
    from analyzer.parse.tally import distinct_lines, matched

    blind = [sid for sid in reported if digit_blind(matcher.pattern[sid])]
    if hyperscan is None or not blind or len(lines) < TALLIED_MIN_LINES:
        return set()
    try:
        text = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    except UnicodeError:
        return set()
    counts = distinct_lines(text)
    counters = database(
        [reported[sid] for sid in blind], [hyperscan.HS_FLAG_MULTILINE] * len(blind)
    )
    if counts is None or counters is None:
        return set()
    on = matched(Scanner(counters), len(blind), list(counts))
    held = sum(n for line, n in counts.items() if line in on)
    dense = held >= TALLIED_SHARE * len(lines) and held * TALLIED_EVERY >= len(text)
    return set(blind) if dense else set()


def _byte_scan_of(
    matcher: Matcher,
    plain: dict[str, str],
    reported: dict[str, str],
    sample: bytes,
    tallied: AbstractSet[str] = frozenset(),
    prefixed: bool = False,
) -> ByteScan | None:
    """The byte scan that counts the `plain` hot signatures and reports the lines of the
    `reported` ones (with these counters; those of them `tallied`, by a chunk's distinct lines
    where it repeats itself); every other signature makes lines candidates."""
    from analyzer.parse.bigscan import ByteScan
    from analyzer.parse.hsdb import ScanPlan

    rest = matcher.without([*plain, *reported])
    if any(not rest._ascii_folded(sid) for sid in rest.folded):
        return None  # Hyperscan ignores ASCII case only
    caseless = sorted(rest._by_folded_literal())
    folds = {FOLDS_TO_ASCII[c] for x in caseless for c in x if c in FOLDS_TO_ASCII}
    plan = ScanPlan.of(
        [(sid, counter) for sid, counter in reported.items() if sid not in tallied],
        list(plain.items()),
        rest.literals + sorted(folds),
        caseless,
        [rest.pattern[sid] for sid in rest.fallback],
        sample,
        [(sid, counter) for sid, counter in reported.items() if sid in tallied],
        prefixed,
    )
    return ByteScan.checked(plan) if plan is not None else None


REPLAN_SAMPLE = 20_000  # candidate lines of a chunk that tell which signatures became hot


def replanner(matcher: Matcher, head: list[str], prefixed: bool) -> Replan:
    """How the byte scan gets a better plan for a chunk whose candidates are many: one with
    more hot signatures, those frequent among them (as many of its lines as HOT_SHARE of the
    chunk's), added to the plan's; else, where most of them hold a literal's start as the scan
    processes cut it (`bytescan.rare_endings`) and no literal, one that looks for those literals
    whole (a start the head holds rarely can be on every line of a loop that starts later: no
    signature is frequent there, and the start keeps its lines candidates)."""

    def replan(
        hot: list[str], texts: list[str], lines: int, size: int, plan: ScanPlan
    ) -> ByteScan | None:
        if prefixed:  # as the scan read them
            texts = pl.Series(texts, dtype=pl.String).str.replace(LINE_PREFIX_PATTERN, "").to_list()
        step = max(1, len(texts) // REPLAN_SAMPLE)
        sample = texts[::step]
        more = hot_signatures(matcher.without(hot), sample, of=lines * len(sample) / len(texts))
        if not more:
            return _whole_where_strays(plan, sample)
        seen = ("\n".join(texts), size)
        as_text = [sid for sid, _ in plan.counted]
        better = byte_scan(matcher, [*hot, *more], head, seen, prefixed, as_text)
        return better if better is not None and set(better.hot) - set(hot) else None

    return replan


def _whole_where_strays(plan: ScanPlan, sample: list[str]) -> ByteScan | None:
    """The scan of `plan` with the cut starts that most of these candidates hold (and no
    literal) given up for the literals they start, whole; None where they are not most."""
    from analyzer.parse.bigscan import ByteScan

    if plan.cut is None or not sample:
        return None
    literals = set(plan.literals)
    starts = [x for x in plan.cut if x not in literals]
    if not starts:
        return None
    col = pl.Series(sample, dtype=pl.String)
    stray = col.str.contains_any(starts) & ~col.str.contains_any(list(literals))
    if plan.caseless:
        stray &= ~col.str.contains_any(list(plan.caseless), ascii_case_insensitive=True)
    if stray.sum() * 2 <= len(sample):
        return None
    held = set(col.filter(stray).str.extract_many(starts, overlapping=True).explode().drop_nulls())
    kept = [x for x in plan.cut if x not in held]
    whole = [x for x in plan.literals if any(x.startswith(h) for h in held)]
    return ByteScan(plan.recut(sorted({*kept, *whole})))
