"""Safe loading of YAML/JSON documents from untrusted text.

Alias bombs are refused (the pure-Python loader counts aliases), and a document that breaks
part-way (a truncated paste) is parsed up to the broken line, with a warning saying so.
"""

from __future__ import annotations

import json
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


def load_documents_yaml(text: str) -> tuple[list[Any], list[str]]:
    warnings: list[str] = []
    lines = text.split("\n")
    for _attempt in range(6):
        try:
            return _load_all("\n".join(lines)), warnings
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line if mark else 0
            warnings.append(
                f"YAML error at line {line + 1}: {exc.problem or exc}; parsed the part before it"
            )
            cut = min(line, len(lines) - 1)
            if cut <= 0:
                return [], warnings
            lines = lines[:cut]
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            warnings.append(f"YAML rejected: {str(exc).splitlines()[0]}")
            return [], warnings
    return [], warnings
