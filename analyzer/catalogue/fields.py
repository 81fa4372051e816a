"""Declared fields: each key of a rule-file mapping with its JSON Schema, its default and the
reader that turns the YAML value into the model's value (raising ValueError with the reason when
it cannot). One generic `read_fields` walks a table, so a loader states *what* a mapping holds,
not how to check each key; the same tables generate the shipped JSON Schema."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
import yaml

from analyzer.structured import FastLoader
from analyzer.versions import Range

LINE_KEY = "__line__"  # the YAML loader records each mapping's line under this key


@functools.cache
def _template_env():
    """Only for validating rule texts: a run from the rule cache never imports jinja2 here."""
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(autoescape=False, keep_trailing_newline=False)


_ID_RE = regex.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class _LineLoader(FastLoader):
    """The fast safe loader, recording the line of every mapping under LINE_KEY, and refusing a
    key given twice in one mapping (YAML keeps the last: a rule pasted over another's `- id:`
    line became that rule's texts under the new id, silently)."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value != "<<":
                if key.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key.value!r} given twice in one mapping", key.start_mark
                    )
                seen.add(key.value)
        mapping = super().construct_mapping(node, deep=deep)
        mapping[LINE_KEY] = node.start_mark.line + 1
        return mapping

    def construct_yaml_str(self, node) -> str:
        """Each text once, however often the rules write it (a kind's name, a fact's): the
        cached rule set then holds it once, and reading it back makes ~4,500 objects fewer
        (~0.6 ms of a small run)."""
        return sys.intern(super().construct_yaml_str(node))


_LineLoader.add_constructor("tag:yaml.org,2002:str", _LineLoader.construct_yaml_str)


def read_yaml(path: Path, problems: list[str]) -> Any:
    """A rule-directory YAML file with line marks; None (and a `file:line` problem) when it
    cannot be read or parsed."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        problems.append(f"{path}:{line}: YAML error: {exc.problem}")
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: {str(exc).splitlines()[0]}")
    return None


@dataclass
class Context:
    """Where a mapping is (for messages) and what its readers may consult."""

    where: str  # "file:line"
    problems: list[str]
    file: str = ""
    line: int = 0
    signatures: dict = field(default_factory=dict)
    catalogue: Any = None
    ident: str = ""  # "rule ID", "signature ID", ...: the prefix of value messages
    name: str = ""  # the id alone
    values: dict[str, Any] = field(default_factory=dict)  # fields read so far, in table order
    key: str = ""  # the field being read

    def problem(self, message: str) -> None:
        prefix = f"{self.where}: {self.ident}: " if self.ident else f"{self.where}: "
        self.problems.append(prefix + message)


Reader = Callable[[Any, Context], Any]


@dataclass(frozen=True)
class Field:
    """One key of a catalogue entry: its schema, how it is read and what it fills."""

    schema: dict[str, Any] = field(default_factory=dict)
    read: Reader | None = None  # None: the value is taken as it is
    default: Any = None  # when absent (or unreadable); a callable makes a fresh one
    attr: str | None = ""  # the model attribute it fills ("": the key itself; None: not kept)
    required: str = ""  # "load": the loader needs it; "lint": the schema requires it, lint warns
    nullable: bool = False  # an explicit null is the default


def read_fields(doc: dict, table: dict[str, Field], ctx: Context, label: str) -> dict[str, Any]:
    """The model values of `doc` by `table`, every problem recorded in ctx (`label` names the
    mapping in key problems: "rule 'x'"). Absent or unreadable fields get their default."""
    for key in doc:
        if key not in table and key != LINE_KEY:
            allowed = ", ".join(table)
            ctx.problems.append(f"{ctx.where}: {label}: unknown key {key!r} (allowed: {allowed})")
    missing = [k for k, f in table.items() if f.required == "load" and k not in doc]
    if missing:
        ctx.problems.append(f"{ctx.where}: {label}: missing {', '.join(map(repr, missing))}")
    values = ctx.values
    for key, f in table.items():
        if f.attr is None:
            continue
        default = f.default() if callable(f.default) else f.default
        raw = doc.get(key)
        value = default
        if key in doc and not (raw is None and f.nullable):
            ctx.key = key
            try:
                value = f.read(raw, ctx) if f.read else raw
            except ValueError as exc:
                ctx.problem(str(exc))
        values[f.attr or key] = value
    return values


# ---- readers ---------------------------------------------------------------------------------
def as_list(value: Any) -> list:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def strip_lines(obj: Any) -> Any:
    """A YAML value without the recorded line numbers."""
    if isinstance(obj, dict):
        return {k: strip_lines(v) for k, v in obj.items() if k != LINE_KEY}
    if isinstance(obj, list):
        return [strip_lines(x) for x in obj]
    return obj


def text(value: Any, ctx: Context) -> str:
    return str(value)


def one_line(value: Any, ctx: Context) -> str:
    return " ".join(str(value).split())


def block(value: Any, ctx: Context) -> str:
    return str(value).strip()


def strings(value: Any, ctx: Context) -> tuple[str, ...]:
    return tuple(str(x) for x in as_list(value))


def boolean(value: Any, ctx: Context) -> bool:
    return bool(value)


def integer(value: Any, ctx: Context) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{ctx.key} must be a whole number, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{ctx.key} must be a whole number, got {value!r}") from None


def number(value: Any, ctx: Context) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{ctx.key} must be a number, got {value!r}")
    return float(value)


def one_of(allowed) -> Reader:
    def read(value: Any, ctx: Context) -> Any:
        if value not in allowed:
            raise ValueError(f"{ctx.key} {value!r} not one of {', '.join(map(str, allowed))}")
        return value

    return read


def identifier(value: Any, ctx: Context) -> str:
    if not _ID_RE.fullmatch(str(value)):
        raise ValueError(f"id {value!r} must be lower-case words joined by '-'")
    return str(value)


def versions(value: Any, ctx: Context) -> Range:
    return _shared(Range.parse(value))


# the rules' ranges, one object per value: ~700 fields hold ~25 values, and the cached rule set
# (analyzer/packed.py) then makes each once
_RANGES: dict[Range, Range] = {}


def _shared(r: Range) -> Range:
    return _RANGES.setdefault(r, r)


def version_ranges(value: Any, ctx: Context) -> dict[str, Range]:
    """Version ranges of other components (toolkit, gpu-operator), each checked on its own."""
    out: dict[str, Range] = {}
    if not isinstance(value, dict):
        raise ValueError(f"{ctx.key} needs a mapping of component to versions, got {value!r}")
    for comp, spec in value.items():
        if comp == LINE_KEY:
            continue
        try:
            out[str(comp)] = _shared(Range.parse(spec))
        except ValueError as exc:
            ctx.problem(f"{ctx.key}.{comp}: {exc}")
    return out


def template(value: Any, ctx: Context) -> str:
    """A jinja2 template that parses (rendering happens per finding)."""
    check_template(str(value), ctx)
    return str(value)


def check_template(text: str, ctx: Context) -> None:
    from jinja2 import TemplateSyntaxError

    try:
        _template_env().parse(text)
    except TemplateSyntaxError as exc:
        ctx.problem(f"bad template (line {exc.lineno}): {exc.message}")


def pattern(value: Any, ctx: Context) -> regex.Pattern:
    try:
        return regex.compile(str(value))
    except regex.error as exc:
        raise ValueError(f"{ctx.key}: bad regex: {exc}") from None


def signature_id(value: Any, ctx: Context) -> str:
    if value not in ctx.signatures:
        raise ValueError(f"unknown signature id {value!r}")
    return str(value)


def mapping_of(table: dict[str, Field], label: str) -> Reader:
    """A nested mapping read by its own table (a line of its own in messages)."""

    def read(value: Any, ctx: Context) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValueError(f"{ctx.key} needs a mapping, got {value!r}")
        return read_fields(value, table, nested(ctx, value), f"{label} {ctx.key}")

    return read


def list_of(reader: Reader) -> Reader:
    def read(value: Any, ctx: Context) -> tuple:
        if not isinstance(value, list):
            raise ValueError(f"{ctx.key} needs a list, got {value!r}")
        out = []
        for item in value:
            try:
                out.append(reader(item, nested(ctx, item)))
            except ValueError as exc:
                nested(ctx, item).problem(str(exc))
        return tuple(out)

    return read


def nested(ctx: Context, value: Any) -> Context:
    """The context of a mapping inside ctx's: its own line when the YAML recorded one."""
    line = value.get(LINE_KEY, ctx.line) if isinstance(value, dict) else ctx.line
    return Context(
        f"{ctx.file}:{line}" if ctx.file else ctx.where,
        ctx.problems,
        ctx.file,
        line,
        ctx.signatures,
        ctx.catalogue,
        ctx.ident,
        ctx.name,
        {},
        ctx.key,
    )


def schema_of(table: dict[str, Field]) -> dict[str, Any]:
    """The JSON Schema of a mapping read by `table`."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [k for k, f in table.items() if f.required],
        "properties": {k: f.schema for k, f in table.items()},
    }
