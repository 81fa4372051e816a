"""The rule-file format, declared once: the fields a signature and a rule accept, each with its
schema, default and reader (analyzer/catalogue/fields.py); the loader builds Signature and Rule from
these tables, and the JSON Schema generated from them is shipped as
analyzer/schema/rules.schema.json for editors and CI (`hami-analyzer rules schema` prints it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import regex

from analyzer.catalogue.fields import (
    Context,
    Field,
    as_list,
    boolean,
    check_template,
    identifier,
    integer,
    one_line,
    one_of,
    read_fields,
    schema_of,
    strings,
    strip_lines,
    template,
    text,
    version_ranges,
    versions,
)
from analyzer.parse.literals import ignores_case
from analyzer.rules.conditions import ParseProblems, condition_schema, parse_condition
from analyzer.rules.model import (
    CATEGORIES,
    CONFIDENCES,
    KINDS,
    LINKS,
    SEVERITIES,
    Step,
    Translation,
)
from analyzer.versions import Range

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "rules.schema.json"

_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
_STR_OR_STRS = {"oneOf": [_STR, _STRS]}
_VERSIONS = {"type": "string", "description": "comma-separated constraints, e.g. '>=2.8.0,<2.10.0'"}


# ---- readers of the fields that need more than a type ----------------------------------------
_RUST_TAKES: set[str] = set()  # patterns Rust's engine compiled in `rust_takes_all`


def rust_takes_all(patterns: list[str]) -> None:
    """Ask Rust's engine for many patterns in one polars call, before each is read: a call per
    pattern costs ~0.3 ms, ~90 ms for the catalogue's signatures when the rules are validated.
    When it takes them all, `_rust_error` does not ask again; when one fails, each is asked on
    its own, for its own message."""
    import polars as pl

    try:
        pl.DataFrame({"t": [""]}).select(
            pl.col("t").str.contains(p).alias(str(i)) for i, p in enumerate(patterns)
        )
    except Exception:  # polars raises ComputeError with the Rust message
        return
    _RUST_TAKES.update(patterns)


def _rust_error(pattern: str) -> str | None:
    import polars as pl

    if pattern in _RUST_TAKES:
        return None
    try:
        pl.Series([""]).str.contains(pattern)
    except Exception as exc:  # polars raises ComputeError with the Rust message
        return str(exc).splitlines()[0]
    return None


def _scanner_pattern(value: Any, ctx: Context) -> regex.Pattern:
    """A regex both engines take: Python's for captures, Rust's for the linear-time scan; a
    `{hami:WORKLOAD}` in it is the catalogue's name of HAMi's workload (kinds.yaml `hami:`)."""
    text = ctx.catalogue.hami.expand(str(value)) if ctx.catalogue is not None else str(value)
    try:
        compiled = regex.compile(text)
    except regex.error as exc:
        raise ValueError(f"bad regex: {exc}") from None
    rust = _rust_error(text)
    if rust:
        raise ValueError(f"regex not supported by the linear-time scanner: {rust}")
    return compiled


def _symptom(value: Any, ctx: Context) -> bool:
    """A symptom is a reporter's words: without `scanned_in` it would be searched in every log
    line, where a component's own output can read like prose (a pods table's CrashLoopBackOff)."""
    if value and not ctx.values.get("scanned_in"):
        ctx.problem("a symptom needs scanned_in (the prose kinds: issue-text, text)")
    return bool(value)


def _sources(value: Any, ctx: Context) -> tuple[str, ...]:
    kinds = tuple(as_list(value)) or ("text",)
    for kind in kinds:
        if kind not in ctx.catalogue:
            ctx.problem(f"unknown source kind {kind!r}")
    return kinds


def _scanned_in(value: Any, ctx: Context) -> tuple[str, ...]:
    """Kinds whose lines are searched for the signature (none: every scanned kind). Each is a
    scanned kind, and the kinds where the line is expected are among them (its absence is judged
    there)."""
    kinds = tuple(str(x) for x in as_list(value))
    for kind in kinds:
        if kind not in ctx.catalogue:
            ctx.problem(f"unknown scanned_in kind {kind!r}")
        elif not ctx.catalogue[kind].scanned:
            ctx.problem(f"scanned_in kind {kind!r} is not scanned (kinds.yaml)")
    unsearched = [k for k in ctx.values.get("sources") or () if kinds and k not in kinds]
    if unsearched:
        ctx.problem(f"source {', '.join(unsearched)} is not in scanned_in")
    return kinds


def _capture(value: Any, ctx: Context) -> Any:
    compiled = ctx.values.get("compiled")
    if value and compiled is not None and value not in compiled.groupindex:
        ctx.problem(f"{ctx.key} {value!r} is not a named group")
    return value


def _prefilter(value: Any, ctx: Context) -> tuple[str, ...]:
    return tuple(str(x) for x in as_list(value))


def _examples(value: Any, ctx: Context) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(match, no_match); every match example contains one of the declared prefilter literals."""
    if not isinstance(value, dict):
        raise ValueError(f"examples needs a mapping with match and no_match, got {value!r}")
    match = tuple(str(x) for x in value.get("match") or [])
    lits = ctx.values.get("prefilter") or ()
    compiled = ctx.values.get("compiled")
    # (?i): its literals ignore case too
    fold = str.casefold if compiled is not None and ignores_case(compiled.pattern) else str
    for e in match:
        if lits and not any(fold(lit) in fold(e) for lit in lits):
            ctx.problem(f"example {e[:50]!r}... contains no prefilter literal")
    return match, tuple(str(x) for x in value.get("no_match") or [])


def _condition(value: Any, ctx: Context):
    problems = ParseProblems(ctx.file, ctx.name)
    cond = parse_condition(value, ctx.line, problems, ctx.signatures)
    ctx.problems.extend(problems.items)
    return cond


def _explanation(value: Any, ctx: Context) -> str:
    check_template(str(value), ctx)
    return str(value).strip()


def _steps(value: Any, ctx: Context) -> tuple[Step, ...]:
    steps: list[Step] = []
    for step in value or []:
        if isinstance(step, str):
            step = {"text": step}
        if not isinstance(step, dict):
            ctx.problem("remediation steps are strings or mappings")
            continue
        if not {"text", "command"} & step.keys():  # an unquoted step holding ': '
            ctx.problem(
                f"remediation step {len(steps) + 1} is a mapping without text or command "
                "(quote a step holding ': ')"
            )
            continue
        steps.append(Step(str(step.get("text", "")), step.get("command")))
    for t in [*(s.text for s in steps), *(s.command for s in steps if s.command)]:
        check_template(str(t), ctx)
    return tuple(steps)


def _step_texts(value: Any, ctx: Context) -> tuple[str, ...]:
    """A translation's steps: texts only (an unquoted `: ` makes YAML read a mapping, which
    would print as a Python dict)."""
    items = as_list(value)
    for n, x in enumerate(items, 1):
        if not isinstance(x, str):
            ctx.problem(
                f"translated remediation step {n} is not a string (quote a text holding ': ')"
            )
    texts = tuple(str(x) for x in items if isinstance(x, str))
    for t in texts:
        check_template(t, ctx)
    return texts


def _translation(value: Any, ctx: Context) -> Translation | None:
    """A translation is complete or absent: a title, an explanation and one text per English
    remediation step (a half-translated finding would mix languages mid-sentence)."""
    here = Context(f"{ctx.where}: {ctx.ident}: zh", ctx.problems, ctx.file, ctx.line)
    if not isinstance(value, dict):
        here.problem("expected a mapping with title, explanation, remediation")
        return None
    tr = read_fields(value, TRANSLATION_FIELDS, here, "translation")
    missing = [k for k in ("title", "explanation") if not str(tr[k] or "").strip()]
    if missing:
        here.problem(f"missing {', '.join(missing)}")
    steps = len(ctx.values.get("remediation") or ())
    if len(tr["remediation"]) != steps:
        here.problem(f"{len(tr['remediation'])} remediation text(s) for {steps} English step(s)")
    if missing or len(tr["remediation"]) != steps:
        return None
    return Translation(str(tr["title"]), str(tr["explanation"]).strip(), tr["remediation"])


SIGNATURE_FIELDS: dict[str, Field] = {
    "id": Field(
        {**_STR, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "description": "stable id"},
        identifier,
        required="load",
    ),
    "source": Field(
        {**_STR_OR_STRS, "description": "artefact kinds where the line is expected"},
        _sources,
        ("text",),
        attr="sources",
    ),
    "scanned_in": Field(
        {
            **_STR_OR_STRS,
            "description": "kinds whose lines are searched for it (default: every scanned kind)",
        },
        _scanned_in,
        (),
    ),
    "component": Field(
        {**_STR, "description": "who prints it (hami-device-plugin, containerd, ...)"},
        text,
        "hami",
    ),
    "origin": Field(
        {**_STR, "description": "upstream source location of the wording"}, one_line, ""
    ),
    "level": Field(
        {"enum": ["I", "W", "E", "F"], "description": "klog severity"},
        one_of(("I", "W", "E", "F")),
        "I",
    ),
    "verbosity": Field(
        {"type": "integer", "minimum": 0, "description": "klog V-level"}, integer, 0
    ),
    "regex": Field(
        {
            **_STR,
            "description": "Python regex and Rust regex compatible; named captures; "
            "{hami:WORKLOAD} is the name of HAMi's workload (kinds.yaml hami:)",
        },
        _scanner_pattern,
        attr="compiled",
        required="load",
    ),
    "meaning": Field(
        {**_STR, "description": "what the line tells a support engineer"},
        one_line,
        "",
        required="load",
    ),
    "category": Field(
        {"enum": [*CATEGORIES, "context"], "description": "the diagnosis it points to"},
        one_of((*CATEGORIES, "context")),
        "",
    ),
    "versions": Field(_VERSIONS, versions, Range),
    "implies_version": Field(
        {"type": "boolean", "description": "seeing it narrows the HAMi version"}, boolean, False
    ),
    "node_capture": Field(
        {**_STR, "description": "capture naming the node the line is about"}, _capture
    ),
    "artefact_node": Field(
        {**_STR, "description": "capture naming the node the whole artefact is about"}, _capture
    ),
    "version_capture": Field({**_STR, "description": "capture holding a version"}, _capture),
    "version_of": Field(
        {**_STR, "description": "whose version: hami (default), toolkit, gpu-operator"},
        text,
        "hami",
    ),
    "prefilter": Field(
        {**_STR_OR_STRS, "description": "literals every match contains (fast scan)"},
        _prefilter,
        (),
    ),
    "symptom": Field(
        {"type": "boolean", "description": "words describing a symptom: weak evidence"},
        _symptom,
        False,
    ),
    "references": Field({**_STRS, "description": "issues and documents"}, strings, ()),
    "notes": Field({**_STR, "description": "where the examples come from, doubts"}, attr=None),
    "examples": Field(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"match": _STRS, "no_match": _STRS},
            "required": ["match"],
        },
        _examples,
        ((), ()),
        required="lint",
    ),
}

_CASE = {
    "type": "object",
    "properties": {
        "name": _STR,
        "files": {"type": "object", "additionalProperties": _STR},
        "bundle": _STR,
        "node": _STR,
    },
}
TRANSLATION_FIELDS: dict[str, Field] = {
    "title": Field({**_STR, "description": "jinja2 template"}, template, "", required="lint"),
    "explanation": Field({**_STR, "description": "jinja2 template"}, template, "", required="lint"),
    "remediation": Field(
        {**_STRS, "description": "one text per English step; commands stay"}, _step_texts, ()
    ),
}
RULE_FIELDS: dict[str, Field] = {
    "id": Field(
        {**_STR, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "description": "stable id"},
        identifier,
        required="load",
    ),
    "title": Field({**_STR, "description": "jinja2 template"}, template, "", required="load"),
    "summary": Field(_STR, one_line, ""),
    "severity": Field({"enum": list(SEVERITIES)}, one_of(SEVERITIES), "info", required="load"),
    "kind": Field(
        {"enum": list(KINDS), "description": "fault | normal (looks wrong, is fine) | ok"},
        one_of(KINDS),
        "fault",
        required="load",
    ),
    "category": Field(
        {"enum": list(CATEGORIES)}, one_of(CATEGORIES), "inconclusive", required="load"
    ),
    "link": Field({"enum": list(LINKS)}, one_of(LINKS), nullable=True),
    "case": Field(
        {"enum": [1, 2, 3, 4, 5], "description": "the registration guide's case"},
        one_of((1, 2, 3, 4, 5)),
        nullable=True,
    ),
    "priority": Field(
        {"type": "integer", "description": "breaks ties between faults"}, integer, 50
    ),
    "confidence": Field(
        {"enum": list(CONFIDENCES), "description": "the most this rule can claim"},
        one_of(CONFIDENCES),
        "high",
    ),
    "versions": Field(_VERSIONS, versions, Range),
    "component_versions": Field(
        {"type": "object", "additionalProperties": _VERSIONS}, version_ranges, dict
    ),
    "when": Field({"$ref": "#/$defs/condition"}, _condition, required="load"),
    "unless": Field({"$ref": "#/$defs/condition"}, _condition),
    "explains": Field(
        {**_STRS, "description": "rule ids whose findings are consequences of this one"},
        strings,
        (),
    ),
    "collect": Field(
        {**_STRS, "description": "kind ids that would confirm or overturn this verdict"},
        strings,
        (),
    ),
    "explanation": Field({**_STR, "description": "jinja2 template"}, _explanation, ""),
    "remediation": Field(
        {
            "type": "array",
            "items": {
                "oneOf": [
                    _STR,
                    {
                        "type": "object",
                        "required": ["text"],
                        "additionalProperties": False,
                        "properties": {"text": _STR, "command": _STR},
                    },
                ]
            },
        },
        _steps,
        (),
    ),
    "references": Field(_STRS, strings, ()),
    "tests": Field(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "fires": {"type": "array", "items": _CASE},
                "silent": {"type": "array", "items": _CASE},
            },
            "required": ["fires"],
        },
        lambda v, ctx: strip_lines(v or {}),
        dict,
        required="lint",
    ),
    "disabled": Field({"type": "boolean"}, boolean, False),
    "zh": Field(
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["title", "explanation"],
            "properties": {k: f.schema for k, f in TRANSLATION_FIELDS.items()},
            "description": "Chinese title, explanation and remediation texts (same templates)",
        },
        _translation,
    ),
}


def rules_schema() -> dict[str, Any]:
    sig, rule = schema_of(SIGNATURE_FIELDS), schema_of(RULE_FIELDS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/hami-bundle-analyzer/rules.schema.json",
        "title": "hami-bundle-analyzer rule file",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "signatures": {"type": "array", "items": sig},
            "rules": {"type": "array", "items": rule},
        },
        "$defs": {"condition": condition_schema()},
    }


def schema_text() -> str:
    return json.dumps(rules_schema(), indent=2, sort_keys=False) + "\n"
