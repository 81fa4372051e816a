"""Load rules/: the kind catalogue, annotation formats, signatures and rules (conditions parsed
into typed nodes), episodes and decisions. Structural problems name the file and line and stop
the load; the linter's semantic checks (analyzer/rules/lint.py) run on the result."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

import polars as pl
import regex
import yaml
from jinja2 import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment

from analyzer import __version__
from analyzer.atomic import atomic_path
from analyzer.bundle.probes import compile_recognition
from analyzer.cache import cache_dir
from analyzer.errors import RuleLoadError
from analyzer.kinds import load_catalogue
from analyzer.parse.annotations import AnnotationSpec
from analyzer.parse.literals import required_literals
from analyzer.parse.registry import check_parsers
from analyzer.parse.structured import FastLoader, load_yaml
from analyzer.rules import builtin_rules_dir
from analyzer.rules.conditions import LINE_KEY, ParseProblems, parse_condition
from analyzer.rules.model import (
    CATEGORIES,
    CONFIDENCES,
    KINDS,
    LINKS,
    SEVERITIES,
    DecisionSpec,
    EpisodeSpec,
    Rule,
    RuleSet,
    Signature,
    Step,
    Translation,
)
from analyzer.rules.schema import (
    RULE_FIELDS,
    RULE_REQUIRED,
    SIGNATURE_FIELDS,
    SIGNATURE_REQUIRED,
    TRANSLATION_FIELDS,
)
from analyzer.versions import Range

BUILTIN_DATA = (
    "kinds.yaml",
    "annotations.yaml",
    "timeline.yaml",
    "decisions.yaml",
    "bot.yaml",
    "redactors.yaml",
)
TEMPLATE_ENV = SandboxedEnvironment(autoescape=False, keep_trailing_newline=False)


class _LineLoader(FastLoader):
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


def _rust_error(pattern: str) -> str | None:
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
            with atomic_path(cache) as tmp, tmp.open("wb") as fh:
                pickle.dump(ruleset, fh, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:
            pass
    return ruleset


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
            try:
                doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)
            except yaml.MarkedYAMLError as exc:
                line = exc.problem_mark.line + 1 if exc.problem_mark else 0
                problems.append(f"{path}:{line}: YAML error: {exc.problem}")
                continue
            except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
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
    return sig_docs, rule_docs, files


def _load_ruleset(dirs: list[Path], version: str) -> RuleSet:
    from analyzer.rules.lint import lint

    problems: list[str] = []
    catalogue = load_catalogue(dirs[0] / "kinds.yaml")
    check_parsers(catalogue)
    compile_recognition(catalogue)  # its recognition entries' problems, with file:line
    annotations = AnnotationSpec.load(dirs[0] / "annotations.yaml")
    sig_docs, rule_docs, files = _read_docs(dirs, problems)
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
    episodes = _load_episodes(dirs[0] / "timeline.yaml", signatures, problems)
    decisions = _load_decisions(dirs[0] / "decisions.yaml", signatures, problems)
    if problems:
        raise RuleLoadError(problems)
    ruleset = RuleSet(
        catalogue, signatures, rules, annotations, files, episodes, decisions, version
    )
    errors, warnings = lint(ruleset)
    if errors:
        raise RuleLoadError(errors)
    ruleset.warnings = warnings
    return ruleset


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _unknown_keys(doc: dict, allowed: dict, where: str, what: str, problems: list[str]) -> None:
    for key in doc:
        if key not in allowed and key != LINE_KEY:
            problems.append(f"{where}: {what}: unknown key {key!r} (allowed: {', '.join(allowed)})")


def _load_signature(path: str, s: Any, catalogue, problems: list[str]) -> Signature | None:
    if not isinstance(s, dict):
        problems.append(f"{path}: signature entry is not a mapping")
        return None
    line = s.get(LINE_KEY, 0)
    where = f"{path}:{line}"
    sid = s.get("id")
    _unknown_keys(s, SIGNATURE_FIELDS, where, f"signature {sid!r}", problems)
    missing = [k for k in SIGNATURE_REQUIRED if k not in s and k != "examples"]
    if missing:
        problems.append(f"{where}: signature {sid!r} needs {', '.join(missing)}")
    if not sid or "regex" not in s:
        return None
    pattern = str(s["regex"])
    srcs = _as_list(s.get("source")) or ["text"]
    for src in srcs:
        if src not in catalogue:
            problems.append(f"{where}: signature {sid}: unknown source kind {src!r}")
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        problems.append(f"{where}: signature {sid}: bad regex: {exc}")
        return None
    rust = _rust_error(pattern)
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
    for cap_key in ("node_capture", "artefact_node", "version_capture"):
        cap = s.get(cap_key)
        if cap and cap not in compiled.groupindex:
            problems.append(f"{where}: signature {sid}: {cap_key} {cap!r} is not a named group")
    ex = s.get("examples") or {}
    lits = [str(x) for x in _as_list(s.get("prefilter"))]
    for e in ex.get("match") or []:
        if lits and not any(lit in e for lit in lits):
            problems.append(
                f"{where}: signature {sid}: example {e[:50]!r}... contains no prefilter literal"
            )
    sig = Signature(
        id=str(sid),
        sources=tuple(srcs),
        pattern=pattern,
        meaning=" ".join(str(s.get("meaning", "")).split()),
        file=path,
        line=line,
        component=str(s.get("component", "hami")),
        origin=" ".join(str(s.get("origin", "")).split()),
        level=str(s.get("level", "I")),
        verbosity=int(s.get("verbosity", 0)),
        versions=versions,
        implies_version=bool(s.get("implies_version", False)),
        examples_match=tuple(str(x) for x in ex.get("match") or []),
        examples_no_match=tuple(str(x) for x in ex.get("no_match") or []),
        node_capture=s.get("node_capture"),
        artefact_node=s.get("artefact_node"),
        version_capture=s.get("version_capture"),
        version_of=str(s.get("version_of", "hami")),
        prefilter=tuple(lits) or tuple(required_literals(pattern) or ()),
        symptom=bool(s.get("symptom", False)),
        references=tuple(str(x) for x in _as_list(s.get("references"))),
        category=str(s.get("category") or ""),
    )
    sig.__dict__["compiled"] = compiled  # already compiled for validation: seed the cache
    return sig


def _check_template(where: str, rid: str, text: str, problems: list[str]) -> None:
    try:
        TEMPLATE_ENV.parse(text)
    except TemplateSyntaxError as exc:
        problems.append(f"{where}: rule {rid}: bad template (line {exc.lineno}): {exc.message}")


def _load_rule(path: str, r: Any, sigs: dict, problems: list[str]) -> Rule | None:
    if not isinstance(r, dict):
        problems.append(f"{path}: rule entry is not a mapping")
        return None
    line = r.get(LINE_KEY, 0)
    where = f"{path}:{line}"
    rid = r.get("id")
    _unknown_keys(r, RULE_FIELDS, where, f"rule {rid!r}", problems)
    for req in RULE_REQUIRED:
        if req not in r and req != "tests":
            problems.append(f"{where}: rule {rid!r}: missing {req!r}")
    if not rid or "when" not in r:
        return None
    if not regex.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", str(rid)):
        problems.append(f"{where}: rule id {rid!r} must be lower-case words joined by '-'")
    for key, allowed in (
        ("severity", SEVERITIES),
        ("kind", KINDS),
        ("category", CATEGORIES),
        ("confidence", CONFIDENCES),
    ):
        if key in r and r[key] not in allowed:
            problems.append(
                f"{where}: rule {rid}: {key} {r[key]!r} not one of {', '.join(allowed)}"
            )
    if r.get("link") is not None and r["link"] not in LINKS:
        problems.append(f"{where}: rule {rid}: link {r['link']!r} not one of {', '.join(LINKS)}")
    if r.get("case") is not None and r["case"] not in (1, 2, 3, 4, 5):
        problems.append(f"{where}: rule {rid}: case must be 1-5")
    try:
        versions = Range.parse(r.get("versions", ""))
    except ValueError as exc:
        problems.append(f"{where}: rule {rid}: {exc}")
        versions = Range()
    cond_problems = ParseProblems(path, str(rid))
    when = parse_condition(r["when"], line, cond_problems, sigs)
    unless = parse_condition(r["unless"], line, cond_problems, sigs) if "unless" in r else None
    problems.extend(cond_problems.items)
    remediation = []
    for step in r.get("remediation") or []:
        if isinstance(step, str):
            step = {"text": step}
        if not isinstance(step, dict):
            problems.append(f"{where}: rule {rid}: remediation steps are strings or mappings")
            continue
        remediation.append(Step(str(step.get("text", "")), step.get("command")))
    zh = _translation(r.get("zh"), len(remediation), f"{where}: rule {rid}: zh", problems)
    for text in [
        r.get("explanation", ""),
        r.get("title", ""),
        *[s.text for s in remediation],
        *[s.command for s in remediation if s.command],
        *([zh.title, zh.explanation, *zh.remediation] if zh else []),
    ]:
        _check_template(where, rid, str(text), problems)
    if when is None or missing_required(r):
        return None
    return Rule(
        id=str(rid),
        title=str(r.get("title", "")),
        severity=r.get("severity", "info"),
        kind=r.get("kind", "fault"),
        category=r.get("category", "inconclusive"),
        when=when,
        file=path,
        line=line,
        link=r.get("link"),
        case=r.get("case"),
        priority=int(r.get("priority", 50)),
        confidence=r.get("confidence", "high"),
        summary=" ".join(str(r.get("summary", "")).split()),
        versions=versions,
        component_versions=_component_versions(r, where, problems),
        unless=unless,
        explains=tuple(str(x) for x in _as_list(r.get("explains"))),
        collect=tuple(str(x) for x in _as_list(r.get("collect"))),
        explanation=str(r.get("explanation", "")).strip(),
        remediation=tuple(remediation),
        references=tuple(str(x) for x in _as_list(r.get("references"))),
        tests=_strip(r.get("tests") or {}),
        disabled=bool(r.get("disabled", False)),
        zh=zh,
    )


def _translation(doc: Any, steps: int, where: str, problems: list[str]) -> Translation | None:
    """A translation is complete or absent: a title, an explanation and one text per English
    remediation step (a half-translated finding would mix languages mid-sentence)."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        problems.append(f"{where}: expected a mapping with title, explanation, remediation")
        return None
    _unknown_keys(doc, TRANSLATION_FIELDS, where, "translation", problems)
    texts = [str(x) for x in _as_list(doc.get("remediation"))]
    missing = [k for k in ("title", "explanation") if not str(doc.get(k) or "").strip()]
    if missing:
        problems.append(f"{where}: missing {', '.join(missing)}")
    if len(texts) != steps:
        problems.append(f"{where}: {len(texts)} remediation text(s) for {steps} English step(s)")
    if missing or len(texts) != steps:
        return None
    return Translation(str(doc["title"]), str(doc["explanation"]).strip(), tuple(texts))


def missing_required(r: dict) -> bool:
    return any(k not in r for k in RULE_REQUIRED if k != "tests")


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


def _load_episodes(path: Path, sigs: dict, problems: list[str]) -> EpisodeSpec:
    ep = (load_yaml(path.read_text(encoding="utf-8")) or {}).get("episodes") or {}
    healthy = []
    for h in ep.get("healthy", []):
        sid, where = (h["signature"], h.get("where") or {}) if isinstance(h, dict) else (h, {})
        healthy.append((sid, tuple((str(c), str(p)) for c, p in where.items())))
    loop = ep.get("restart_loop") or {}
    spec = EpisodeSpec(
        starts=dict(ep.get("starts") or {}),
        healthy=tuple(healthy),
        annotation_update=ep.get("annotation_update"),
        leader=ep.get("leader"),
        restart_count=int(loop.get("count", 3)),
        restart_within=float(loop.get("within_seconds", 900)),
        gap_seconds={k: float(v) for k, v in (ep.get("gap_seconds") or {}).items()},
    )
    used = [*spec.starts.values(), *(h[0] for h in spec.healthy)]
    used += [x for x in (spec.annotation_update, spec.leader) if x]
    for sid in used:
        if sid not in sigs:
            problems.append(f"{path}: unknown signature id {sid!r}")
    return spec


def _load_decisions(path: Path, sigs: dict, problems: list[str]) -> tuple[DecisionSpec, ...]:
    out = []
    for d in (load_yaml(path.read_text(encoding="utf-8")) or {}).get("decisions") or []:
        sig = sigs.get(d.get("signature"))
        if sig is None:
            problems.append(f"{path}: unknown signature id {d.get('signature')!r}")
            continue
        spec = DecisionSpec(
            sig.id,
            bool(d.get("fit")),
            tuple(d.get("pod", [])),
            tuple(d.get("node", [])),
            tuple(d.get("reason", [])),
        )
        for cap in spec.pod + spec.node + spec.reason:
            if cap not in sig.compiled.groupindex:
                problems.append(f"{path}: signature {sig.id} has no capture {cap!r}")
        out.append(spec)
    return tuple(out)
