"""Which signatures a log's lines match: the `Matcher`.

One prefilter of every signature's required literals selects the candidate lines, then each
candidate signature's regex decides. The literals are chosen per log from its first lines
(`adapted`), looked for ignoring case where a pattern does, and a pattern without a usable
literal is checked on every line. The line reader (`parse.logs`) and the byte scan's plan
(`parse.scanplan`) both ask it.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Callable, Iterable, Sequence

import polars as pl
import regex

from analyzer.catalogue.signatures import MATCH_TIMEOUT, Signature
from analyzer.parse import smalllog
from analyzer.parse.literals import ignores_case, least_common, literal_options, required_literals

SigSpec = tuple[str, str]  # (signature id, Rust-compatible pattern)
# a verified match of a signature's regex: (line, signature) -> (span, groups as `groupdict`)
Matched = dict[tuple[int, str], tuple[tuple[int, int], dict[str, str | None]]]
# per alternative of a pattern, the sets of literals one of which each match holds
LiteralChoices = Sequence[Sequence[Sequence[str]]]
SMALL_FRAME = 20_000  # below this many rows signatures are attributed line by line
FALLBACK_PER_SCAN = 8  # literal-less patterns joined into one regex scan


class SignatureCompiler:
    """A signature's compiled pattern, by id (a closure would not pickle: the rule set's cached
    scan holds one)."""

    def __init__(self, signatures: dict[str, Signature]):
        self.signatures = signatures

    def __call__(self, sid: str) -> regex.Pattern:
        return self.signatures[sid].compiled


def signature_matcher(signatures: dict[str, Signature]) -> Matcher:
    """The scan of a rule set's signatures (built with the rule set and cached with it)."""
    sigs = list(signatures.values())
    return Matcher(
        [(s.id, s.pattern) for s in sigs],
        {s.id: list(s.prefilter) or None for s in sigs},
        SignatureCompiler(signatures),
        {s.id: s.scanned_in for s in sigs},
        {s.id: s.literal_choices for s in sigs},
    )


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
        checked = self._checked_set = set(self.checked)
        lit_rows = [
            (lit, sid) for sid, _ in sigs if sid not in checked for lit in self.lits[sid] or ()
        ]
        self.literals = sorted({lit for lit, _ in lit_rows})
        self.lit_to_sigs: dict[str, list[str]] = {}
        for lit, sid in lit_rows:
            self.lit_to_sigs.setdefault(lit, [])
            if sid not in self.lit_to_sigs[lit]:
                self.lit_to_sigs[lit].append(sid)
        # a pattern that is exactly its literal needs no regex check after the prefilter (not
        # one whose declared prefilter is another literal: that finds more lines than it)
        self.pure = {
            sid
            for sid, pat in sigs
            if sid not in checked
            and _is_plain(pat)
            and tuple(self.lits[sid] or ()) == (plain_text(pat),)
        }
        per_sig: dict[str, int] = {}
        for _lit, sid in set(lit_rows):
            per_sig[sid] = per_sig.get(sid, 0) + 1
        # a line may hold two literals of one signature: then (line, sig) pairs need dedup
        self.multi_literal = any(n > 1 for n in per_sig.values())

    def __getstate__(self) -> dict:
        """Pickled without what a run adds (its per-kind scans, its sample)."""
        return {**self.__dict__, "_without": {}, "sample_counts": None}

    def without(self, sids: set[str] | list[str]) -> Matcher:
        """The same scan without these signatures (built once per set)."""
        key = frozenset(sids)
        if not key:
            return self
        if key not in self._without:
            self._without[key] = self._subset(key)
        return self._without[key]

    def _subset(self, dropped: frozenset[str]) -> Matcher:
        """This scan without `dropped`, its tables filtered rather than worked out again (a
        small run builds one per kind of log; building each anew cost it ~2 ms)."""
        child = Matcher.__new__(Matcher)
        child.sigs = [(sid, pat) for sid, pat in self.sigs if sid not in dropped]
        child._choices = self._choices
        child.pattern = {sid: pat for sid, pat in child.sigs}
        child._compile = self._compile
        child.scanned_in = {}
        child._without = {}
        child.sample_counts = None
        child.lits = self.lits
        child.fallback = [sid for sid in self.fallback if sid not in dropped]
        child.folded = [sid for sid in self.folded if sid not in dropped]
        child.checked = child.fallback + child.folded
        child.lit_to_sigs = {}
        for lit, sids in self.lit_to_sigs.items():
            kept = [sid for sid in sids if sid not in dropped]
            if kept:
                child.lit_to_sigs[lit] = kept
        child.literals = sorted(child.lit_to_sigs)
        child.pure = self.pure - dropped
        child._checked_set = set(child.checked)
        child.multi_literal = self.multi_literal and any(
            len(set(self.lits[sid] or ())) > 1
            for sid, _ in child.sigs
            if sid not in child._checked_set
        )
        return child

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


def _unname(pattern: str) -> str:
    return regex.sub(r"(?<!\\)\(\?P?<(?![=!])[A-Za-z_]\w*>", "(?:", pattern)
