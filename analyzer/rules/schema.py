"""The rule-file format, declared once: the keys a signature and a rule accept (the loader checks
keys against these tables) and the JSON Schema generated from them, shipped as
analyzer/schema/rules.schema.json for editors and CI (`hami-analyzer rules schema` prints it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analyzer.rules.conditions import COMPARATORS, ORDERING
from analyzer.rules.model import CATEGORIES, CONFIDENCES, KINDS, LINKS, SEVERITIES

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "rules.schema.json"

_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
_STR_OR_STRS = {"oneOf": [_STR, _STRS]}
_VERSIONS = {"type": "string", "description": "comma-separated constraints, e.g. '>=2.8.0,<2.10.0'"}

SIGNATURE_FIELDS: dict[str, dict[str, Any]] = {
    "id": {**_STR, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "description": "stable id"},
    "source": {**_STR_OR_STRS, "description": "artefact kinds where the line is expected"},
    "component": {**_STR, "description": "who prints it (hami-device-plugin, containerd, ...)"},
    "origin": {**_STR, "description": "upstream source location of the wording"},
    "level": {"enum": ["I", "W", "E", "F"], "description": "klog severity"},
    "verbosity": {"type": "integer", "minimum": 0, "description": "klog V-level"},
    "regex": {**_STR, "description": "Python regex and Rust regex compatible; named captures"},
    "meaning": {**_STR, "description": "what the line tells a support engineer"},
    "category": {"enum": [*CATEGORIES, "context"], "description": "the diagnosis it points to"},
    "versions": _VERSIONS,
    "implies_version": {"type": "boolean", "description": "seeing it narrows the HAMi version"},
    "node_capture": {**_STR, "description": "capture naming the node the line is about"},
    "artefact_node": {**_STR, "description": "capture naming the node the whole artefact is about"},
    "version_capture": {**_STR, "description": "capture holding a version"},
    "version_of": {**_STR, "description": "whose version: hami (default), toolkit, gpu-operator"},
    "prefilter": {**_STR_OR_STRS, "description": "literals every match contains (fast scan)"},
    "symptom": {"type": "boolean", "description": "words describing a symptom: weak evidence"},
    "references": {**_STRS, "description": "issues and documents"},
    "notes": {**_STR, "description": "where the examples come from, doubts"},
    "examples": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"match": _STRS, "no_match": _STRS},
        "required": ["match"],
    },
}
SIGNATURE_REQUIRED = ("id", "regex", "meaning", "examples")


def _condition_schema() -> dict[str, Any]:
    operand = {
        "anyOf": [{}, {"type": "object", "required": ["fact"], "properties": {"fact": _STR}}]
    }
    fact = {
        "type": "object",
        "required": ["fact"],
        "additionalProperties": False,
        "properties": {"fact": _STR, **{op: operand for op in COMPARATORS}},
    }
    age = {
        "type": "object",
        "required": ["age_of"],
        "additionalProperties": False,
        "properties": {"age_of": _STR, **{op: {"type": ["string", "number"]} for op in ORDERING}},
    }
    sig = {
        "type": "object",
        "required": ["signature"],
        "additionalProperties": False,
        "properties": {
            "signature": _STR,
            "where": {"type": "object", "additionalProperties": _STR},
            "count_ge": {"type": "integer", "minimum": 0},
            "count_le": {"type": "integer", "minimum": 0},
            "in": {"type": "array", "items": _STR, "description": "only lines in these kinds"},
            "equal": {
                "type": "array",
                "items": _STR,
                "minItems": 2,
                "description": "captures that must agree",
            },
        },
    }
    ref = {"$ref": "#/$defs/condition"}
    combos = [
        {
            "type": "object",
            "required": [k],
            "additionalProperties": False,
            "properties": {k: {"type": "array", "minItems": 1, "items": ref}},
        }
        for k in ("all", "any")
    ]
    neg = {
        "type": "object",
        "required": ["not"],
        "additionalProperties": False,
        "properties": {"not": ref},
    }
    return {"oneOf": [*combos, neg, sig, fact, age]}


_CASE = {
    "type": "object",
    "properties": {
        "name": _STR,
        "files": {"type": "object", "additionalProperties": _STR},
        "bundle": _STR,
        "node": _STR,
    },
}
TRANSLATION_FIELDS: dict[str, dict[str, Any]] = {
    "title": {**_STR, "description": "jinja2 template"},
    "explanation": {**_STR, "description": "jinja2 template"},
    "remediation": {**_STRS, "description": "one text per English step; commands stay"},
}
RULE_FIELDS: dict[str, dict[str, Any]] = {
    "id": {**_STR, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "description": "stable id"},
    "title": {**_STR, "description": "jinja2 template"},
    "summary": _STR,
    "severity": {"enum": list(SEVERITIES)},
    "kind": {"enum": list(KINDS), "description": "fault | normal (looks wrong, is fine) | ok"},
    "category": {"enum": list(CATEGORIES)},
    "link": {"enum": list(LINKS)},
    "case": {"enum": [1, 2, 3, 4, 5], "description": "the registration guide's case"},
    "priority": {"type": "integer", "description": "breaks ties between faults"},
    "confidence": {"enum": list(CONFIDENCES), "description": "the most this rule can claim"},
    "versions": _VERSIONS,
    "component_versions": {"type": "object", "additionalProperties": _VERSIONS},
    "when": {"$ref": "#/$defs/condition"},
    "unless": {"$ref": "#/$defs/condition"},
    "explains": {**_STRS, "description": "rule ids whose findings are consequences of this one"},
    "collect": {**_STRS, "description": "kind ids that would confirm or overturn this verdict"},
    "explanation": {**_STR, "description": "jinja2 template"},
    "remediation": {
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
    "references": _STRS,
    "tests": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "fires": {"type": "array", "items": _CASE},
            "silent": {"type": "array", "items": _CASE},
        },
        "required": ["fires"],
    },
    "disabled": {"type": "boolean"},
    "zh": {
        "type": "object",
        "additionalProperties": False,
        "required": ["title", "explanation"],
        "properties": TRANSLATION_FIELDS,
        "description": "Chinese title, explanation and remediation texts (same templates)",
    },
}
RULE_REQUIRED = ("id", "title", "severity", "kind", "category", "when", "tests")


def rules_schema() -> dict[str, Any]:
    sig = {
        "type": "object",
        "additionalProperties": False,
        "required": list(SIGNATURE_REQUIRED),
        "properties": SIGNATURE_FIELDS,
    }
    rule = {
        "type": "object",
        "additionalProperties": False,
        "required": list(RULE_REQUIRED),
        "properties": RULE_FIELDS,
    }
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
        "$defs": {"condition": _condition_schema()},
    }


def schema_text() -> str:
    return json.dumps(rules_schema(), indent=2, sort_keys=False) + "\n"
