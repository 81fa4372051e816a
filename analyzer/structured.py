"""Safe loading of YAML/JSON documents from untrusted text.

Alias bombs are refused (the pure-Python loader counts aliases and sizes the expanded
document), numbers JSON does not have are refused, YAML 1.1's base-60 numbers (`1:1:1:...`,
quadratic to convert) are plain strings, and a document that breaks part-way (a truncated paste)
is parsed up to the broken line, with a warning saying so. Every YAML the analyzer reads (rules,
catalogues, node objects, helm values, issue blocks) goes through the loaders defined here.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

MAX_ALIASES = 100
MAX_EXPANDED_NODES = 1_000_000  # kubectl never writes aliases; a large node list is ~100,000

# YAML 1.1's int and float resolvers without their base-60 forms (`190:20:30`): PyYAML converts
# those digit by digit into an ever larger integer, quadratic in the scalar's length (256 KB of
# `1:1:...` took 15 s). kubectl quotes every such string; YAML 1.2 dropped the form.
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_INT_RE = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


_Loader = TypeVar(
    "_Loader", "type[yaml.SafeLoader]", "type[yaml.CSafeLoader]"
)  # strings: no libyaml, no CSafeLoader


def _without_base60(cls: _Loader) -> _Loader:
    """The loader class with int/float resolvers that do not take base-60, and explicit `!!int`
    and `!!float` tags that refuse it."""
    cls.yaml_implicit_resolvers = {
        first: [
            (tag, _INT_RE if tag == _INT else _FLOAT_RE if tag == _FLOAT else rx)
            for tag, rx in pairs
        ]
        for first, pairs in cls.yaml_implicit_resolvers.items()
    }

    def number(make):
        def construct(loader, node):
            if ":" in str(node.value):
                raise yaml.constructor.ConstructorError(
                    None, None, "base-60 numbers are not read", node.start_mark
                )
            return make(loader, node)

        return construct

    cls.add_constructor(_INT, number(yaml.constructor.SafeConstructor.construct_yaml_int))
    cls.add_constructor(_FLOAT, number(yaml.constructor.SafeConstructor.construct_yaml_float))
    return cls


@_without_base60
class SafeLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader (pure Python) without base-60 numbers."""


if TYPE_CHECKING or hasattr(yaml, "CSafeLoader"):  # noqa: SIM108 (a ternary is no base class to mypy)
    _FastBase = yaml.CSafeLoader  # libyaml's parser: 9x faster
else:  # PyYAML built without libyaml
    _FastBase = yaml.SafeLoader


@_without_base60
class FastLoader(_FastBase):
    """PyYAML's CSafeLoader (SafeLoader without libyaml) without base-60 numbers."""


def load_yaml(text: str):
    """One YAML document with the fast loader (the analyzer's own files and small inputs)."""
    return yaml.load(text, Loader=FastLoader)


class _CountingLoader(SafeLoader):
    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} YAML aliases (alias bomb?)")
        return super().compose_node(parent, index)

    def compose_document(self):  # type: ignore[override]
        node = super().compose_document()
        if _expanded_size(node, {}) > MAX_EXPANDED_NODES:
            raise yaml.YAMLError(
                f"YAML aliases expand to more than {MAX_EXPANDED_NODES:,} values (alias bomb?)"
            )
        return node


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values the document holds once every alias is expanded, as any reader of the
    loaded object would walk it. Shared nodes are sized once, so a bomb costs its source size;
    a node still being sized (a recursive alias) counts as infinite."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = MAX_EXPANDED_NODES + 1
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[key] = min(size, MAX_EXPANDED_NODES + 1)
    return memo[key]


def _load_all(text: str) -> list[Any]:
    loader = _CountingLoader if ("&" in text and "*" in text) else FastLoader
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


# what a YAML load of untrusted text may raise: a parse error, nesting past the recursion
# limit, a value no constructor takes
YAML_FAILURES = (yaml.YAMLError, RecursionError, ValueError, ArithmeticError)


def loads_as_yaml(text: str) -> bool:
    """Whether `text` loads as YAML documents (guarded against alias bombs as any load is)."""
    try:
        _load_all(text)
    except YAML_FAILURES:
        return False
    return True


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:24]} is out of range")
    return value


def load_json(text: str) -> Any:
    """`json.loads` for untrusted text. Every way it can fail is a ValueError: invalid JSON, the
    NaN/Infinity that Python accepts but JSON does not, numbers that overflow to infinity,
    integers longer than Python converts, nesting deeper than the decoder recurses."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or not str(exc).startswith("Exceeds the limit"):
            raise
        raise ValueError(f"an integer longer than {sys.get_int_max_str_digits()} digits") from None


# The shell prompts users paste before a command, one pattern for every reader of pastes:
# `root@host:~#`, bash's default Red Hat/CentOS `[root@host dir]#`, Cloud Shell's
# `user@cloudshell:~ (project)$`, PowerShell's `PS C:\>`, a bare `$` or `#`.
_NAMED_PROMPT = (
    r"[\w.-]+@[\w.:~/-]*[$#]|\[[\w.-]+@[\w.-]+(?:\s[^\]\n]*)?\][$#]"
    r"|@?[\w.-]*@?cloudshell:[^$\n]*\$"
)
SHELL_PROMPT = rf"(?:{_NAMED_PROMPT}|[$#]|PS [^>\n]+>)"
# among a reporter's prose a bare `#` opens a Markdown heading and "PS I also tried ... ->" is a
# postscript: a prompt there names its user, is PowerShell's on a drive, or a bare `$`
PROSE_SHELL_PROMPT = rf"(?:{_NAMED_PROMPT}|PS [A-Za-z]:\\[^>\n]*>|\$)"

# a line a paste puts where it left lines out ("........", "…", "[... ...]", "[...]", "<snip>",
# "(...)")
ELISION_RE = re.compile(r"^\s*(?:\.{3,}|…+|\[(?:\.\.\. ?)?\.\.\.\]|\[…\]|<snip>|\(\.\.\.\))\s*$")


def elision_lines(lines: list[str]) -> list[int]:
    """The indexes of the lines a paste put where it left lines out (ELISION_RE; the regex only
    for lines holding one of its characters)."""
    return [
        i for i, x in enumerate(lines) if ("." in x or "…" in x or "<" in x) and ELISION_RE.match(x)
    ]


# a pasted shell command before the object's text: `$ kubectl get node -o yaml` (a Red Hat prompt
# is what YAML would read as a flow sequence followed by a comment, and JSON rejects)
_COMMAND_LINE_RE = re.compile(
    rf"^\s*{SHELL_PROMPT}\s*"
    r"(?:sudo\s+)?(?:kubectl|k|oc|helm|cat|crictl|docker|nvidia-ctk)\b[^\n]*(?:\n|$)"
)


class Documents:
    """A text's documents and the warnings loading them raised (`load_documents`), loaded when
    first asked: the parsers of one artefact share them (a Deployment is read as a config and as
    a pod template, its YAML loaded once)."""

    def __init__(self, text: str):
        self.text = text

    @property
    def loaded(self) -> tuple[list[Any], list[str]]:
        """The documents (shared: a parser reads them, never changes them) and a list of the
        warnings of its own (a parser adds to it)."""
        docs, warnings = self._loaded
        return docs, list(warnings)

    @cached_property
    def _loaded(self) -> tuple[list[Any], list[str]]:
        return load_documents(self.text)


def after_command(text: str) -> str:
    """The text without the shell command pasted before it (`$ kubectl get node -o yaml`)."""
    command = _COMMAND_LINE_RE.match(text)
    return text[command.end() :] if command else text


def load_documents(text: str) -> tuple[list[Any], list[str]]:
    """Return the documents in text (JSON or YAML) and warnings; never raises."""
    text = after_command(text)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [load_json(stripped)], []
        except ValueError as exc:
            warn = f"truncated or invalid JSON ({exc}); trying YAML"
            docs, more = load_documents_yaml(text)
            return docs, [warn, *more]
    return load_documents_yaml(text)


_TOP_KEY_RE = re.compile(
    r"^(?:apiVersion|kind|metadata|spec|status|items|annotations|[A-Za-z_][\w.-]*):(?:\s|$)"
)


def load_documents_yaml(text: str) -> tuple[list[Any], list[str]]:
    warnings: list[str] = []
    lines = text.split("\n")
    # a paste may carry a comment or an event line before the object: start at the first
    # top-level key when the first line is not one
    first = next((i for i, x in enumerate(lines) if x.strip()), 0)
    head = lines[first] if lines else ""
    if (
        head
        and not _TOP_KEY_RE.match(head)
        and not (head.startswith(("- ", "#", " ", "{", "[")) or head.strip() in ("---", "-"))
    ):
        start = next((i for i, x in enumerate(lines) if _TOP_KEY_RE.match(x)), None)
        if start:
            warnings.append(f"skipped {start} line(s) before the first YAML key")
            lines = lines[start:]
    # a paste's own marks of lines it left out ("....", "…", "[... ...]") are no YAML: read as
    # blank lines (the parsers that care find them in the text and call their section partial)
    # ... at the margin is YAML's own end of a document, which the load reads as one
    elided = [i for i in elision_lines(lines) if lines[i].rstrip() != "..."]
    if elided:
        lines = list(lines)
        for i in elided:
            lines[i] = ""
        warnings.append(f"{len(elided)} line(s) marking text left out of the paste read as gaps")
    docs, more = load_prefix(lines, _load_all, _yaml_problem, [])
    return docs, warnings + more


def _yaml_problem(exc: Exception, _n_lines: int) -> tuple[int | None, str]:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = (mark.line if mark else 0) + 1
        return line, f"YAML error at line {line}: {exc.problem or exc}; parsed the part before it"
    if isinstance(exc, YAML_FAILURES):
        return None, f"YAML rejected: {str(exc).splitlines()[0]}"
    raise exc


def load_prefix(
    lines: list[str],
    load: Callable[[str], Any],
    problem: Callable[[Exception, int], tuple[int | None, str]],
    empty: Any,
) -> tuple[Any, list[str]]:
    """The text parsed, or the part of it before the line where a cut-off paste breaks it.
    `problem` turns a parse error and the line count into (the 1-based line it breaks at, or
    None to give up; a warning)."""
    warnings: list[str] = []
    for _attempt in range(6):
        try:
            return load("\n".join(lines)), warnings
        except Exception as exc:
            line, warning = problem(exc, len(lines))
            warnings.append(warning)
            cut = min(line - 1, len(lines) - 1) if line is not None else 0
            if cut <= 0:
                return empty, warnings
            lines = lines[:cut]
    return empty, warnings
