"""Log artefacts into polars frames of kept lines plus whole-file statistics.

Small logs keep every line (for the timeline). Big logs stream through polars in batches: the
literals every signature needs select the candidate lines, per-signature caps (first and last
occurrences, exact counts) bound memory, and severity counts cover every line. No Python-level
work happens per line of a big file.
"""

from __future__ import annotations

import codecs
import itertools
import re
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import regex
from polars.datatypes import DataTypeClass

from analyzer.atomic import private_folder
from analyzer.bundle.model import Artefact
from analyzer.bundle.text import (
    ANSI_RE,
    KLOG_HEADER_PATTERN,
    KLOG_RE,
    LINE_PREFIX_PATTERN,
    PREFIX_RE,
    decode,
    line_prefix,
    printable,
    rejoin_hard_wraps,
)
from analyzer.catalogue.signatures import MATCH_TIMEOUT
from analyzer.parse import smalllog
from analyzer.parse.batch import (
    ERROR_EXAMINED,
    ERROR_LINE_CAP,
    KLOG_START,
    SIG_HEAD_CAP,
    SIG_TAIL_CAP,
    Batch,
    PrefixUnsettled,
)
from analyzer.parse.literals import (
    digit_blind,
    ignores_case,
    leading_superset,
    least_common,
    literal_options,
    required_literals,
)
from analyzer.progress import Progress, progress_for

if TYPE_CHECKING:
    from analyzer.parse.bigscan import ByteScan, Replan
    from analyzer.parse.hsdb import ScanPlan

ANSI_PATTERN = r"\x1b\[[0-9;?]*[ -/]*[@-~]"

LINE_SCHEMA = {
    "line": pl.Int64,
    "raw": pl.String,
    "text": pl.String,
    "container": pl.String,
    "rfc": pl.String,
}


@dataclass
class LogStats:
    """Whole-file statistics of a log, for the report and the facts of its lines."""

    lines: int = 0
    klog_lines: int = 0
    severities: dict[str, int] = field(default_factory=dict)
    first_clock: str | None = None  # "MMDD hh:mm:ss.ffffff" of the first klog line
    last_clock: str | None = None
    containers: list[str] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)  # from `kubectl logs --prefix` lines
    hard_wrap_joins: int = 0
    truncated_last_line: bool = False
    all_lines_kept: bool = True
    sig_counts: dict[str, int] = field(default_factory=dict)
    timeouts: list[tuple[str, int]] = field(default_factory=list)  # (signature, line): no match


@dataclass
class ParsedLog:
    """A log artefact's kept lines (a polars frame) and its statistics."""

    artefact: Artefact
    stats: LogStats
    frame: pl.DataFrame  # kept lines with parsed klog header columns
    # (line, signature) -> the span and groups of the signature's match in the line's text, where
    # the parse stage's own regex check found them: the facts stage reads them instead of
    # searching that line again
    matched: Matched = field(default_factory=dict)


SigSpec = tuple[str, str]  # (signature id, Rust-compatible pattern)
# a verified match of a signature's regex: (line, signature) -> (span, groups as `groupdict`)
Matched = dict[tuple[int, str], tuple[tuple[int, int], dict[str, str | None]]]
# per alternative of a pattern, the sets of literals one of which each match holds
LiteralChoices = Sequence[Sequence[Sequence[str]]]
BATCH_ROWS = 100_000  # per streamed batch: memory vs. per-batch overhead (1 GB: 80 batches)
BATCH_BYTES = 16 << 20  # and about this much text, so that long lines do not blow memory up
SMALL_FRAME = 20_000  # below this many rows signatures are attributed line by line
# a frame of at most this many rows is read by the later stages as Python values rather than
# queried: a query costs ~0.3-3 ms whatever its size (a small bundle's logs: ~50 rows each)
READ_WHOLE_ROWS = 2_000
# a big log's first bytes, whose lines choose its literals, its hot signatures and where its
# literals are cut: a MiB (~8,000 klog lines) cost ~25 ms more before the scan's first chunk
# than a quarter of it (Aho-Corasick over the head for ~600 literals, 13 ms; the head's read,
# decoding and splitting 6 ms); on the bench's logs it chose the same hot signatures, and the
# same literals but one of 589
PROFILE_BYTES = 256 << 10
POOL_BYTES = 8 << 20  # candidate lines of a big log attributed together (1 GB bench: 2 calls)
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
FALLBACK_PER_SCAN = 8  # literal-less patterns joined into one regex scan


class Matcher:
    """Attributes lines to signatures: one prefilter (a Rust regex of every signature's required
    literals), then each candidate signature's regex once. The literals of a pattern that ignores
    case are looked for ignoring case, and their regex is checked on every candidate; a pattern
    without a usable literal is checked on every line.

    `compile` returns a signature's compiled pattern (the rule set's own, compiled on first use:
    compiling every pattern would cost a small bundle more than analysing it)."""

    def __init__(
        self,
        sigs: list[SigSpec],
        prefilters: dict[str, list[str] | None] | None = None,
        compile: Callable[[str], regex.Pattern] | None = None,
        scanned_in: dict[str, tuple[str, ...]] | None = None,
        choices: dict[str, LiteralChoices | None] | None = None,
    ):
        self.sigs = sigs
        # per signature, the literal sets `adapted` chooses from (worked out when not given)
        self._choices = choices
        self.pattern = dict(sigs)
        self._compile = compile or (lambda sid: regex.compile(self.pattern[sid]))
        # the kinds a signature is searched in, when not all (a signature's `scanned_in`)
        self.scanned_in = {sid: kinds for sid, kinds in (scanned_in or {}).items() if kinds}
        self._without: dict[frozenset[str], Matcher] = {}
        # set by `adapted`: its sample, and how many of its lines hold each of the literals
        # found as they are (`hot_signatures` reads them instead of searching the sample again)
        self.sample_counts: tuple[list[str], dict[str, int]] | None = None
        prefilters = prefilters or {}
        self.lits = {
            sid: prefilters[sid] if sid in prefilters else required_literals(pat)
            for sid, pat in sigs
        }
        self.fallback = [sid for sid, _ in sigs if self.lits[sid] is None]
        # found ignoring case by the prefilter; their regex decides on every candidate
        self.folded = [sid for sid, pat in sigs if self.lits[sid] and ignores_case(pat)]
        self.checked = self.fallback + self.folded
        checked = set(self.checked)
        lit_rows = [
            (lit, sid) for sid, _ in sigs if sid not in checked for lit in self.lits[sid] or ()
        ]
        self.literals = sorted({lit for lit, _ in lit_rows})
        self.lit_to_sigs: dict[str, list[str]] = {}
        for lit, sid in lit_rows:
            self.lit_to_sigs.setdefault(lit, [])
            if sid not in self.lit_to_sigs[lit]:
                self.lit_to_sigs[lit].append(sid)
        # a pattern that is exactly its literal needs no regex check after the prefilter
        self.pure = {sid for sid, pat in sigs if sid not in checked and _is_plain(pat)}
        per_sig: dict[str, int] = {}
        for _lit, sid in set(lit_rows):
            per_sig[sid] = per_sig.get(sid, 0) + 1
        # a line may hold two literals of one signature: then (line, sig) pairs need dedup
        self.multi_literal = any(n > 1 for n in per_sig.values())

    def without(self, sids: set[str] | list[str]) -> Matcher:
        """The same scan without these signatures (built once per set)."""
        key = frozenset(sids)
        if not key:
            return self
        if key not in self._without:
            self._without[key] = Matcher(
                [(sid, pat) for sid, pat in self.sigs if sid not in key],
                self.lits,
                self._compile,
                choices=self._choices,
            )
        return self._without[key]

    def for_kind(self, kind: str) -> Matcher:
        """The scan of an artefact of this kind: without the signatures searched in other kinds
        only (a reporter's phrasing is not looked for in every line of a plugin's log)."""
        return self.without({sid for sid, kinds in self.scanned_in.items() if kind not in kinds})

    def adapted(self, sample: list[str]) -> Matcher:
        """The same scan with each signature's literals chosen for this log: among the sets its
        regex allows, per alternative the one this sample of the log (its first lines) holds
        least. A literal set that most lines hold makes every line a candidate: 'device' is in
        most of a plugin's lines. Literals a signature names itself (`prefilter:`) stay."""
        choices = {}
        for sid, _pat in self.sigs:
            options = self._literal_choices(sid)
            if options is None or all(len(o) == 1 for o in options):
                continue  # named by the signature, or nothing to choose
            choices[sid] = options
        if not choices or not sample:
            return self
        col = pl.Series("text", sample)
        counts: dict[bool, dict[str, int]] = {}
        for fold in (False, True):
            candidates = sorted(
                {
                    x
                    for sid, opts in choices.items()
                    if ignores_case(self.pattern[sid]) == fold
                    for o in opts
                    for s in o
                    for x in s
                }
            )
            if not fold:  # every literal the adapted scan finds as it is, for `hot_signatures`
                candidates = sorted({*candidates, *self.literals})
            if not candidates:
                counts[fold] = {}
                continue
            found = col.str.extract_many(candidates, ascii_case_insensitive=fold, overlapping=True)
            held = found.list.eval(pl.element().str.to_lowercase() if fold else pl.element())
            counts[fold] = dict(
                held.list.unique().explode().drop_nulls().value_counts().iter_rows()
            )
        lits = dict(self.lits)
        for sid, options in choices.items():
            folds = ignores_case(self.pattern[sid])
            seen = counts[folds]

            def frequency(x: str, seen: dict[str, int] = seen, fold: bool = folds) -> int:
                return seen.get(x.lower() if fold else x, 0)

            lits[sid] = least_common(options, frequency)
        matcher = Matcher(self.sigs, lits, self._compile, choices=self._choices)
        matcher.sample_counts = (sample, counts[False])
        return matcher

    def _literal_choices(self, sid: str) -> LiteralChoices | None:
        if self._choices is not None:
            return self._choices.get(sid)
        pat = self.pattern[sid]
        if self.lits[sid] is not None and self.lits[sid] != required_literals(pat):
            return None  # named by the signature
        return literal_options(pat)

    def folded_pattern(self, sid: str) -> str:
        return "(?i:" + "|".join(re.escape(x) for x in sorted(self.lits[sid] or ())) + ")"

    def prefilters(self, sample: list[str] | None = None) -> list[str]:
        """The Rust regexes a line must match one of to be a candidate. Every literal is in the
        first, one lazy-DFA pass per line whatever the number of signatures. A literal to find
        ignoring case cannot join it as `(?i:...)` (Unicode case folding blows that DFA up);
        given a `sample` of the log, each joins it as the case variants of its rarest window
        of FOLD_WINDOW characters there; otherwise they are a second pass. Patterns without a
        literal are a pass of their own, at most FALLBACK_PER_SCAN to a pass."""
        plain, cased = self._literal_sets(ascii_folded=True)
        if sample is not None and cased:
            windows = {lit: _fold_windows(lit) for lit in cased}
            seen = _lines_holding(sorted({w for ws in windows.values() for w in ws}), sample)
            for lit, options in windows.items():
                if options:
                    plain.update(_case_variants(min(options, key=lambda w: seen.get(w, 0))))
                    cased.remove(lit)
        out = []
        if plain:  # re.escape: regex.escape's escapes, several times faster (1,700 literals)
            out.append("|".join(re.escape(x) for x in sorted(plain)))
        return out + self._case_and_fallback_patterns(cased)

    def keep_expr(self, sample: list[str]) -> pl.Expr:
        """True for the lines of a big log that may match a signature: its `prefilters`, chosen
        for this `sample` of the log (small logs: `candidates`)."""
        return self._any(self.prefilters(sample))

    def candidates(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of a small frame that may match a signature, each with the literals it holds
        (`held`), those it holds in any ASCII case, lower-cased (`held_folded`), and whether it
        holds a character that folds to an ASCII letter (`odd`): one Aho-Corasick pass per list
        of literals finds both the rows and the signatures to check on them (an automaton of
        hundreds of literals costs more to build than a few thousand rows take to scan)."""
        t = pl.col("text")
        none = pl.lit([], dtype=pl.List(pl.String))
        by_folded = sorted(self._by_folded_literal())
        plain, cased = self._literal_sets(ascii_folded=False)
        # the signatures checked on every candidate are its prefilter too: those without a
        # literal, those ignoring case beyond ASCII (caseless literals of theirs: as they are)
        checked = [t.str.contains(p) for p in self._case_and_fallback_patterns(cased)]
        if plain - set(self.literals):
            checked.append(t.str.contains_any(sorted(plain - set(self.literals))))
        lines = frame.get_column("text")
        literals = held_somewhere(self.literals, lines)
        held = t.str.extract_many(literals, overlapping=True) if literals else none
        in_any_case = held_somewhere(by_folded, lines, ascii_case=True)
        folded = (
            t.str.extract_many(
                in_any_case, ascii_case_insensitive=True, overlapping=True
            ).list.eval(pl.element().str.to_lowercase())
            if in_any_case
            else none
        )
        odd = t.str.contains_any(sorted(FOLDS_TO_ASCII.values())) if by_folded else pl.lit(False)
        return frame.with_columns(
            held.alias("held"), folded.alias("held_folded"), odd.alias("odd")
        ).filter(
            (pl.col("held").list.len() > 0)
            | (pl.col("held_folded").list.len() > 0)
            | pl.col("odd")
            | pl.any_horizontal(checked or [pl.lit(False)])
        )

    def _literal_sets(self, ascii_folded: bool) -> tuple[set[str], list[str]]:
        """The literals to find as they are (those of case-insensitive signatures without a
        cased letter among them), and the case-insensitive ones with one. `ascii_folded`
        False: without the case-insensitive signatures' literals that Aho-Corasick finds
        ignoring ASCII case."""
        folded = {
            x
            for sid in self.folded
            if ascii_folded or not self._ascii_folded(sid)
            for x in self.lits[sid] or ()
        }
        cased = sorted(x for x in folded if x.lower() != x.upper())
        return set(self.literals) | (folded - set(cased)), cased

    def _case_and_fallback_patterns(self, cased: list[str]) -> list[str]:
        """One regex of literals to find ignoring case (and the characters that fold to one of
        their ASCII letters), and the patterns without a literal, a few to a regex."""
        out = []
        if cased:
            folds = {FOLDS_TO_ASCII[c] for x in cased for c in x.lower() if c in FOLDS_TO_ASCII}
            ci = "(?i:" + "|".join(re.escape(x) for x in cased) + ")"
            out.append("|".join([ci, *sorted(folds)]))
        # a few patterns per alternation: all of them in one outgrow the regex engine's lazy DFA
        # cache (each is (?i) with bounded repeats), and the scan then gets hundreds of times slower
        for i in range(0, len(self.fallback), FALLBACK_PER_SCAN):
            chunk = self.fallback[i : i + FALLBACK_PER_SCAN]
            out.append("|".join(f"(?:{_unname(self.pattern[sid])})" for sid in chunk))
        return out

    @staticmethod
    def _any(patterns: list[str]) -> pl.Expr:
        parts = [pl.col("text").str.contains(p) for p in patterns]
        return pl.any_horizontal(parts) if parts else pl.lit(False)

    def attribute(
        self,
        frame: pl.DataFrame,
        bulk: bool = False,
        timeouts: list[tuple[str, int]] | None = None,
        matched: Matched | None = None,
    ) -> pl.DataFrame:
        """(line, text, ...) rows -> the same rows plus `sig`, once per verified signature match,
        in line order. `bulk`: candidates pooled from a big log, always vectorised (their lines
        may be long, and a Python loop costs per byte). A regex that runs past its time on a
        line is no match there, and (signature, line) is added to `timeouts`. The matches
        checked one by one (small frames) are added to `matched`."""
        if frame.height <= SMALL_FRAME and not bulk:
            return self._attribute_rows(frame, [] if timeouts is None else timeouts, matched)
        out = []
        if self.literals and frame.height:
            cand = (
                frame.with_columns(
                    pl.col("text")
                    .str.extract_many(self.literals, overlapping=True)
                    .list.unique()
                    .alias("lit"),
                )
                .explode("lit")
                .drop_nulls("lit")
                .join(_pairs(self.lit_to_sigs), on="lit", maintain_order="left_right")
                .drop("lit")
            )
            if self.multi_literal:
                cand = cand.unique(["line", "sig"], maintain_order=True)
            for (sid,), part in cand.partition_by("sig", as_dict=True, maintain_order=True).items():
                out.append(
                    part
                    if sid in self.pure
                    else part.filter(pl.col("text").str.contains(self.pattern[sid]))
                )
        out.extend(self._attribute_folded(frame))
        for sid in self.checked:
            if sid in self.folded and self._ascii_folded(sid):
                continue  # found by _attribute_folded
            hit = frame.filter(pl.col("text").str.contains(self.pattern[sid]))
            if hit.height:
                out.append(hit.with_columns(pl.lit(sid).alias("sig")))
        if not out:
            return pl.DataFrame(schema={**frame.schema, "sig": pl.String})
        hits = pl.concat(out)
        return hits.sort("line", maintain_order=True)

    def regex(self, sid: str) -> regex.Pattern:
        return self._compile(sid)

    def _ascii_folded(self, sid: str) -> bool:
        """Its literals have no cased letter outside ASCII (Aho-Corasick folds ASCII only)."""
        return all(_ascii_or_caseless(c) for x in self.lits[sid] or () for c in x)

    def _attribute_folded(self, frame: pl.DataFrame) -> list[pl.DataFrame]:
        """The case-insensitive signatures' matches among candidates: their regex only on the
        rows holding one of their literals in any ASCII case (one Aho-Corasick pass), or one of
        the characters that fold to an ASCII letter."""
        sids = [sid for sid in self.folded if self._ascii_folded(sid)]
        if not sids or not frame.height:
            return []
        by_lit = self._by_folded_literal()
        held = (
            pl.col("text")
            .str.extract_many(sorted(by_lit), ascii_case_insensitive=True, overlapping=True)
            .list.eval(pl.element().str.to_lowercase())
            .list.unique()
        )
        cand = (
            frame.with_columns(held.alias("lit"))
            .explode("lit")
            .drop_nulls("lit")
            .join(_pairs(by_lit), on="lit", maintain_order="left_right")
            .drop("lit")
        )
        odd = frame.filter(pl.col("text").str.contains_any(sorted(FOLDS_TO_ASCII.values())))
        if odd.height:
            cand = pl.concat([cand, *(odd.with_columns(pl.lit(sid).alias("sig")) for sid in sids)])
        cand = cand.unique(["line", "sig"], maintain_order=True)
        return [
            part.filter(pl.col("text").str.contains(self.pattern[sid]))
            for (sid,), part in cand.partition_by("sig", as_dict=True, maintain_order=True).items()
        ]

    def _attribute_rows(
        self, frame: pl.DataFrame, timeouts: list[tuple[str, int]], matched: Matched | None
    ) -> pl.DataFrame:
        """Small frames (and a big log's kept rows): the prefilter in polars, then a Python loop
        over the candidates is cheaper than a dozen vectorised passes. Each candidate is checked
        with the regexes of the signatures whose literals it holds (case-insensitive ones in any
        ASCII case, all of them on a row holding a character that folds to ASCII), and of those
        without literals."""
        cand = self.candidates(frame)
        rows = self._verified(
            zip(
                cand.select(frame.columns).iter_rows(),
                cand["held"].to_list(),
                cand["held_folded"].to_list(),
                cand["odd"].to_list(),
                strict=True,
            ),
            frame.columns.index("text"),
            frame.columns.index("line"),
            timeouts,
            matched,
        )
        return pl.DataFrame(rows, schema={**frame.schema, "sig": pl.String}, orient="row")

    def attribute_short(
        self,
        lines: list[int],
        texts: list[str],
        timeouts: list[tuple[str, int]],
        matched: Matched | None = None,
    ) -> list[tuple[int, str, str]]:
        """`attribute` of a short plain text's lines (`smalllog.fits`), as (line, text, sig)
        rows: its candidates found in Python, not polars; the signatures' own prefilter (those
        without a literal) is still Rust's, so the same lines are checked."""
        plain, cased = self._literal_sets(ascii_folded=False)
        patterns = self._case_and_fallback_patterns(cased)
        checked = (
            pl.DataFrame({"text": texts}).select(self._any(patterns)).to_series().to_list()
            if patterns and texts
            else [False] * len(texts)
        )
        found = smalllog.candidates(
            texts,
            self.literals,
            sorted(self._by_folded_literal()),
            sorted(FOLDS_TO_ASCII.values()),
            sorted(plain - set(self.literals)),
            checked,
        )
        rows = (((lines[i], texts[i]), held, folded, odd) for i, held, folded, odd in found)
        return self._verified(rows, 1, 0, timeouts, matched)

    def _verified(
        self,
        candidates: Iterable[tuple[tuple, list[str], list[str], bool]],
        at: int,
        line_at: int,
        timeouts: list[tuple[str, int]],
        matched: Matched | None = None,
    ) -> list[tuple]:
        """Each candidate row (with the literals it holds, as written and in any ASCII case, and
        whether it holds a character folding to ASCII) once per signature whose regex matches
        its text (`row[at]`), in rule order; each match's span and groups into `matched`."""
        rows: list[tuple] = []
        by_folded = self._by_folded_literal()
        ascii_folded = {sid for sids in by_folded.values() for sid in sids}
        order = {lit: i for i, lit in enumerate(self.lit_to_sigs)}  # signatures in rule order
        for row, held, held_folded, is_odd in candidates:
            text = row[at]
            held = sorted(set(held), key=order.__getitem__)
            found = dict.fromkeys(sid for lit in held for sid in self.lit_to_sigs[lit])
            maybe = ascii_folded if is_odd else {s for x in held_folded for s in by_folded[x]}
            checked = [sid for sid in self.checked if sid in maybe or sid not in ascii_folded]
            for sid in [*found, *checked]:
                if sid in self.pure and sid in found:
                    rows.append((*row, sid))
                    continue
                try:
                    m = self.regex(sid).search(text, timeout=MATCH_TIMEOUT)
                except TimeoutError:
                    timeouts.append((sid, row[line_at]))
                    continue
                if m:
                    rows.append((*row, sid))
                    if matched is not None:
                        matched[row[line_at], sid] = (m.span(), m.groupdict())
        return rows

    def _by_folded_literal(self) -> dict[str, list[str]]:
        """The lower-cased literals of the case-insensitive signatures that Aho-Corasick can find
        ignoring ASCII case, and whose they are."""
        by_lit: dict[str, list[str]] = {}
        for sid in self.folded:
            if self._ascii_folded(sid):
                for x in self.lits[sid] or ():
                    by_lit.setdefault(x.lower(), []).append(sid)
        return by_lit


PRESENCE_CHARS = 16 << 10  # a text this short is searched for each literal (~0.15 ms per KiB)


def rows_of(frame: pl.DataFrame, names: Sequence[str]) -> Iterator[tuple]:
    """The frame's rows of these columns as Python values, in order, without a query (a frame
    of at most READ_WHOLE_ROWS rows)."""
    return zip(*(frame.get_column(name).to_list() for name in names), strict=True)


def _pairs(mapping: dict[str, list[str]]) -> pl.DataFrame:
    """A literal -> signatures mapping as (lit, sig) rows in its order: joined on, each
    candidate's signatures come in the order `replace_strict` to lists gave them, which built a
    Series per literal (~5 ms a call for ~600 literals)."""
    return pl.DataFrame(
        {
            "lit": [lit for lit, sids in mapping.items() for _ in sids],
            "sig": [sid for sids in mapping.values() for sid in sids],
        },
        schema={"lit": pl.String, "sig": pl.String},
    )


def held_somewhere(literals: list[str], lines: pl.Series, ascii_case: bool = False) -> list[str]:
    """The literals some of the `lines` hold (lower-case ones in any ASCII case), or all of them
    when the lines are longer than PRESENCE_CHARS. An Aho-Corasick automaton of ~600 literals
    costs ~5 ms to build, whatever the text; looking for each in a short text costs less, and
    the automaton of the few found is then built at once. The same rows and literals are found
    either way: a literal no line holds adds nothing to any row."""
    if lines.len() > PRESENCE_CHARS:  # longer than that once joined
        return literals
    text = "\n".join(lines.drop_nulls().to_list())
    if len(text) > PRESENCE_CHARS:
        return literals
    if ascii_case:
        text = text.translate(ASCII_LOWER)
    return [x for x in literals if x in text]


ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
FOLD_WINDOW = 5  # characters of a case-insensitive literal found through their case variants
# the only characters outside ASCII that (?i) matches to an ASCII letter: KELVIN SIGN for k and
# LATIN SMALL LETTER LONG S for s (Rust and Python's regex), CAPITAL I WITH DOT for i (regex)
FOLDS_TO_ASCII = {"k": "\u212a", "s": "\u017f", "i": "\u0130"}


def _ascii_or_caseless(c: str) -> bool:
    return c.isascii() or c.lower() == c.upper() == c.casefold()


def _case_variants(text: str) -> set[str]:
    """Strings one of which every case-insensitive match of ASCII `text` contains: its ASCII
    case variants, and the non-ASCII characters that fold to one of its letters.

    >>> sorted(_case_variants("ok:")) == ["OK:", "Ok:", "oK:", "ok:", "\u212a"]
    True
    """
    options = [(c.lower(), c.upper()) if c.isascii() and c.isalpha() else (c,) for c in text]
    out = {"".join(x) for x in itertools.product(*options)}
    out.update(FOLDS_TO_ASCII[c] for c in set(text.lower()) if c in FOLDS_TO_ASCII)
    return out


def _fold_windows(lit: str) -> list[str]:
    """The windows of FOLD_WINDOW characters of a case-insensitive literal (the literal itself
    when shorter) that have case variants only in ASCII (Chinese has no case)."""
    windows = {lit[i : i + FOLD_WINDOW] for i in range(len(lit) - FOLD_WINDOW + 1)} or {lit}
    return sorted(w.lower() for w in windows if all(_ascii_or_caseless(c) for c in w))


def _lines_holding(needles: list[str], lines: list[str]) -> dict[str, int]:
    """How many of `lines` hold each needle in any ASCII case (one Aho-Corasick pass)."""
    if not needles or not lines:
        return {}
    found = pl.Series("text", lines).str.extract_many(
        needles, ascii_case_insensitive=True, overlapping=True
    )
    found = found.list.eval(pl.element().str.to_lowercase()).list.unique().explode()
    return dict(found.drop_nulls().value_counts().iter_rows())


_METACHARACTER = re.compile(r"[\\.^$*+?{}\[\]|()]")


def _is_plain(pattern: str) -> bool:
    """True when the regex matches exactly its own text as written (no metacharacters, not even
    an escape: `plain_text` of it is itself, which the one search says without its two
    substitutions; a Matcher asks it of every pattern at each run).

    >>> [_is_plain(x) for x in ("numa node 0", r"annotation\\. Next", "a+", r"\\d")]
    [True, False, False, False]
    """
    return _METACHARACTER.search(pattern) is None


def plain_text(pattern: str) -> str | None:
    """The text a regex matches and only it, where it has no metacharacter but escaped
    punctuation (`registered annotation\\. Next check`); else None.

    >>> plain_text(r"annotation\\. Next check in 30s"), plain_text(r"a\\.b+"), plain_text(r"\\d")
    ('annotation. Next check in 30s', None, None)
    """
    text = _ESCAPED_PUNCTUATION.sub(r"\1", pattern)
    return text if not _METACHARACTER.search(_ESCAPED_PUNCTUATION.sub("", pattern)) else None


_ESCAPED_PUNCTUATION = re.compile(r"\\([^\sA-Za-z0-9])")


def parse_log(artefact: Artefact, matcher: Matcher) -> ParsedLog:
    matcher = matcher.for_kind(artefact.kind)
    if artefact.text is not None:
        return _parse_small(artefact, artefact.text, matcher)
    return _parse_streamed(artefact, matcher)


def _with_sigs(frame: pl.DataFrame, hits: pl.DataFrame) -> pl.DataFrame:
    sigs = hits.group_by("line", maintain_order=True).agg(pl.col("sig").alias("sigs"))
    return frame.join(sigs, on="line", how="left").with_columns(
        pl.col("sigs").fill_null(pl.lit([], dtype=pl.List(pl.String)))
    )


def _unname(pattern: str) -> str:
    return regex.sub(r"(?<!\\)\(\?P?<(?![=!])[A-Za-z_]\w*>", "(?:", pattern)


def _with_header(frame: pl.DataFrame) -> pl.DataFrame:
    hdr = pl.col("text").str.extract_groups(KLOG_HEADER_PATTERN)
    return frame.with_columns(hdr.alias("_h")).unnest("_h")


def _finish_stats(frame: pl.DataFrame, stats: LogStats) -> None:
    klog = frame.filter(pl.col("sev").is_not_null())
    if klog.height:
        stats.first_clock = f"{klog['mm'][0]}{klog['dd'][0]} {klog['clock'][0]}"
        stats.last_clock = f"{klog['mm'][-1]}{klog['dd'][-1]} {klog['clock'][-1]}"
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)
    stats.pods = _prefix_pods(frame)


def _prefix_pods(frame: pl.DataFrame) -> list[str]:
    rows = frame["raw"].head(smalllog.PREFIX_POD_ROWS)
    pods = rows.str.extract(smalllog.POD_PREFIX, 1).drop_nulls()
    return sorted(pods.unique().to_list())[: smalllog.PREFIX_PODS]


def _parse_small(artefact: Artefact, text: str, matcher: Matcher) -> ParsedLog:
    raw_lines = text.split("\n")
    while raw_lines and not raw_lines[-1].strip():
        raw_lines.pop()
    stripped: list[str] = []
    containers: list[str | None] = []
    rfcs: list[str | None] = []
    for raw in raw_lines:
        m = line_prefix(raw)
        stripped.append(raw[m.end() :].rstrip())
        containers.append(m.group("container") or artefact.container)
        rfcs.append(m.group("rfc"))
    is_log = artefact.kind.endswith("-log") or artefact.kind in ("klog", "text")
    joined, numbers, joins = (
        rejoin_hard_wraps(stripped, by_width=is_log)
        if is_log or artefact.kind == "issue-text"
        else (stripped, list(range(1, len(stripped) + 1)), 0)
    )
    if joins:
        idx = [n - 1 for n in numbers]
        raw_lines = [raw_lines[i] for i in idx]
        containers = [containers[i] for i in idx]
        rfcs = [rfcs[i] for i in idx]
    offset = artefact.first_line - 1
    columns: dict[str, list] = {
        "line": [n + offset for n in numbers],
        "raw": raw_lines,
        "text": joined,
        "container": containers,
        "rfc": rfcs,
    }
    stats = LogStats(lines=len(joined), hard_wrap_joins=joins, truncated_last_line=_cut(joined))
    matched: Matched = {}
    if smalllog.fits(text):
        return ParsedLog(artefact, stats, _short_frame(columns, matcher, stats, matched), matched)
    frame = pl.DataFrame(columns, schema=LINE_SCHEMA)
    hits = matcher.attribute(frame.select("line", "text"), timeouts=stats.timeouts, matched=matched)
    frame = _with_sigs(_with_header(frame), hits)
    stats.sig_counts = dict(hits.group_by("sig", maintain_order=True).len().iter_rows())
    sev = frame["sev"].drop_nulls()
    stats.klog_lines = len(sev)
    stats.severities = dict(sorted(sev.value_counts().iter_rows()))  # the same order each run
    _finish_stats(frame, stats)
    return ParsedLog(artefact, stats, frame, matched)


def _cut(lines: list[str]) -> bool:
    """The last line looks like the start of a klog header cut short."""
    return bool(
        lines and not KLOG_RE.match(lines[-1]) and regex.match(r"^[IWEF]\d{4}\b", lines[-1])
    )


SHORT_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    **LINE_SCHEMA,
    **dict.fromkeys(smalllog.KLOG_FIELDS, pl.String),
    "sigs": pl.List(pl.String),
}


def _short_frame(
    columns: dict[str, list], matcher: Matcher, stats: LogStats, matched: Matched
) -> pl.DataFrame:
    """A short plain text's frame and statistics (`smalllog.fits`) built in Python: the same as
    polars builds them for other texts, in one polars call rather than ~30."""
    hits = matcher.attribute_short(columns["line"], columns["text"], stats.timeouts, matched)
    header = smalllog.klog_columns(columns["text"])
    stats.sig_counts = smalllog.sig_counts(hits)
    stats.klog_lines = sum(x is not None for x in header["sev"])
    stats.severities = smalllog.severities(header["sev"])
    stats.first_clock = smalllog.clock(header, 0)
    stats.last_clock = smalllog.clock(header, -1)
    stats.containers = smalllog.containers(columns["container"])
    stats.pods = smalllog.prefix_pods(columns["raw"])
    sigs = smalllog.sigs_per_line(columns["line"], hits)
    return pl.DataFrame({**columns, **header, "sigs": sigs}, schema=SHORT_SCHEMA)


@dataclass
class _Profile:
    """What the first block of a big file says about all of it."""

    has_prefix: bool  # kubectl --prefix / --timestamps / CRI prefixes to strip
    has_ansi: bool
    batch_rows: int  # rows per streamed batch: about BATCH_BYTES of text, at most BATCH_ROWS
    lines: list[str]  # the first lines, as read


def _profile(path) -> _Profile:
    with open(path, "rb") as fh:
        head = fh.read(PROFILE_BYTES)
    text, _warns = decode(head)
    lines = text.split("\n")[:-1] or [text]
    has_prefix = any(line_prefix(x).end() for x in lines[:2000])
    mean_len = max(1, len(head) // max(1, text.count("\n")))
    rows = max(1, min(BATCH_ROWS, BATCH_BYTES // mean_len))
    return _Profile(has_prefix, bool(ANSI_RE.search(text)), rows, lines)


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


def _parse_streamed(artefact: Artefact, matcher: Matcher) -> ParsedLog:
    path = artefact.file.path
    profile = _profile(path)
    size = artefact.file.size or Path(path).stat().st_size

    def scanning() -> Progress | None:
        return progress_for(f"scanning {printable(artefact.file.name)}", size, "bytes")

    progress = scanning()
    by_bytes = True
    try:
        try:
            return _stream(artefact, path, matcher, profile, progress)
        except PrefixUnsettled:  # a prefix only polars' Unicode tables tell: the line reader
            by_bytes = False
            if progress:
                progress = scanning()
            return _stream(artefact, path, matcher, profile, progress, by_bytes)
    except pl.exceptions.ComputeError:
        # invalid UTF-8 somewhere past the head: stream a repaired copy kept in a private folder
        # (the input may be the user's own directory, which is never written to)
        with private_folder("hami-utf8-") as tmp:
            repaired = tmp / "repaired.log"
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            with open(path, "rb") as src, open(repaired, "wb") as dst:
                while chunk := src.read(64 << 20):
                    dst.write(decoder.decode(chunk).encode())
                dst.write(decoder.decode(b"", final=True).encode())
            if progress:
                progress = scanning()
            return _stream(artefact, repaired, matcher, profile, progress, by_bytes)
    finally:
        if progress:
            progress.close()


def _edge_klog(path, first: bool) -> str | None:
    """The first or last klog line of a big file, read from its head or tail only."""
    with open(path, "rb") as fh:
        if not first:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - (1 << 20)))
        chunk = fh.read(1 << 20).decode("utf-8", errors="replace")
    lines = chunk.split("\n")
    for line in lines if first else reversed(lines):
        line = PREFIX_RE.sub("", line, count=1)
        if KLOG_RE.match(line):
            return line
    return None


class _Samples:
    """Exact counts, and the first and last occurrences (with their text) of each signature.

    `rows` handed in are compact copies of a batch's kept rows; what is held longer than one batch
    is copied again so that it does not pin them."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.head: dict[str, list[pl.DataFrame]] = {}
        self.tail: dict[str, pl.DataFrame] = {}

    def wanted(self, sid: str, n: int) -> int:
        """How many of the first of `n` new occurrences the head still takes."""
        return max(0, SIG_HEAD_CAP - self.counts.get(sid, 0)) if n else 0

    def add(self, sid: str, rows: pl.DataFrame | None, n: int) -> None:
        """`rows`: new occurrences in line order, at least the first `wanted(sid, n)` (None: no
        rows), the last SIG_TAIL_CAP of all of them in these or later rows; `n`: how many new
        occurrences there were."""
        need = self.wanted(sid, n)
        self.counts[sid] = self.counts.get(sid, 0) + n
        if rows is None:
            return
        if need:
            self.head.setdefault(sid, []).append(_own(rows.head(need)))
        tail = rows.tail(SIG_TAIL_CAP)
        prev = self.tail.get(sid)
        if prev is not None and tail.height < SIG_TAIL_CAP:
            # a rare signature: its last occurrences come from several batches
            tail = pl.concat([prev, tail]).tail(SIG_TAIL_CAP)
        self.tail[sid] = _own(tail)

    def frames(self) -> list[pl.DataFrame]:
        return [f for fs in self.head.values() for f in fs] + list(self.tail.values())


def _total(batch: pl.DataFrame) -> Callable[[str], int]:
    """The sum of a numeric or boolean column of the batch."""
    return lambda name: int(batch.get_column(name).sum())


def _rows(batch: pl.DataFrame, cols: list[str], mask: pl.Series, *extra: pl.Series) -> pl.DataFrame:
    """`cols` of the rows of `batch` where `mask` is true (views of the batch's strings), and
    the same rows of the `extra` series."""
    return pl.DataFrame([s.filter(mask) for s in [*map(batch.get_column, cols), *extra]])


def _own(frame: pl.DataFrame) -> pl.DataFrame:
    """A compact copy: the string views of a slice or filter share the whole batch's buffers
    and would keep it alive. Concatenation writes new strings (casts and rechunks do not). Small
    frames are rebuilt from Python values instead: an eager polars call waits for the thread
    pool that the streaming engine keeps busy, which costs more than copying a few hundred rows."""
    if frame.height <= SIG_HEAD_CAP + SIG_TAIL_CAP:
        return pl.DataFrame(
            {c: frame.get_column(c).to_list() for c in frame.columns}, schema=frame.schema
        )
    return frame.with_columns(pl.col(pl.String) + "")


def _byte_scan(
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


def _line_batches(
    path, matcher: Matcher, hot: list[str], profile: _Profile
) -> tuple[list[str], Iterator[Batch]]:
    """The big log's lines through polars' streaming engine: the reader for logs whose lines
    carry prefixes or colours to remove (and wherever the byte scan is not available). Per line
    only cheap expressions run: klog flags, one prefilter regex for all signatures but the hot
    ones, and one regex per hot signature."""
    has_prefix, has_ansi = profile.has_prefix, profile.has_ansi
    needs_raw = has_prefix or has_ansi
    base = pl.scan_lines(
        path, name="raw" if needs_raw else "text", row_index_name="line", row_index_offset=1
    )
    text = pl.col("raw") if needs_raw else pl.col("text")
    if has_ansi:
        text = text.str.replace_all(ANSI_PATTERN, "")
    if has_prefix:
        text = text.str.replace(LINE_PREFIX_PATTERN, "")
    t = pl.col("text")
    klog = t.str.contains(KLOG_START)
    rest = matcher.without(hot)
    flags = [f"_h{i}" for i in range(len(hot))]
    cols = ["line", "raw", "text"] if needs_raw else ["line", "text"]
    # E/F lines of no hot signature (those are matched); without a candidate literal they cannot
    # match any other one either: unmatched (batch analysis wants them)
    err = (pl.col("_e") | pl.col("_f")) & ~pl.any_horizontal(pl.lit(False), *flags)
    lf = (
        (base.with_columns(text.alias("text")) if needs_raw else base)
        .select(
            pl.col("line").cast(pl.Int64),
            *cols[1:],
            pl.col(cols[1]).str.len_bytes().alias("_bytes"),  # for the progress line
            klog.alias("_klog"),
            (klog & t.str.starts_with("E")).alias("_e"),
            (klog & t.str.starts_with("W")).alias("_w"),
            (klog & t.str.starts_with("F")).alias("_f"),
            rest.keep_expr(profile.lines).alias("_keep"),
            *(t.str.contains(matcher.pattern[s]).alias(f) for s, f in zip(hot, flags, strict=True)),
        )
        .with_columns(err.alias("_err"))
        .with_columns((pl.col("_err") & ~pl.col("_keep")).alias("_loose"))
    )

    def batches() -> Iterator[Batch]:
        # Series operations only: a DataFrame's filter or select is a query of its own, which
        # waits for the thread pool that the streaming engine keeps busy
        examined = 0  # E/F lines before the batch
        for batch in lf.collect_batches(chunk_size=profile.batch_rows):
            column = batch.get_column
            total = _total(batch)
            ef = column("_e") | column("_f")
            examinable = ef.cum_sum() + examined <= ERROR_EXAMINED  # among the first E/F lines
            loose = column("_loose") & examinable
            keep = column("_keep")
            examined += int(ef.sum())
            yield Batch(
                lines=batch.height,
                bytes=total("_bytes") + batch.height,  # the text and its newlines
                klog_lines=total("_klog"),
                severities={x: total(f"_{x.lower()}") for x in "EWF"},
                hot=[
                    (sid, _rows(batch, cols, column(f)), total(f))
                    for f, sid in zip(flags, hot, strict=True)
                    if column(f).any()
                ],
                loose=_rows(batch, cols, loose) if loose.any() else None,
                # a candidate no signature takes is a loose line: among the first ones only
                candidates=_own(
                    _rows(batch, cols, keep, (column("_err") & examinable).alias("_err"))
                )
                if keep.any()
                else None,
                hot_ids=tuple(hot),
            )

    return cols, batches()


REPLAN_SAMPLE = 20_000  # candidate lines of a chunk that tell which signatures became hot


def _replanner(matcher: Matcher, head: list[str], prefixed: bool) -> Replan:
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
        better = _byte_scan(matcher, [*hot, *more], head, seen, prefixed, as_text)
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


def _stream(
    artefact,
    path,
    matcher: Matcher,
    profile: _Profile,
    progress: Progress | None,
    by_bytes: bool = True,
) -> ParsedLog:
    """One pass over the file by the byte scan (plain logs) or polars' line reader, then the
    pooled candidates attributed with the signatures' regexes. Sampled rows keep their text, so
    nothing is read twice."""
    # the first lines as every line is read: a prefixed log's without their prefixes
    prefixed = profile.has_prefix
    head = [x[line_prefix(x).end() :] for x in profile.lines] if prefixed else profile.lines
    matcher = matcher.adapted(head)
    hot = hot_signatures(matcher, head)
    # the byte scan reads a log as it is or without its time prefixes (`kubectl logs
    # --timestamps`, CRI); the line reader, colours and kubectl's `[pod/...]` prefixes
    by_bytes = (
        by_bytes
        and not profile.has_ansi
        and not any(line_prefix(x)["container"] for x in profile.lines)
    )
    byte_scan = _byte_scan(matcher, hot, head, prefixed=prefixed) if by_bytes else None
    if byte_scan is not None:
        cols = ["line", "raw", "text"] if prefixed else ["line", "text"]
        batches = byte_scan.batches(path, replan=_replanner(matcher, head, prefixed))
    else:
        cols, batches = _line_batches(path, matcher, hot, profile)
    rest = matcher  # the attribution of every signature the batch's scan did not count
    current: tuple[str, ...] | None = None
    stats = LogStats(all_lines_kept=False)
    samples = _Samples()
    errors: list[pl.DataFrame] = []
    n_errors = 0
    pool: list[pl.DataFrame] = []  # candidate lines of the other signatures, not yet attributed
    pooled = 0

    def flush() -> None:
        """Attribute the pooled candidates at once: few big calls beat many small ones while
        the streaming engine keeps the thread pool busy."""
        nonlocal pooled
        if not pool:
            return
        kept = pl.concat(pool, rechunk=True)  # many small chunks make every later call slow
        pool.clear()
        pooled = 0
        hit = rest.attribute(kept.select(cols), bulk=True)
        for (sid,), group in hit.partition_by("sig", as_dict=True, maintain_order=True).items():
            samples.add(sid, group.select(cols), group.height)
        e = kept.filter(pl.col("_err") & ~pl.col("line").is_in(hit["line"].implode()))
        errors.append(_own(e.select(cols).head(ERROR_LINE_CAP)))
        if sum(f.height for f in errors) > 2 * ERROR_LINE_CAP:  # keep the first ones only
            errors[:] = [pl.concat(errors).sort("line").head(ERROR_LINE_CAP)]

    for batch in batches:
        if batch.hot_ids != current:  # a scan with more hot signatures from here on
            flush()
            current = batch.hot_ids
            rest = matcher.without(list(current))
        if progress:
            progress.advance(batch.bytes)
        stats.lines += batch.lines
        stats.klog_lines += batch.klog_lines
        for letter, k in batch.severities.items():
            stats.severities[letter] = stats.severities.get(letter, 0) + k
        for sid, rows, k in batch.hot:
            samples.add(sid, rows, k)
        if batch.loose is not None and n_errors < ERROR_LINE_CAP:
            e = _own(batch.loose.head(ERROR_LINE_CAP - n_errors))
            n_errors += e.height
            errors.append(e)
        if batch.candidates is not None:
            pool.append(batch.candidates)
            pooled += int(batch.candidates.estimated_size())
            if pooled >= POOL_BYTES:
                flush()
    flush()
    errors = [pl.concat(errors).sort("line").head(ERROR_LINE_CAP)] if errors else []
    stats.sig_counts = samples.counts
    stats.severities["I"] = stats.klog_lines - sum(stats.severities.get(x, 0) for x in "EWF")
    stats.severities = {k: v for k, v in stats.severities.items() if v}
    for edge, which in (
        (_edge_klog(path, True), "first_clock"),
        (_edge_klog(path, False), "last_clock"),
    ):
        m = KLOG_RE.match(edge) if edge else None
        if m:
            setattr(stats, which, f"{m['mm']}{m['dd']} {m['clock']}")
    kept_frames = samples.frames() + errors
    empty = pl.DataFrame(schema={"line": pl.Int64, "text": pl.String})
    frame = (
        pl.concat(kept_frames, how="diagonal_relaxed").unique("line").sort("line")
        if kept_frames
        else empty
    )
    if "raw" not in frame.columns:
        frame = frame.with_columns(pl.col("text").alias("raw"))
    frame = frame.with_columns(
        pl.col("raw")
        .str.extract(r"^\[pod/[^/\]\s]+/([^\]\s]+)\] ", 1)
        .fill_null(pl.lit(artefact.container, dtype=pl.String))
        .alias("container"),
        pl.col("raw").str.extract(r"^(?:\[[^\]]*\] )?(\d{4}-\d\d-\d\dT\S+)", 1).alias("rfc"),
    )
    matched: Matched = {}
    hits = matcher.attribute(frame.select("line", "text"), timeouts=stats.timeouts, matched=matched)
    frame = _with_sigs(_with_header(frame), hits)
    stats.containers = sorted(c for c in frame["container"].unique().to_list() if c)
    stats.pods = _prefix_pods(frame)
    return ParsedLog(artefact, stats, frame, matched)
