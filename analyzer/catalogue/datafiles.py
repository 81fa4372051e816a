"""The rule directory's data files besides rules and signatures, declared as field tables like
them and validated with `file:line` errors: timeline.yaml (episodes), decisions.yaml (the pod x
node decision table) and annotations.yaml (how HAMi encodes its node annotations)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.catalogue.fields import (
    LINE_KEY,
    Context,
    Field,
    as_list,
    boolean,
    integer,
    list_of,
    mapping_of,
    nested,
    number,
    one_of,
    pattern,
    read_fields,
    read_yaml,
    signature_id,
    strip_lines,
    text,
    versions,
)


@dataclass(frozen=True)
class EpisodeSpec:
    """Which signatures mark episodes on the timeline (rules/timeline.yaml)."""

    starts: dict[str, str] = field(default_factory=dict)  # log kind -> start signature
    healthy: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (sig, where pairs)
    annotation_update: str | None = None
    leader: str | None = None
    restart_count: int = 3
    restart_within: float = 900.0
    gap_seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class DecisionSpec:
    """How one signature's captures become rows of the pod x node decision table."""

    signature: str
    fit: bool
    pod: tuple[str, ...] = ()
    node: tuple[str, ...] = ()
    reason: tuple[str, ...] = ()


# ---- readers ---------------------------------------------------------------------------------
def _kind_map(read_value):
    """A mapping of artefact kind -> value, each kind one of the catalogue's."""

    def read(value: Any, ctx: Context) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValueError(f"{ctx.key} needs a mapping of artefact kind to value, got {value!r}")
        out = {}
        here = nested(ctx, value)
        for kind, v in value.items():
            if kind == LINE_KEY:
                continue
            if kind not in ctx.catalogue:
                here.problem(f"{ctx.key}: unknown artefact kind {kind!r}")
            try:
                out[str(kind)] = read_value(v, here)
            except ValueError as exc:
                here.problem(f"{ctx.key}.{kind}: {exc}")
        return out

    return read


def _capture_patterns(value: Any, ctx: Context) -> tuple[tuple[str, str], ...]:
    """where: {capture: regex} on the signature read just before."""
    if not isinstance(value, dict):
        raise ValueError(f"where needs a mapping of capture to regex, got {value!r}")
    sig = ctx.signatures.get(ctx.values.get("signature"))
    out = []
    for cap, pat in value.items():
        if cap == LINE_KEY:
            continue
        if sig is not None and cap not in sig.compiled.groupindex:
            ctx.problem(f"signature {sig.id} has no capture {cap!r}")
        ctx.key = f"where.{cap}"
        pattern(pat, ctx)
        out.append((str(cap), str(pat)))
    return tuple(out)


def _captures(value: Any, ctx: Context) -> tuple[str, ...]:
    """Capture names of the signature read just before."""
    caps = tuple(str(c) for c in as_list(value))
    sig = ctx.signatures.get(ctx.values.get("signature"))
    for cap in caps:
        if sig is not None and cap not in sig.compiled.groupindex:
            ctx.problem(f"signature {sig.id} has no capture {cap!r}")
    return caps


HEALTHY_FIELDS = {
    "signature": Field(read=signature_id, required="load"),
    "where": Field(read=_capture_patterns, default=()),
}


def _healthy(value: Any, ctx: Context) -> tuple[str, tuple[tuple[str, str], ...]]:
    if isinstance(value, str):
        return signature_id(value, ctx), ()
    if not isinstance(value, dict):
        raise ValueError(
            f"a healthy entry is a signature id or {{signature, where}}, got {value!r}"
        )
    h = read_fields(value, HEALTHY_FIELDS, ctx, "healthy entry")
    return h["signature"], h["where"]


def _positive(read):
    def check(value: Any, ctx: Context):
        v = read(value, ctx)
        if v <= 0:
            raise ValueError(f"{ctx.key} must be more than 0, got {value!r}")
        return v

    return check


RESTART_FIELDS = {
    "count": Field(read=_positive(integer), default=3),
    "within_seconds": Field(read=_positive(number), default=900.0),
}
EPISODE_FIELDS = {
    "starts": Field(read=_kind_map(signature_id), default=dict),
    "healthy": Field(read=list_of(_healthy), default=()),
    "annotation_update": Field(read=signature_id),
    "leader": Field(read=signature_id),
    "restart_loop": Field(read=mapping_of(RESTART_FIELDS, "episodes"), default=dict),
    "gap_seconds": Field(read=_kind_map(_positive(number)), default=dict),
}
DECISION_FIELDS = {
    "signature": Field(read=signature_id, required="load"),
    "fit": Field(read=boolean, required="load"),
    "pod": Field(read=_captures, default=()),
    "node": Field(read=_captures, default=()),
    "reason": Field(read=_captures, default=()),
}


# ---- annotations.yaml ------------------------------------------------------------------------
_GPU_FIELDS = ("id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health")


def _groups(*names: str):
    """A regex whose named groups include `names` (the decoder reads them)."""

    def read(value: Any, ctx: Context):
        compiled = pattern(value, ctx)
        lacking = [n for n in names if n not in compiled.groupindex]
        if lacking:
            raise ValueError(f"{ctx.key} needs the named group(s) {', '.join(lacking)}")
        return compiled

    return read


JSON_FIELD = {
    "type": Field(read=one_of(("str", "int", "bool")), required="load"),
    "default": Field(),
}


def _format_fields(value: Any, ctx: Context):
    """json-list: {field: {type, default}} naming every GPU field; delimited: [field, ...]."""
    if ctx.values.get("decoder") == "json-list":
        if not isinstance(value, dict):
            raise ValueError(
                "a json-list format's fields are a mapping of field to {type, default}"
            )
        names = [k for k in value if k != LINE_KEY]
        if sorted(names) != sorted(_GPU_FIELDS):
            raise ValueError(f"fields must be exactly {', '.join(_GPU_FIELDS)}; got {names}")
        for name in names:
            read_fields(value[name], JSON_FIELD, nested(ctx, value[name]), f"field {name}")
        return value
    names = [str(n) for n in as_list(value)]
    if "id" not in names:
        raise ValueError("a delimited format's fields must include id")
    return names


FORMAT_FIELDS = {
    "name": Field(read=text, required="load"),
    "decoder": Field(read=one_of(("json-list", "delimited")), required="load"),
    "detect": Field(read=pattern),
    "record_sep": Field(read=text),
    "field_sep": Field(read=text),
    "fields": Field(read=_format_fields, required="load"),
    # delimited: what a `false` health field says ("unknown": the writer set it regardless)
    "false_health": Field(read=one_of(("unknown", "false"))),
    "versions": Field(read=versions),
}
HINT_FIELDS = {
    "contains": Field(read=text),
    "contains_not": Field(read=text),
    "format": Field(read=text),
    "versions": Field(read=versions, required="load"),
    "reason": Field(read=text, required="load"),
}
STATE_FIELDS = {
    "state": Field(read=text, required="load"),
    "pattern": Field(read=_groups("time"), required="load"),
    "time_format": Field(required="load"),
    "versions": Field(read=versions),
}
REGISTER_FIELDS = {
    "key_pattern": Field(read=_groups("vendor", "vendor2"), required="load"),
    "formats": Field(read=list_of(mapping_of(FORMAT_FIELDS, "register")), required="load"),
    "version_hints": Field(read=list_of(mapping_of(HINT_FIELDS, "register")), default=()),
}
HANDSHAKE_FIELDS = {
    "key_pattern": Field(read=_groups("vendor"), required="load"),
    "default_vendor": Field(read=text),
    "states": Field(read=list_of(mapping_of(STATE_FIELDS, "handshake")), required="load"),
}
ANNOTATION_FIELDS = {
    "register": Field(read=mapping_of(REGISTER_FIELDS, "annotations"), required="load"),
    "handshake": Field(read=mapping_of(HANDSHAKE_FIELDS, "annotations"), required="load"),
}


def _format_checks(doc: dict, ctx: Context) -> None:
    """What one format needs besides its own keys: a json-list detects, a delimited splits."""
    for f in (doc.get("register") or {}).get("formats") or []:
        if not isinstance(f, dict):
            continue
        here = nested(ctx, f)
        need = ("detect",) if f.get("decoder") == "json-list" else ("record_sep", "field_sep")
        if f.get("decoder") in ("json-list", "delimited"):
            for key in need:
                if key not in f:
                    here.problem(f"format {f.get('name')!r} ({f['decoder']}) needs {key}")


# ---- the files -------------------------------------------------------------------------------
def _top(path: Path, key: str, problems: list[str], default: Any) -> tuple[Any, Context]:
    """The value under `key`, the only top-level key of the file."""
    ctx = Context(f"{path}:1", problems, str(path), 1)
    doc = read_yaml(path, problems)
    if doc is None:
        return default, ctx
    if not isinstance(doc, dict):
        ctx.problem(f"expected a mapping with '{key}:'")
        return default, ctx
    read_fields(doc, {key: Field()}, ctx, path.name)
    return doc.get(key, default), ctx


def load_episodes(path: Path, sigs: dict, catalogue, problems: list[str]) -> EpisodeSpec:
    ep, ctx = _top(path, "episodes", problems, {})
    if not isinstance(ep, dict):
        ctx.problem(f"episodes needs a mapping, got {ep!r}")
        return EpisodeSpec()
    ctx = dataclasses.replace(nested(ctx, ep), signatures=sigs, catalogue=catalogue)
    v = read_fields(ep, EPISODE_FIELDS, ctx, "episodes")
    loop = v["restart_loop"]
    return EpisodeSpec(
        starts=v["starts"],
        healthy=v["healthy"],
        annotation_update=v["annotation_update"],
        leader=v["leader"],
        restart_count=int(loop.get("count", 3)),
        restart_within=float(loop.get("within_seconds", 900)),
        gap_seconds=v["gap_seconds"],
    )


def load_decisions(path: Path, sigs: dict, problems: list[str]) -> tuple[DecisionSpec, ...]:
    entries, ctx = _top(path, "decisions", problems, [])
    if not isinstance(entries, list):
        ctx.problem(f"decisions needs a list, got {entries!r}")
        return ()
    out = []
    for d in entries:
        here = dataclasses.replace(nested(ctx, d), signatures=sigs)
        if not isinstance(d, dict):
            here.problem(f"a decision is a mapping, got {d!r}")
            continue
        v = read_fields(d, DECISION_FIELDS, here, "decision")
        if v["signature"] is not None and v["fit"] is not None:
            out.append(DecisionSpec(**v))
    return tuple(out)


def check_annotations(path: Path, problems: list[str]) -> dict | None:
    """annotations.yaml validated; the plain document (no line marks) for AnnotationSpec."""
    before = len(problems)
    doc = read_yaml(path, problems)
    ctx = Context(f"{path}:1", problems, str(path), 1)
    if doc is not None and not isinstance(doc, dict):
        ctx.problem("expected a mapping with 'register:' and 'handshake:'")
    elif doc is not None:
        read_fields(doc, ANNOTATION_FIELDS, ctx, path.name)
        _format_checks(doc, ctx)
    return strip_lines(doc) if len(problems) == before else None
