"""Load rules/: the kind catalogue, annotation formats, signatures and rules (conditions parsed
into typed nodes), episodes and decisions. Structural problems name the file and line and stop
the load; the linter's semantic checks (analyzer/rules/lint.py) run on the result."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import regex

from analyzer import __version__, codecache, packed
from analyzer.atomic import atomic_path
from analyzer.bundle.probes import compile_recognition, gating_patterns
from analyzer.cache import cache_dir, prune, touched
from analyzer.catalogue.datafiles import check_annotations, load_decisions, load_episodes
from analyzer.catalogue.fields import LINE_KEY, Context, read_fields, read_yaml
from analyzer.catalogue.kinds import load_catalogue
from analyzer.errors import RuleLoadError
from analyzer.parse.annotations import AnnotationSpec
from analyzer.parse.literals import ignores_case, literal_options, required_literals
from analyzer.parse.matcher import signature_matcher
from analyzer.parse.registry import check_parsers
from analyzer.rules import builtin_rules_dir
from analyzer.rules.model import Rule, RuleSet, Signature

BUILTIN_DATA = (
    "kinds.yaml",
    "annotations.yaml",
    "timeline.yaml",
    "decisions.yaml",
    "bot.yaml",
    "redactors.yaml",
)


def _rules_digest(dirs: list[Path]) -> str:
    """Digest of every rule file (path within its directory, bytes): shortened, the
    `rules_version` a diagnosis cites; and the cache key of the folders given with --rules. An
    unreadable file still counts, so that it is reported by the loader instead of being hidden
    by a cached rule set."""
    h = hashlib.sha256()
    for d in dirs:
        for path in sorted(d.rglob("*.yaml")):
            h.update(path.relative_to(d).as_posix().encode())
            try:
                h.update(path.read_bytes())
            except OSError:
                h.update(b"\0unreadable")
    return h.hexdigest()


def _rules_stamp(folder: Path) -> str:
    """The cache key of a checkout's built-in rules, without reading them (hashing their
    megabyte cost a small run ~2 ms): each file's path, size, modification time and mode. They
    change only with an edit, which sets the time; a chmod that makes one unreadable sets the
    mode, and the loader then reports it. Rules given with --rules, which a script may rewrite
    within the clock's resolution, are keyed by their content."""
    h = hashlib.sha256()
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".yaml")):
            try:
                st = os.stat(os.path.join(top, name))
                stat = f"{st.st_size}:{st.st_mtime_ns}:{st.st_mode}"
            except OSError:
                stat = "unreadable"
            h.update(f"{top}/{name}:{stat}\n".encode())
    return h.hexdigest()


def _install_digest(builtin: Path) -> str:
    """What identifies the code that shapes the cached objects, and the built-in rules. An
    installed wheel: its RECORD, which holds the digest of every file it installed (its rules,
    analyzer/_rules, too), so a reinstall of the same wheel keeps the cache. A checkout or an
    editable install: every module's size and time (hashing their content would cost a small
    run more than the cache saves), which change with any edit, and the rules' stamp."""
    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for record in package.parent.glob("hami_bundle_analyzer-*.dist-info/RECORD"):
        with contextlib.suppress(OSError):
            text = record.read_bytes()
            if b"analyzer/rules/loader.py," in text:
                h.update(text)
                if builtin != package / "_rules":  # not the wheel's own rules
                    h.update(_rules_stamp(builtin).encode())
                return h.hexdigest()
    for top, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            st = os.stat(os.path.join(top, name))
            h.update(f"{top}/{name}:{st.st_mtime_ns}:{st.st_size}".encode())
    h.update(_rules_stamp(builtin).encode())
    return h.hexdigest()


def _cache_path(dirs: list[Path]) -> Path | None:
    """Validated rule sets are cached by the analyzer's version, code and built-in rules (a
    wheel's RECORD or a checkout's stamps), the digest of the rules given with --rules and the
    rule folders (their paths are in the cached rules, and in what `rules show` prints), so
    start-up does not re-validate unchanged rules. Any change makes a new key."""
    where = cache_dir()
    if where is None:
        return None
    try:
        code = _install_digest(dirs[0])
    except OSError:
        return None
    # compiled patterns are pickled as regex's compiled code, which only its own version reads
    rules = _rules_digest(dirs[1:])
    key = f"{__version__}:{code}:{regex.__version__}:{rules}:{[str(d) for d in dirs]}"
    return where / f"rules-{hashlib.sha256(key.encode()).hexdigest()[:24]}.pickle"


def load_ruleset(extra_dirs: list[Path] | None = None, use_cache: bool = True) -> RuleSet:
    """Built-in rules, then each extra dir; a later rule with the same id replaces an earlier."""
    dirs = [builtin_rules_dir(), *(extra_dirs or [])]
    cache = _cache_path(dirs) if use_cache else None
    if cache is not None and cache.is_file():
        try:
            with cache.open("rb") as fh:
                ruleset = _unpickle(fh)
            touched(cache)
            return ruleset
        except Exception:  # a corrupt cache is ignored and rebuilt
            pass
    with codecache.unrecorded():  # what it compiles is kept in the cached rule set
        ruleset = _load_ruleset(dirs, _rules_digest(dirs)[:12])
    if cache is not None:
        try:
            with atomic_path(cache) as tmp, tmp.open("wb") as fh:
                packed.dump(ruleset, fh)
            prune(cache.parent, "rules-*.pickle", CACHED_RULE_SETS)
        except OSError:
            pass
    return ruleset


def _unpickle(fh) -> RuleSet:
    """The cached rule set. Unpickling makes tens of thousands of objects and no garbage: the
    cyclic collector stays off meanwhile (its passes over them, one of them over every module
    loaded so far, cost a small run ~30 ms)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.load(fh)
    finally:
        if enabled:
            gc.enable()


# kept in the cache folder: each edit of a checkout writes a new one (another checkout or
# version whose set goes only validates its rules again once)
CACHED_RULE_SETS = 16


def _read_docs(dirs: list[Path], problems: list[str]):
    sig_docs: list[tuple[str, dict]] = []
    rule_docs: list[tuple[str, dict, bool]] = []
    files: list[str] = []
    for d in dirs:
        if not d.is_dir():
            problems.append(f"{d}: rules directory not found")
            continue
        custom = d != dirs[0]
        for path in sorted(d.rglob("*.yaml")):
            if path.name in BUILTIN_DATA and not custom:
                continue
            files.append(str(path))
            doc = read_yaml(path, problems)
            if doc is None:
                continue
            if not isinstance(doc, dict):
                problems.append(f"{path}:1: expected a mapping with 'signatures:' and/or 'rules:'")
                continue
            for key in doc:
                if key not in ("signatures", "rules", LINE_KEY):
                    problems.append(f"{path}:{doc[LINE_KEY]}: unknown top-level key {key!r}")
            for s in doc.get("signatures") or []:
                sig_docs.append((str(path), s))
            for r in doc.get("rules") or []:
                rule_docs.append((str(path), r, custom))
    return sig_docs, rule_docs, files


def _load_ruleset(dirs: list[Path], version: str) -> RuleSet:
    from analyzer.rules.lint import lint
    from analyzer.rules.schema import rust_takes_all

    problems: list[str] = []
    catalogue = load_catalogue(dirs[0] / "kinds.yaml")
    check_parsers(catalogue)
    recognition = compile_recognition(catalogue)  # its entries' problems, with file:line
    catalogue = replace(catalogue, literals=_literals_of(gating_patterns(recognition)))
    annotation_doc = check_annotations(dirs[0] / "annotations.yaml", problems)
    sig_docs, rule_docs, files = _read_docs(dirs, problems)
    rust_takes_all(_signature_patterns(sig_docs, catalogue))
    signatures: dict[str, Signature] = {}
    for path, s in sig_docs:
        sig = _load_signature(path, s, catalogue, problems)
        if sig is None:
            continue
        if sig.id in signatures and signatures[sig.id].file == path:
            problems.append(f"{path}:{sig.line}: duplicate signature id {sig.id!r}")
        signatures[sig.id] = sig
    rules: dict[str, Rule] = {}
    for path, r, custom in rule_docs:
        rule = _load_rule(path, r, signatures, problems)
        if rule is None:
            continue
        if rule.id in rules and not (custom and rules[rule.id].file != path):
            problems.append(f"{path}:{rule.line}: duplicate rule id {rule.id!r}")
        rules[rule.id] = rule
    if problems:
        raise RuleLoadError(problems)
    episodes = load_episodes(dirs[0] / "timeline.yaml", signatures, catalogue, problems)
    decisions = load_decisions(dirs[0] / "decisions.yaml", signatures, problems)
    if problems or annotation_doc is None:
        raise RuleLoadError(problems)
    annotations = AnnotationSpec.from_doc(annotation_doc)
    ruleset = RuleSet(
        catalogue, signatures, rules, annotations, files, episodes, decisions, version
    )
    errors, warnings = lint(ruleset)
    if errors:
        raise RuleLoadError(errors)
    ruleset.warnings = warnings
    ruleset.matcher = signature_matcher(signatures)
    return ruleset


def _signature_patterns(sig_docs: list[tuple[str, Any]], catalogue) -> list[str]:
    """The signatures' regexes as their reader expands them (those it cannot are left to it)."""
    out = []
    for _path, s in sig_docs:
        raw = s.get("regex") if isinstance(s, dict) else None
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                out.append(catalogue.hami.expand(raw))
    return out


def _literals_of(patterns: list[str]) -> dict[str, tuple[str, ...]]:
    """Recognition's patterns' required literals, for `Catalogue.literals` (recognition's
    layer is below the literals' parser): those found as written, not ignoring case."""
    out = {}
    for pattern in patterns:
        literals = None if ignores_case(pattern) else required_literals(pattern)
        if literals:
            out[pattern] = tuple(literals)
    return out


def _load_signature(path: str, s: Any, catalogue, problems: list[str]) -> Signature | None:
    from analyzer.rules.schema import SIGNATURE_FIELDS  # validation: a cached set needs none

    if not isinstance(s, dict):
        problems.append(f"{path}: signature entry is not a mapping")
        return None
    line, sid = s.get(LINE_KEY, 0), s.get("id")
    ctx = Context(f"{path}:{line}", problems, path, line, catalogue=catalogue)
    ctx.ident, ctx.name = f"signature {sid}", str(sid)
    values = read_fields(s, SIGNATURE_FIELDS, ctx, f"signature {sid!r}")
    compiled = values.pop("compiled")
    if not values["id"] or compiled is None:
        return None
    matches, no_matches = values.pop("examples")
    named = values.pop("prefilter")
    choices = None if named else literal_options(compiled.pattern)
    sig = Signature(
        **values,
        pattern=compiled.pattern,
        file=path,
        line=line,
        examples_match=matches,
        examples_no_match=no_matches,
        prefilter=named or tuple(required_literals(compiled.pattern) or ()),
        literal_choices=None
        if choices is None
        else tuple(tuple(tuple(lits) for lits in option) for option in choices),
    )
    sig.__dict__["compiled"] = compiled  # already compiled for validation: seed the cache
    return sig


def _load_rule(path: str, r: Any, sigs: dict, problems: list[str]) -> Rule | None:
    from analyzer.rules.schema import RULE_FIELDS

    if not isinstance(r, dict):
        problems.append(f"{path}: rule entry is not a mapping")
        return None
    line, rid = r.get(LINE_KEY, 0), r.get("id")
    ctx = Context(f"{path}:{line}", problems, path, line, signatures=sigs)
    ctx.ident, ctx.name = f"rule {rid}", str(rid)
    values = read_fields(r, RULE_FIELDS, ctx, f"rule {rid!r}")
    needed = [k for k, f in RULE_FIELDS.items() if f.required == "load"]
    if values["id"] is None or values["when"] is None or any(k not in r for k in needed):
        return None
    return Rule(**values, file=path, line=line)
