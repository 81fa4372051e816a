"""Decode HAMi node annotations with the formats declared in rules/annotations.yaml."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from analyzer.parse.times import parse_formatted
from analyzer.structured import load_json, load_yaml
from analyzer.versions import Range

MAX_DEVICES = 4096


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as the register annotation describes it (also a row of the report's GPU table)."""

    id: str
    index: int
    count: int
    devmem: int
    devcore: int
    type: str
    numa: int
    mode: str
    health: bool | None  # None: the format has no health field, or one that says nothing
    absent: list[str] = field(default_factory=list)  # fields the annotation omitted


@dataclass
class RegisterAnnotation:
    """A node's device-register annotation, decoded with its declared format."""

    key: str
    vendor: str
    status: str  # ok | empty | invalid | elided
    format: str | None
    devices: list[GpuDevice]
    text: str
    error: str | None = None
    versions: Range | None = None
    version_reasons: list[tuple[Range, str]] = field(default_factory=list)


@dataclass
class Handshake:
    """A node's handshake annotation: the device plugin's state and when it was set."""

    key: str
    vendor: str
    state: str  # Requesting | Reported | Deleted | other
    time: dt.datetime | None
    text: str
    versions: Range | None = None


@dataclass
class AnnotationSpec:
    """The annotation formats of rules/annotations.yaml, compiled once."""

    register_key: regex.Pattern
    formats: list[dict]
    hints: list[dict]
    handshake_key: regex.Pattern
    default_vendor: str
    states: list[dict]

    @classmethod
    def load(cls, path: Path) -> AnnotationSpec:
        return cls.from_doc(load_yaml(path.read_text(encoding="utf-8")))

    @classmethod
    def from_doc(cls, doc: dict) -> AnnotationSpec:
        """From annotations.yaml as validated by the rule loader (analyzer/catalogue/datafiles.py)."""
        reg, hs = doc["register"], doc["handshake"]
        for f in reg["formats"]:
            if "detect" in f:
                f["_detect"] = regex.compile(f["detect"])
            f["_versions"] = Range.parse(f.get("versions", ""))
        for s in hs["states"]:
            s["_re"] = regex.compile(s["pattern"])
            s["_versions"] = Range.parse(s.get("versions", ""))
        return cls(
            register_key=regex.compile(reg["key_pattern"]),
            formats=reg["formats"],
            hints=reg.get("version_hints", []),
            handshake_key=regex.compile(hs["key_pattern"]),
            default_vendor=hs.get("default_vendor", "nvidia"),
            states=hs["states"],
        )

    # ---- register ------------------------------------------------------------------------
    def register_vendor(self, key: str) -> str | None:
        m = self.register_key.match(key)
        if not m:
            return None
        return (m.group("vendor") or m.group("vendor2") or "").lower()

    def decode_register(self, key: str, text: str, elided: bool = False) -> RegisterAnnotation:
        vendor = self.register_vendor(key) or "?"
        value = (text or "").strip()
        if elided:
            return RegisterAnnotation(
                key,
                vendor,
                "elided",
                None,
                [],
                value,
                "value cut off (kubectl describe, or the paste)",
            )
        if value in ("", "[]", "null"):
            fmt = "json" if value else None
            return RegisterAnnotation(key, vendor, "empty", fmt, [], value)
        errors: list[str] = []
        for f in self.formats:
            if f["decoder"] == "json-list":
                if not f["_detect"].match(value):
                    continue
                devices, err = _decode_json(value, f["fields"])
            else:
                devices, err = _decode_delimited(value, f)
            if err:
                errors.append(f"{f['name']}: {err}")
                if f["decoder"] == "json-list":
                    break  # it looked like JSON: the JSON error is the useful one
                continue
            ann = RegisterAnnotation(
                key, vendor, "ok" if devices else "empty", f["name"], devices, value
            )
            ann.versions = f["_versions"]
            for h in self.hints:
                if h.get("format") and h["format"] != f["name"]:
                    continue
                if "contains" in h and h["contains"] not in value:
                    continue
                if "contains_not" in h and h["contains_not"] in value:
                    continue
                ann.version_reasons.append((Range.parse(h["versions"]), h["reason"]))
            return ann
        return RegisterAnnotation(
            key, vendor, "invalid", None, [], value, "; ".join(errors) or "unknown format"
        )

    # ---- handshake -----------------------------------------------------------------------
    def handshake_vendor(self, key: str) -> str | None:
        m = self.handshake_key.match(key)
        if not m:
            return None
        return (m.group("vendor") or self.default_vendor).lower()

    def decode_handshake(self, key: str, text: str) -> Handshake:
        vendor = self.handshake_vendor(key) or "?"
        value = (text or "").strip()
        for s in self.states:
            m = s["_re"].match(value)
            if not m:
                continue
            fmts = s["time_format"] if isinstance(s["time_format"], list) else [s["time_format"]]
            ts = None
            for tf in fmts:
                try:
                    ts = parse_formatted(m.group("time"), tf)
                    break
                except ValueError:
                    continue
            return Handshake(key, vendor, s["state"], ts, value, s["_versions"])
        return Handshake(key, vendor, "other", None, value)


def _coerce(value: Any, typ: str) -> Any:
    if typ == "int":
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise TypeError(f"expected an integer, got {json.dumps(value)[:40]}")
        return int(value)
    if typ == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"expected true/false, got {json.dumps(value)[:40]}")
        return value
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {json.dumps(value)[:40]}")
    return value


def _decode_json(value: str, fields: dict) -> tuple[list[GpuDevice], str | None]:
    try:
        data = load_json(value)
    except ValueError as exc:
        return [], f"JSON error: {exc}"
    if data is None:
        return [], None
    if not isinstance(data, list):
        return [], f"expected a JSON array, got {type(data).__name__}"
    if len(data) > MAX_DEVICES:
        return [], f"{len(data)} devices is implausible"
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            return [], f"device {i}: expected an object, got {type(item).__name__}"
        kw: dict[str, Any] = {}
        absent = []
        for name, spec in fields.items():
            if name in item:
                try:
                    kw[name] = _coerce(item[name], spec["type"])
                except TypeError as exc:
                    return [], f"device {i}: field {name!r}: {exc}"
            else:
                kw[name] = spec.get("default")
                absent.append(name)
        out.append(GpuDevice(**kw, absent=absent))
    return out, None


def _decode_delimited(value: str, spec: dict) -> tuple[list[GpuDevice], str | None]:
    names: list[str] = spec["fields"]
    if spec["record_sep"] not in value:
        return [], f"no {spec['record_sep']!r} record separator"
    out = []
    for rec in value.split(spec["record_sep"]):
        rec = rec.strip()
        if not rec:
            continue
        parts = rec.split(spec["field_sep"])
        if len(parts) != len(names):
            return [], f"{len(parts)} fields, expected {len(names)}"
        raw = dict(zip(names, parts, strict=True))
        try:
            dev = GpuDevice(
                id=raw["id"],
                index=int(raw.get("index", 0) or 0),
                count=int(raw.get("count", 0) or 0),
                devmem=int(raw.get("devmem", 0) or 0),
                devcore=int(raw.get("devcore", 0) or 0),
                type=raw.get("type", ""),
                numa=int(raw.get("numa", 0) or 0),
                mode=raw.get("mode", ""),
                health=_health(raw.get("health"), spec.get("false_health") == "unknown"),
                absent=[n for n in ("index", "devcore", "numa", "mode") if n not in raw],
            )
        except ValueError as exc:
            return [], f"bad number: {exc}"
        out.append(dev)
    return out, None


def _health(value: str | None, false_is_unknown: bool) -> bool | None:
    """A delimited health field: None when the format has none, or writes `false` regardless.

    >>> _health("true", True), _health("false", True), _health("false", False), _health(None, False)
    (True, None, False, None)
    """
    if value is None:
        return None
    healthy = value.strip().lower() == "true"
    return None if not healthy and false_is_unknown else healthy
