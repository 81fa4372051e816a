"""Load and validate sources, signatures and rules; every problem names the file and line."""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path
from typing import Any

import polars as pl
import regex
import yaml
from jinja2 import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

from analyzer import __version__
from analyzer.cache import cache_dir
from analyzer.errors import RuleLoadError
from analyzer.fact_paths import known_path
from analyzer.parse.annotations import AnnotationSpec
from analyzer.parse.literals import required_literals
from analyzer.rules import builtin_rules_dir
from analyzer.rules.model import CATEGORIES, KINDS, LINKS, SEVERITIES, Rule, RuleSet, Signature
from analyzer.rules.sources import load_sources
from analyzer.versions import Range

LINE_KEY = "__line__"
SIGNATURE_KEYS = {
    "id",
    "source",
    "level",
    "verbosity",
    "regex",
    "meaning",
    "versions",
    "implies_version",
    "examples",
    "node_capture",
    "references",
    "status",
    "prefilter",
    "version_capture",
    "component",
}
RULE_KEYS = {
    "id",
    "title",
    "summary",
    "severity",
    "kind",
    "category",
    "link",
    "case",
    "requires",
    "versions",
    "when",
    "explanation",
    "remediation",
    "references",
    "priority",
    "tests",
    "disabled",
    "component_versions",
}
COMPARATORS = {
    "eq",
    "ne",
    "gt",
    "ge",
    "lt",
    "le",
    "in",
    "not_in",
    "matches",
    "contains",
    "not_contains",
    "exists",
}
SIG_KEYS = {"signature", "where", "count_ge", "count_le", "same_node"}
TEMPLATE_ENV = SandboxedEnvironment(autoescape=False, keep_trailing_newline=False)


class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # C parser: 9x faster
    """SafeLoader that records the line of every mapping under LINE_KEY."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        mapping = super().construct_mapping(node, deep=deep)
        mapping[LINE_KEY] = node.start_mark.line + 1
        return mapping


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != LINE_KEY}
    if isinstance(obj, list):
        return [_strip(x) for x in obj]
    return obj


def _rust_ok(pattern: str) -> str | None:
    try:
        pl.Series([""]).str.contains(pattern)
    except Exception as exc:  # polars raises ComputeError with the Rust message
        return str(exc).splitlines()[0]
    return None


def _rules_digest(dirs: list[Path]) -> str:
    """Digest of every rule file (path within its directory, bytes): the cache key's core and,
    shortened, the `rules_version` a diagnosis cites. An unreadable file still counts, so that it
    is reported by the loader instead of being hidden by a cached rule set."""
    h = hashlib.sha256()
    for d in dirs:
        for path in sorted(d.rglob("*.yaml")):
            h.update(path.relative_to(d).as_posix().encode())
            try:
                h.update(path.read_bytes())
            except OSError:
                h.update(b"\0unreadable")
    return h.hexdigest()


def _cache_path(dirs: list[Path], digest: str) -> Path | None:
    """Validated rule sets are cached by the rules' digest and our code, so start-up does not
    re-validate unchanged rules. Any change makes a new key."""
    where = cache_dir()
    if where is None:
        return None
    h = hashlib.sha256(f"{__version__}:{digest}:{[str(d) for d in dirs]}".encode())
    code = Path(__file__).resolve().parent.parent
    try:
        for py in sorted(code.rglob("*.py")):  # the loader's own code shapes the cached objects
            st = py.stat()
            h.update(f"{py}:{st.st_mtime_ns}:{st.st_size}".encode())
    except OSError:
        return None
    return where / f"rules-{h.hexdigest()[:24]}.pickle"


def load_ruleset(extra_dirs: list[Path] | None = None, use_cache: bool = True) -> RuleSet:
    """Built-in rules, then each extra dir; a later rule with the same id replaces an earlier."""
    dirs = [builtin_rules_dir(), *(extra_dirs or [])]
    digest = _rules_digest(dirs)
    cache = _cache_path(dirs, digest) if use_cache else None
    if cache is not None and cache.is_file():
        try:
            with cache.open("rb") as fh:
                return pickle.load(fh)
        except Exception:  # a corrupt cache is ignored and rebuilt
            pass
    ruleset = _load_ruleset(dirs, digest[:12])
    if cache is not None:
        try:
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            with tmp.open("wb") as fh:
                pickle.dump(ruleset, fh, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.replace(cache)
        except OSError:
            pass
    return ruleset


def _load_ruleset(dirs: list[Path], version: str) -> RuleSet:
    problems: list[str] = []
    sources = load_sources(dirs[0] / "sources.yaml")
    annotations = AnnotationSpec.load(dirs[0] / "annotations.yaml")
    sig_docs: list[tuple[str, dict]] = []
    rule_docs: list[tuple[str, dict, bool]] = []
    files: list[str] = []
    for d in dirs:
        if not d.is_dir():
            problems.append(f"{d}: rules directory not found")
            continue
        custom = d != dirs[0]
        for path in sorted(d.rglob("*.yaml")):
            if (
                path.name in ("sources.yaml", "annotations.yaml", "timeline.yaml", "decisions.yaml")
                and not custom
            ):
                continue
            files.append(str(path))
            try:
                doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)
            except yaml.MarkedYAMLError as exc:
                line = exc.problem_mark.line + 1 if exc.problem_mark else 0
                problems.append(f"{path}:{line}: YAML error: {exc.problem}")
                continue
            except (OSError, yaml.YAMLError) as exc:
                problems.append(f"{path}: {str(exc).splitlines()[0]}")
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
    signatures: dict[str, Signature] = {}
    for path, s in sig_docs:
        sig = _load_signature(path, s, sources, problems)
        if sig is None:
            continue
        if sig.id in signatures and signatures[sig.id].file == path:
            problems.append(f"{path}:{sig.line}: duplicate signature id {sig.id!r}")
        signatures[sig.id] = sig
    rules: dict[str, Rule] = {}
    for path, r, custom in rule_docs:
        rule = _load_rule(path, r, sources, signatures, problems)
        if rule is None:
            continue
        if rule.id in rules and not (custom and rules[rule.id].file != path):
            problems.append(f"{path}:{rule.line}: duplicate rule id {rule.id!r}")
        rules[rule.id] = rule
    if problems:
        raise RuleLoadError(problems)
    episodes = yaml.safe_load((dirs[0] / "timeline.yaml").read_text(encoding="utf-8"))["episodes"]
    decisions = yaml.safe_load((dirs[0] / "decisions.yaml").read_text(encoding="utf-8"))[
        "decisions"
    ]
    for d in decisions:
        sig = signatures.get(d.get("signature"))
        if sig is None:
            problems.append(
                f"{dirs[0] / 'decisions.yaml'}: unknown signature id {d.get('signature')!r}"
            )
            continue
        for cap in d.get("pod", []) + d.get("node", []) + d.get("reason", []):
            if cap not in sig.compiled.groupindex:
                problems.append(
                    f"{dirs[0] / 'decisions.yaml'}: signature {sig.id} has no capture {cap!r}"
                )
    for sid in _episode_signatures(episodes):
        if sid not in signatures:
            problems.append(f"{dirs[0] / 'timeline.yaml'}: unknown signature id {sid!r}")
    if problems:
        raise RuleLoadError(problems)
    return RuleSet(sources, signatures, rules, annotations, files, episodes, decisions, version)


def _episode_signatures(ep: dict) -> list[str]:
    healthy = [h["signature"] if isinstance(h, dict) else h for h in ep.get("healthy", [])]
    out = list(ep.get("starts", {}).values()) + healthy
    out += [ep[k] for k in ("annotation_update", "leader") if ep.get(k)]
    return out


def _load_signature(path: str, s: Any, sources: dict, problems: list[str]) -> Signature | None:
    if not isinstance(s, dict):
        problems.append(f"{path}: signature entry is not a mapping")
        return None
    line = s.get(LINE_KEY, 0)
    where = f"{path}:{line}"
    for key in s:
        if key not in SIGNATURE_KEYS and key != LINE_KEY:
            problems.append(f"{where}: signature {s.get('id')!r}: unknown key {key!r}")
    sid = s.get("id")
    pattern = s.get("regex")
    if not sid or not pattern:
        problems.append(f"{where}: signature needs 'id' and 'regex'")
        return None
    srcs = s.get("source") or []
    srcs = [srcs] if isinstance(srcs, str) else list(srcs)
    for src in srcs:
        if src not in sources and src not in ("text", "pod-describe", "klog"):
            problems.append(f"{where}: signature {sid}: unknown source {src!r}")
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        problems.append(f"{where}: signature {sid}: bad regex: {exc}")
        return None
    rust = _rust_ok(pattern)
    if rust:
        problems.append(
            f"{where}: signature {sid}: regex not supported by the linear-time scanner: {rust}"
        )
        return None
    try:
        versions = Range.parse(s.get("versions", ""))
    except ValueError as exc:
        problems.append(f"{where}: signature {sid}: {exc}")
        versions = Range()
    ex = s.get("examples") or {}
    node_capture = s.get("node_capture")
    version_capture = s.get("version_capture")
    if version_capture and version_capture not in compiled.groupindex:
        problems.append(
            f"{where}: signature {sid}: version_capture {version_capture!r} is not a named group"
        )
    if node_capture and node_capture not in compiled.groupindex:
        problems.append(
            f"{where}: signature {sid}: node_capture {node_capture!r} is not a named group"
        )
    return Signature(
        id=sid,
        sources=tuple(srcs) or ("text",),
        pattern=pattern,
        compiled=compiled,
        level=str(s.get("level", "I")),
        verbosity=int(s.get("verbosity", 0)),
        meaning=str(s.get("meaning", "")).strip(),
        versions=versions,
        implies_version=bool(s.get("implies_version", False)),
        file=path,
        line=line,
        examples_match=tuple(ex.get("match") or []),
        examples_no_match=tuple(ex.get("no_match") or []),
        node_capture=node_capture,
        version_capture=version_capture,
        component=str(s.get("component", "hami")),
        prefilter=tuple(_prefilter(s, compiled, where, sid, problems)),
    )


def _prefilter(
    s: dict, compiled: regex.Pattern, where: str, sid: str, problems: list[str]
) -> list[str]:
    """Literals one of which every match contains; checked against the signature's examples."""
    lits = s.get("prefilter") or []
    if isinstance(lits, str):
        lits = [lits]
    if not lits:  # derived once here; the scanner falls back to the regex when there is none
        return required_literals(s["regex"]) or []
    for ex in (s.get("examples") or {}).get("match") or []:
        if lits and not any(lit in ex for lit in lits):
            problems.append(
                f"{where}: signature {sid}: example {ex[:50]!r}... contains no prefilter literal"
            )
    return [str(x) for x in lits]


def _check_template(where: str, rid: str, text: str, problems: list[str]) -> None:
    try:
        TEMPLATE_ENV.parse(text)
    except TemplateSyntaxError as exc:
        problems.append(f"{where}: rule {rid}: bad template (line {exc.lineno}): {exc.message}")


def _check_condition(cond: Any, where: str, rid: str, sigs: dict, problems: list[str]) -> None:
    if not isinstance(cond, dict):
        problems.append(f"{where}: rule {rid}: condition must be a mapping, got {cond!r}")
        return
    line = cond.get(LINE_KEY)
    here = f"{where.rsplit(':', 1)[0]}:{line}" if line else where
    keys = {k for k in cond if k != LINE_KEY}
    if keys & {"all", "any"}:
        for k in keys & {"all", "any"}:
            items = cond[k]
            if not isinstance(items, list) or not items:
                problems.append(f"{here}: rule {rid}: '{k}' needs a non-empty list")
                continue
            for c in items:
                _check_condition(c, here, rid, sigs, problems)
        extra = keys - {"all", "any"}
        if extra:
            problems.append(f"{here}: rule {rid}: unexpected keys beside all/any: {sorted(extra)}")
        return
    if "not" in keys:
        if keys != {"not"}:
            problems.append(f"{here}: rule {rid}: 'not' must stand alone")
        _check_condition(cond["not"], here, rid, sigs, problems)
        return
    if "signature" in keys:
        if cond["signature"] not in sigs:
            problems.append(f"{here}: rule {rid}: unknown signature id {cond['signature']!r}")
        bad = keys - SIG_KEYS
        if bad:
            problems.append(
                f"{here}: rule {rid}: unknown keys in signature condition: {sorted(bad)}"
            )
        where_caps = cond.get("where") or {}
        sig = sigs.get(cond["signature"])
        if sig is not None:
            for cap, pat in where_caps.items():
                if cap == LINE_KEY:
                    continue
                if cap not in sig.compiled.groupindex:
                    problems.append(
                        f"{here}: rule {rid}: signature {sig.id} has no capture {cap!r}"
                    )
                try:
                    regex.compile(str(pat))
                except regex.error as exc:
                    problems.append(f"{here}: rule {rid}: bad regex in where.{cap}: {exc}")
        return
    path_key = "fact" if "fact" in keys else "age_of" if "age_of" in keys else None
    if path_key is None:
        problems.append(
            f"{here}: rule {rid}: condition needs one of all/any/not/fact/signature/age_of"
        )
        return
    if not known_path(str(cond[path_key])):
        problems.append(f"{here}: rule {rid}: unknown fact path {cond[path_key]!r}")
    ops = keys - {path_key}
    bad = ops - COMPARATORS
    if bad:
        problems.append(f"{here}: rule {rid}: unknown comparison {sorted(bad)}")
    if not ops:
        problems.append(
            f"{here}: rule {rid}: {path_key} condition needs a comparison (eq, gt, exists, ...)"
        )
    for op in ops & COMPARATORS:
        ref = cond[op]
        if isinstance(ref, dict) and "fact" in ref and not known_path(str(ref["fact"])):
            problems.append(f"{here}: rule {rid}: unknown fact path {ref['fact']!r} in {op}")
    if "matches" in ops:
        try:
            regex.compile(str(cond["matches"]))
        except regex.error as exc:
            problems.append(f"{here}: rule {rid}: bad regex in matches: {exc}")


def _load_rule(path: str, r: Any, sources: dict, sigs: dict, problems: list[str]) -> Rule | None:
    if not isinstance(r, dict):
        problems.append(f"{path}: rule entry is not a mapping")
        return None
    line = r.get(LINE_KEY, 0)
    where = f"{path}:{line}"
    rid = r.get("id")
    for key in r:
        if key not in RULE_KEYS and key != LINE_KEY:
            problems.append(f"{where}: rule {rid!r}: unknown key {key!r}")
    for req in ("id", "title", "severity", "kind", "category", "when"):
        if req not in r:
            problems.append(f"{where}: rule {rid!r}: missing {req!r}")
    if not rid or "when" not in r:
        return None
    if not regex.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", str(rid)):
        problems.append(f"{where}: rule id {rid!r} must be lower-case words joined by '-'")
    checks = (
        ("severity", SEVERITIES),
        ("kind", KINDS),
        ("category", CATEGORIES),
    )
    for key, allowed in checks:
        if key in r and r[key] not in allowed:
            problems.append(
                f"{where}: rule {rid}: {key} {r[key]!r} not one of {', '.join(allowed)}"
            )
    if r.get("link") is not None and r["link"] not in LINKS:
        problems.append(f"{where}: rule {rid}: link {r['link']!r} not one of {', '.join(LINKS)}")
    if r.get("case") is not None and r["case"] not in (1, 2, 3, 4, 5):
        problems.append(f"{where}: rule {rid}: case must be 1-5")
    requires = r.get("requires") or []
    for item in requires:
        for src in item if isinstance(item, list) else [item]:
            if src not in sources:
                problems.append(f"{where}: rule {rid}: requires unknown source {src!r}")
    try:
        versions = Range.parse(r.get("versions", ""))
    except ValueError as exc:
        problems.append(f"{where}: rule {rid}: {exc}")
        versions = Range()
    _check_condition(r["when"], where, rid, sigs, problems)
    remediation = []
    for step in r.get("remediation") or []:
        if isinstance(step, str):
            step = {"text": step}
        if not isinstance(step, dict):
            problems.append(f"{where}: rule {rid}: remediation steps are strings or mappings")
            continue
        remediation.append({k: str(v) for k, v in step.items() if k != LINE_KEY})
    for text in [
        r.get("explanation", ""),
        r.get("title", ""),
        *[v for s in remediation for v in s.values()],
    ]:
        _check_template(where, rid, str(text), problems)
    tests = _strip(r.get("tests") or {})
    return Rule(
        id=rid,
        title=str(r.get("title", "")),
        summary=str(r.get("summary", "")).strip(),
        severity=r.get("severity", "info"),
        kind=r.get("kind", "fault"),
        category=r.get("category", "inconclusive"),
        link=r.get("link"),
        case=r.get("case"),
        requires=list(requires),
        versions=versions,
        when=_strip(r["when"]),
        explanation=str(r.get("explanation", "")).strip(),
        remediation=remediation,
        references=[str(x) for x in r.get("references") or []],
        priority=int(r.get("priority", 50)),
        file=path,
        line=line,
        tests=tests,
        disabled=bool(r.get("disabled", False)),
        component_versions=_component_versions(r, where, problems),
    )


def _component_versions(r: dict, where: str, problems: list[str]) -> dict[str, Range]:
    """Version ranges of other components (toolkit, gpu-operator) a rule applies to."""
    out: dict[str, Range] = {}
    for comp, spec in (r.get("component_versions") or {}).items():
        if comp == LINE_KEY:
            continue
        try:
            out[str(comp)] = Range.parse(spec)
        except ValueError as exc:
            problems.append(f"{where}: rule {r.get('id')}: component_versions.{comp}: {exc}")
    return out
