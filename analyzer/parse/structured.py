"""Safe loading of YAML/JSON documents from untrusted text.

Alias bombs are refused (the pure-Python loader counts aliases), and a document that breaks
part-way (a truncated paste) is parsed up to the broken line, with a warning saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import yaml

MAX_ALIASES = 100

try:
    _FastLoader = yaml.CSafeLoader
except AttributeError:  # libyaml missing
    _FastLoader = yaml.SafeLoader


class _CountingLoader(yaml.SafeLoader):
    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} YAML aliases (alias bomb?)")
        return super().compose_node(parent, index)


def _load_all(text: str) -> list[Any]:
    loader = _CountingLoader if ("&" in text and "*" in text) else _FastLoader
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


def load_documents(text: str) -> tuple[list[Any], list[str]]:
    """Return the documents in text (JSON or YAML) and warnings; never raises."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(stripped)], []
        except (json.JSONDecodeError, RecursionError) as exc:
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
    docs, more = load_prefix(lines, _load_all, _yaml_problem, [])
    return docs, warnings + more


def _yaml_problem(exc: Exception, _n_lines: int) -> tuple[int | None, str]:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = (mark.line if mark else 0) + 1
        return line, f"YAML error at line {line}: {exc.problem or exc}; parsed the part before it"
    if isinstance(exc, yaml.YAMLError | RecursionError | ValueError):
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
