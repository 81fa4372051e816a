"""A text dense with one redactor's values, redacted run by run.

A per-line `pattern` redactor may declare `runs`: a character class holding every character
its matches and look-arounds read (ipv4's `[\\w.]`). Any other character then acts on the
pattern as the text's edge does, so a text's redaction is that of each maximal run of the
class, alone. A log with an address on every line holds a few thousand distinct runs a piece
among hundreds of thousands of matches: polars lists them (Rust's regex, a scan), each is
redacted once (Python's regex), and Aho-Corasick puts them back. Matched one by one, the
regex module's step per match made redacting such a log take forty times its analysis."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import regex

DISTINCT_MAX = 0.5  # share of the runs found that may be distinct: above, nothing is saved
ASCII = [chr(c) for c in range(128)]


def rust_class(declared: str) -> str:
    """The declared class (Python's regex) as a Rust class: its ASCII members exactly, and
    every other character. Rust and Python read `\\w` from different Unicode versions, and a
    larger class only makes longer runs, never a wrong one. ValueError when it is no class of
    single characters, or it holds a line end (a run is within a line).

    >>> print(rust_class("[a.]"))
    [\\x{2E}\\x{61}\\x{80}-\\x{10FFFF}]
    """
    try:
        pattern = regex.compile(declared)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ValueError(f"'runs' is not a regex: {exc}") from None
    members = [c for c in ASCII if pattern.fullmatch(c)]
    single = not pattern.fullmatch("") and not any(pattern.fullmatch(c * 2) for c in members)
    if not members or not single or not declared.startswith("["):
        raise ValueError("'runs' must be a character class ([...])")
    if "\n" in members or "\r" in members:
        raise ValueError("'runs' must not hold a line end (a run is within a line)")
    return "[" + "".join(f"\\x{{{ord(c):02X}}}" for c in members) + "\\x{80}-\\x{10FFFF}]"


def anchored(prefilter: str) -> bool:
    """Whether a prefilter may depend on what surrounds its match (an anchor, a word boundary,
    a flag). A run holding a listed run must itself be listed, so the prefilter has to match
    wherever its text is: `^1.2.3.4` would list the run `1.2.3.4` at a line start, and
    Aho-Corasick then find it inside `x1.2.3.4`, a run not listed, and replace it there."""
    return regex.search(r"[$^]|\\[bBAzZ<>]|\(\?[a-zA-Z]", prefilter) is not None


@dataclass(frozen=True)
class Runs:
    """The distinct runs holding a match's prefilter, in the order they first occur, and how
    many times each does."""

    texts: list[str]
    counts: list[int]


def as_column(text: str | bytes | bytearray) -> pl.Series | None:
    """A text as a polars column of one row (bytes: valid UTF-8, read without a Python string);
    None when polars cannot hold it (a stray byte, or one kept as a surrogate)."""
    try:
        if isinstance(text, str):
            return pl.Series([text], dtype=pl.String)
        return pl.Series([bytes(text)], dtype=pl.Binary).cast(pl.String)
    except (pl.exceptions.PolarsError, UnicodeEncodeError):
        return None


def distinct_runs(runs: str, prefilter: str, column: pl.Series) -> Runs | None:
    """The runs of `runs` (a Rust class) in a text (`as_column`) that hold a `prefilter`
    match or a character outside ASCII; None when they do not pay (most are distinct): the
    caller then matches the text itself. Outside ASCII, Python's regex reads `\\d` and `\\w` from
    a newer Unicode than Rust's (an address in digits Rust does not know holds no prefilter
    match), so such a run is listed whatever it holds."""
    listed = f"(?:{prefilter})|[^\\x00-\\x7F]"
    listing = f"{runs}*(?:{listed}){runs}*"
    try:
        if not column.str.contains(listed).any():  # stops at the first match, if any
            return Runs([], [])
        found = column.str.extract_all(listing).explode().drop_nulls()
        table = found.to_frame("run").group_by("run", maintain_order=True).len()
        # the prefilter's match is within the run, so the run is whole: a prefilter that
        # matched a character outside the class would list a piece of two runs
        whole = table.height == 0 or bool(table.get_column("run").str.contains(f"^{runs}+$").all())
    except pl.exceptions.PolarsError:
        return None
    if not whole or table.height > DISTINCT_MAX * len(found):
        return None
    return Runs(table.get_column("run").to_list(), table.get_column("len").to_list())


def replace_runs(column: pl.Series, runs: list[str], redacted: list[str]) -> pl.Series:
    """The text with each run replaced by its redaction. Every run listed is given, the
    unchanged ones as themselves: longest first and leftmost-first, a run is then found only
    whole (one holding a shorter run is itself listed, and starts earlier or is tried first)."""
    order = sorted(range(len(runs)), key=lambda k: len(runs[k]), reverse=True)
    return column.str.replace_many(
        [runs[k] for k in order], [redacted[k] for k in order], leftmost=True
    )
