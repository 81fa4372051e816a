"""The redactor catalogue: rules/redactors.yaml plus the user's --redactors files, validated on
load (a user file's examples run then too, so a pattern that misses its own examples is refused
before it touches a bundle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import regex
import yaml

from analyzer.errors import AnalyzerError
from analyzer.parse.literals import required_literals
from analyzer.redact.runs import anchored, rust_class
from analyzer.rules import builtin_rules_dir
from analyzer.structured import load_yaml

MODES = ("find", "keys", "pattern", "block")
KEYS = {
    "id",
    "description",
    "token",
    "keep",
    "examples",
    "parsed",
    "everywhere",
    "prefilter",
    "kept_prefilter",
    "multiline",
    "kind",
    "runs",
    *MODES,
}
TOKEN_RE = regex.compile(r"[a-z][a-z0-9]*")
# seconds a pattern may spend on one example, plus TIMEOUT_PER_MIB per MiB of a file: a
# catastrophic pattern becomes an error, never a hang
TIMEOUT = 1.0
TIMEOUT_PER_MIB = 3.0
# the value of a key whose name ends in `keys`: `key: value` (YAML, describe, JSON; to the end of
# the line or a comment), `KEY=value` and `--key=value` (env, flags, logfmt; to the next blank);
# quoted values to their quote. Anchored on the separator, which looks back for the key name:
# scanning for the name from every word start costs ten times more on a log.
KEY_VALUE = (
    r"(?m)(?::(?<=(?i:{keys})[\"']?[ \t]*:)[ \t]*(?|\"(?P<value>[^\"\n]+)\"|'(?P<value>[^'\n]+)'"
    r"|(?P<value>[^\s\"'|>&*#{{\[,][^\n#,}}]*?)(?=[ \t]*(?:$|\#|,|}})))"
    r"|=(?<=(?i:{keys})[\"']?[ \t]*=)[ \t]*"
    r"(?|\"(?P<value>[^\"\n]+)\"|'(?P<value>[^'\n]+)'|(?P<value>[^\s\"',;}}]+)))"
)


# a YAML mapping key (or JSON member name) that opens a block: `data:` alone on its line, or
# `"data": {`; `{block}` is the redactor's regex for the key's name
BLOCK_HEADER = (
    r"(?m)^(?P<indent>[ \t]*)(?:-[ \t]+)?[\"']?(?:{block})[\"']?[ \t]*:[ \t]*\{{?[ \t]*(?:\#.*)?$"
)


class RedactorError(AnalyzerError):
    """A redactor file is unreadable or invalid; the message is one line naming file and entry."""


@dataclass(frozen=True)
class Redactor:
    """One declared redactor: how values are found, what token replaces them, what stays."""

    id: str
    description: str
    token: str
    mode: str  # find | keys | pattern | block
    patterns: tuple[regex.Pattern, ...]  # block: the header of the block
    keep: regex.Pattern | None = None
    parsed_nodes: bool = False  # find: also the node names the analyzer's parsers read
    everywhere: bool = False  # values found are replaced wherever else they occur (find: always)
    # a Rust regex (polars) every line holding (the start of) a match matches: a per-line
    # redactor searches only those lines; a multiline one searches the whole text only when a
    # line matches. None: no prefilter is known (search the whole text)
    prefilter: str | None = None
    # one prefilter per pattern, declared with it (`{regex, prefilter}` entries; `prefilter` is
    # then their union): the first pass reads each pattern only on the lines its own selects.
    # Empty: every pattern reads every line the prefilter selects
    pattern_prefilters: tuple[str, ...] = ()
    # where a prefilter match ends when the value it leads to is kept (the `keep` pattern in its
    # place): a line whose every prefilter match ends where one of these does holds nothing to
    # replace, and Hyperscan drops it before any pattern reads it (see `kept_shape`)
    kept_prefilter: str | None = None
    multiline: bool = False  # matches may span lines (block: always)
    # the characters its matches and look-arounds read, as a Rust class (`runs.py`): a text
    # dense with its values is redacted run by run. None: match by match
    runs: str | None = None
    kind: str | None = None  # block: the Kubernetes kind of the object holding the block
    examples_redact: tuple[str, ...] = ()
    examples_keep: tuple[str, ...] = ()
    file: str = ""

    def kept(self, value: str) -> bool:
        return self.keep is not None and _kept(self.keep, value)

    @property
    def per_line(self) -> bool:
        return self.prefilter is not None and not self.multiline


@lru_cache(maxsize=1 << 16)
def _kept(keep: regex.Pattern, value: str) -> bool:
    """Values repeat (a registry on every line of a log): their verdict is remembered."""
    return keep.fullmatch(value, timeout=TIMEOUT) is not None


def builtin_file() -> Path:
    return builtin_rules_dir() / "redactors.yaml"


def load_redactors(
    extra: list[Path] | tuple[Path, ...] = (),
    check: Callable[[Redactor], str | None] | None = None,
) -> list[Redactor]:
    """The built-in redactors, then each user file's (an existing id is replaced in place).
    `check` proves a user file's redactor on its own examples (`engine.example_failure`: the
    engine is above this catalogue, so its caller passes it); the built-in ones are proven by the
    tests."""
    out: dict[str, Redactor] = {}
    for path in [builtin_file(), *extra]:
        for r in _load_file(Path(path)):
            if path != builtin_file() and check is not None and (failure := check(r)):
                raise RedactorError(f"{path}: redactor {r.id}: {failure}")
            out[r.id] = r
    return list(out.values())


def _load_file(path: Path) -> list[Redactor]:
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RedactorError(
            f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RedactorError(f"{path}{where}: YAML error: {problem}") from None
    entries = doc.get("redactors") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise RedactorError(f"{path}: expected a mapping with a 'redactors:' list")
    declared: list[tuple[str, str]] = []  # (redactor, a prefilter it declares)
    redactors = [_redactor(path, i, e, declared) for i, e in enumerate(entries)]
    bad = set(uncompilable([one for _, one in declared]))
    for name, one in declared:
        if one in bad:
            raise RedactorError(
                f"{path}: redactor {name}: bad prefilter (a Rust regex, without look-around): "
                f"{one[:80]!r}"
            )
    return redactors


def _redactor(path: Path, index: int, e: Any, declared: list[tuple[str, str]]) -> Redactor:
    """One entry, checked; the prefilters it declares are added to `declared` (polars checks
    them all at once: a check each cost more than the rest of the catalogue's load)."""

    def bad(msg: str) -> RedactorError:
        name = e.get("id") if isinstance(e, dict) and isinstance(e.get("id"), str) else f"#{index}"
        return RedactorError(f"{path}: redactor {name}: {msg}")

    if not isinstance(e, dict):
        raise bad("expected a mapping")
    unknown = sorted(set(map(str, e)) - KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    for key in ("id", "description", "token"):
        if not isinstance(e.get(key), str) or not e[key].strip():
            raise bad(f"'{key}' must be a non-empty string")
    if not TOKEN_RE.fullmatch(e["token"]):
        raise bad("'token' must be lower-case letters and digits (tokens read token-1, token-2)")
    modes = [m for m in MODES if m in e]
    if len(modes) != 1:
        raise bad("needs exactly one of 'find', 'keys' or 'pattern'")
    mode = modes[0]
    try:
        sources, pattern_prefilters = _sources(e, mode)
    except ValueError as exc:
        raise bad(str(exc)) from None
    written = sources
    if mode == "keys":
        sources = [KEY_VALUE.format(keys=s) for s in sources]
    elif mode == "block":
        sources = [BLOCK_HEADER.format(block=s) for s in sources]
    examples = e.get("examples") or {}
    if not isinstance(examples, dict) or set(examples) - {"redact", "keep"}:
        raise bad("'examples' must be a mapping with 'redact' and/or 'keep' lists")
    for part in ("redact", "keep"):
        if not isinstance(examples.get(part) or [], list) or not all(
            isinstance(x, str) for x in examples.get(part) or []
        ):
            raise bad(f"examples.{part} must be a list of strings")
    if e.get("parsed") not in (None, "nodes") or ("parsed" in e and mode != "find"):
        raise bad("'parsed' can only be 'nodes', on a 'find' redactor")
    if not isinstance(e.get("everywhere", False), bool):
        raise bad("'everywhere' must be true or false")
    if "keep" in e and not isinstance(e["keep"], str):
        raise bad("'keep' must be a regex")
    if not isinstance(e.get("multiline", False), bool):
        raise bad("'multiline' must be true or false")
    if "prefilter" in e and mode == "block":
        raise bad("'prefilter': a block redactor has its own (the line of its key)")
    if "prefilter" in e and not isinstance(e["prefilter"], str):
        raise bad("'prefilter' must be a regex")
    if "kept_prefilter" in e and Path(path) != builtin_file():
        # a wrong shape only drops lines, so it leaks, and only on a big file (Hyperscan): its
        # examples, run through polars, cannot prove it; the built-in ones are proven by tests
        raise bad("'kept_prefilter' is for the built-in redactors, whose shapes the tests prove")
    try:
        kept_prefilter = kept_shape(e)
    except ValueError as exc:
        raise bad(str(exc)) from None
    try:
        runs = runs_class(path, e, mode, pattern_prefilters)
    except ValueError as exc:
        raise bad(str(exc)) from None
    if "kind" in e and (mode != "block" or not isinstance(e["kind"], str) or not e["kind"]):
        raise bad("'kind' (a Kubernetes kind) is only for a block redactor")
    try:
        patterns = tuple(regex.compile(s) for s in sources)
        keep = regex.compile(e["keep"]) if e.get("keep") else None
    except (regex.error, ValueError, OverflowError) as exc:
        raise bad(f"bad regex: {exc}") from None
    declared += [(e["id"], one) for one in ([e["prefilter"]] if "prefilter" in e else [])]
    declared += [(e["id"], one) for one in pattern_prefilters]
    if "prefilter" in e:
        prefilter = e["prefilter"]
    elif pattern_prefilters:
        prefilter = "|".join(f"(?:{one})" for one in pattern_prefilters)
    elif e.get("multiline") and mode != "block":
        prefilter = None  # a literal may sit on a later line than the one a match starts on
    else:
        prefilter = derived_prefilter(mode, written)
    return Redactor(
        id=e["id"],
        description=e["description"],
        token=e["token"],
        mode=mode,
        patterns=patterns,
        keep=keep,
        parsed_nodes=e.get("parsed") == "nodes",
        everywhere=mode == "find" or e.get("everywhere", False),
        examples_redact=tuple(examples.get("redact") or ()),
        examples_keep=tuple(examples.get("keep") or ()),
        file=str(path),
        prefilter=prefilter,
        pattern_prefilters=pattern_prefilters,
        kept_prefilter=kept_prefilter,
        multiline=bool(e.get("multiline")) or mode == "block",
        kind=e.get("kind"),
        runs=runs,
    )


def _sources(e: dict, mode: str) -> tuple[list[str], tuple[str, ...]]:
    """An entry's regexes, and their own prefilters when it declares one per regex: a `find` or
    `pattern` list may hold `{regex: ..., prefilter: ...}` mappings (each regex, and the Rust
    regex every line holding its match matches), all of them or none."""
    raw = e[mode] if isinstance(e[mode], list) else [e[mode]]
    mapped = [x for x in raw if isinstance(x, dict)]
    if not mapped:
        if not raw or not all(isinstance(x, str) and x for x in raw):
            raise ValueError(f"'{mode}' must be a regex or a list of regexes")
        return raw, ()
    if mode not in ("find", "pattern") or len(mapped) != len(raw):
        raise ValueError(
            "a prefilter per regex ({regex: ..., prefilter: ...}) is for every entry of a"
            " 'find' or 'pattern' list, or none"
        )
    if "prefilter" in e or e.get("multiline"):
        raise ValueError(
            "a prefilter per regex replaces the entry's 'prefilter', and a multiline redactor"
            " reads the whole text"
        )
    for x in mapped:
        if set(x) != {"regex", "prefilter"} or not all(
            isinstance(v, str) and v for v in x.values()
        ):
            raise ValueError("each entry of the list is {regex: ..., prefilter: ...}")
    return [x["regex"] for x in mapped], tuple(x["prefilter"] for x in mapped)


def runs_class(path: Path, e: dict, mode: str, pattern_prefilters: tuple[str, ...]) -> str | None:
    """An entry's `runs` as a Rust class (`runs.py`), checked; None without one. The built-in
    catalogue's only: a class missing a character its pattern reads leaks, and only on a big
    text dense with values, which its examples cannot show; the tests prove the built-in ones."""
    if "runs" not in e:
        return None
    if Path(path) != builtin_file():
        raise ValueError("'runs' is for the built-in redactors, whose classes the tests prove")
    if mode != "pattern" or e.get("multiline") or not isinstance(e["runs"], str):
        raise ValueError("'runs' (a character class) is for a per-line 'pattern' redactor")
    prefilters: list[Any] = list(pattern_prefilters) or [e.get("prefilter")]
    if not all(isinstance(one, str) and not anchored(one) for one in prefilters):
        raise ValueError(
            "'runs' needs a prefilter that matches wherever its text is (no ^ $ \\b or flags)"
        )
    return rust_class(e["runs"])


def derived_prefilter(mode: str, sources: list[str]) -> str | None:
    """A prefilter for a redactor that declares none: the literals one of which each pattern's
    match holds, or the key names of a `keys` redactor; None (search the whole text) when a
    pattern has no usable literal.

    >>> print(derived_prefilter("pattern", [r"TCK-\\d{5}", r"case (?P<value>\\d+) opened"]))
    TCK\\-|\\ opened
    >>> print(derived_prefilter("keys", ["pin"]), derived_prefilter("pattern", [r"\\d+"]))
    (?i:pin)["']?[ \\t]*[:=] None
    """
    if mode in ("keys", "block"):
        keys = "|".join(f"(?:{s})" for s in sources) if len(sources) > 1 else sources[0]
        candidate = (
            f"(?i:{keys})[\"']?[ \\t]*[:=]"
            if mode == "keys"
            else f"^[ \\t]*(?:-[ \\t]+)?[\"']?(?:{keys})[\"']?[ \\t]*:"
        )
        return candidate if prefilter_compiles(candidate) else None
    literals: list[str] = []
    for source in sources:
        found = required_literals(source)
        if not found:
            return None
        literals += [x for x in found if x not in literals]
    return "|".join(regex.escape(x) for x in literals)


def kept_shape(entry: dict) -> str | None:
    """An entry's `kept_prefilter` with its `keep` in place of `{keep}`: written once, so what
    the shape lets Hyperscan drop never drifts from what `keep` keeps. The shape must end where
    the prefilter ends, and match only where the value the patterns would read there is one
    `keep` keeps (for the registry: the same left edge as the pattern's look-behind, so the host
    it reads is the pattern's whole value). None without one."""
    shape = entry.get("kept_prefilter")
    if shape is None:
        return None
    if not isinstance(shape, str) or shape.count("{keep}") != 1:
        raise ValueError("'kept_prefilter' must be a regex holding {keep} once")
    if not isinstance(entry.get("keep"), str) or not isinstance(entry.get("prefilter"), str):
        raise ValueError("'kept_prefilter' needs a 'keep' and a 'prefilter'")
    if "find" in entry or entry.get("multiline"):
        # a name is kept once its trailing `.` or `-` is dropped; a multiline match's value is
        # not on the line its prefilter selects
        raise ValueError("'kept_prefilter' is for a per-line 'pattern' or 'keys' redactor")
    out = shape.replace("{keep}", f"(?:{entry['keep']})")
    if not prefilter_compiles(out):
        raise ValueError(f"bad kept_prefilter (a Rust regex, without look-around): {shape[:80]!r}")
    return out


def prefilter_compiles(pattern: str) -> bool:
    """Whether polars (Rust's regex crate) accepts the pattern."""
    return not uncompilable([pattern])


def uncompilable(patterns: list[str]) -> list[str]:
    """The patterns polars (Rust's regex crate) refuses, asked in one call when it takes them
    all (a call costs ~0.5 ms, the whole catalogue's load ~10).

    >>> uncompilable(["a|b", "(?<=x)y", "[z"])
    ['(?<=x)y', '[z']
    """
    import polars as pl

    if not patterns:
        return []
    try:
        pl.select(pl.lit("").str.contains(p).alias(f"p{i}") for i, p in enumerate(patterns))
    except (pl.exceptions.ComputeError, pl.exceptions.PolarsError):
        if len(patterns) == 1:
            return list(patterns)
        return [p for p in patterns if uncompilable([p])]
    return []
