"""Rule texts (explanations, remediation, collect commands) as sandboxed jinja2 templates.

Compiling a template costs about a millisecond, more than rendering it, and a run renders a
few dozen; so templates are named by the digest of their text and their compiled code is kept
in jinja2's bytecode cache on disk. Any change to a text is a new name."""

from __future__ import annotations

import contextlib
import functools
import hashlib
from typing import Any

from jinja2 import BaseLoader, FileSystemBytecodeCache, StrictUndefined, Template
from jinja2.sandbox import SandboxedEnvironment

from analyzer.cache import cache_dir


class _TextLoader(BaseLoader):
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def get_source(self, environment, template: str):
        return self.texts[template], None, lambda: True


class _QuietBytecodeCache(FileSystemBytecodeCache):
    """A cache that cannot be written (full disk, read-only) costs speed, never a run."""

    def load_bytecode(self, bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError):
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _environment() -> SandboxedEnvironment:
    where = cache_dir("templates")
    return SandboxedEnvironment(
        loader=_LOADER,
        bytecode_cache=_QuietBytecodeCache(str(where)) if where else None,
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


_LOADER = _TextLoader()
_ENV = _environment()


@functools.lru_cache(maxsize=1024)
def template(text: str) -> Template:
    name = hashlib.sha256(text.encode()).hexdigest()
    _LOADER.texts[name] = text
    return _ENV.get_template(name)


def render(text: str, **context: Any) -> str:
    return template(text).render(**context).strip()
