"""Rule texts (explanations, remediation, collect commands) as sandboxed jinja2 templates.

Compiling a template costs about a millisecond, more than rendering it, and a run renders a
few dozen; so templates are named by the digest of their text and their compiled code is kept
in jinja2's bytecode cache on disk. Any change to a text is a new name. A text without template
syntax is its own rendering, and jinja2 is imported only when a text needs it: a run whose
findings are plain text does not pay for it."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from analyzer.cache import cached_environment

SYNTAX = ("{{", "{%", "{#")


class TemplateProblem(Exception):
    """A rule text that does not render (jinja2's TemplateError, re-raised without needing
    jinja2 to catch it)."""


@functools.cache
def _environment():
    from jinja2 import BaseLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class TextLoader(BaseLoader):
        def __init__(self) -> None:
            self.texts: dict[str, str] = {}

        def get_source(self, environment, template: str):
            return self.texts[template], None, lambda: True

    return cached_environment(
        SandboxedEnvironment,
        TextLoader(),
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@functools.lru_cache(maxsize=1024)
def template(text: str):
    env = _environment()
    name = hashlib.sha256(text.encode()).hexdigest()
    env.loader.texts[name] = text
    return env.get_template(name)


def is_plain(text: str) -> bool:
    """True when jinja2 would give the text back as it is (no tags, no carriage returns, which
    it would turn into newlines).

    >>> is_plain("Restart the plugin."), is_plain("{{ node }} is down"), is_plain("a{#b#}")
    (True, False, False)
    """
    return "\r" not in text and not any(s in text for s in SYNTAX)


def render(text: str, **context: Any) -> str:
    if is_plain(text):
        return text.strip()
    from jinja2 import TemplateError

    try:
        return template(text).render(**context).strip()
    except TemplateError as exc:
        raise TemplateProblem(str(exc)) from exc
