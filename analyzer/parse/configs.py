"""Config-like artefacts (helm values, toolkit/containerd TOML, CDI specs, K8s objects) into
flat dotted-key dictionaries that rules can address as facts (config.<kind>.<dotted.key>).

Pasted configs are often cut off: TOML and YAML are parsed up to the line where they break,
with a warning, so that what was pasted still counts (a truncated containerd config still says
which runtime is the default)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from analyzer.bundle.model import Artefact
from analyzer.structured import ELISION_RE, Documents, load_prefix

MAX_KEYS = 20_000
_TOML_LINE_RE = re.compile(r"at line (\d+)")


_KEY_LINE_RE = re.compile(r'^\s*-?\s*(?:"([^"]+)"|([^\s"=:]+))\s*[:=]')


@dataclass
class ConfigFacts:
    kind: str
    file: str
    first_line: int
    values: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    text: str = ""
    elided: tuple[int, ...] = ()  # 0-based lines where the paste left lines out (a mark)
    cut: int | None = None  # 0-based line where a cut-off paste's parsed part ends

    def shows_whole(self, header: re.Pattern[str]) -> bool:
        """Whether the table whose header line `header` matches is in the paste from its header
        to the next one, no line of it left out and the paste not cut inside it (a key the
        paste lost may be the one a default stands in for).

        >>> from dataclasses import replace
        >>> table = re.compile(r"\\[a\\]$")
        >>> cf = ConfigFacts("containerd-config", "c.toml", 1, text="[a]\\n  b = 1\\n[c]\\n...")
        >>> cf.shows_whole(table), replace(cf, elided=(3,)).shows_whole(table)
        (True, True)
        >>> replace(cf, cut=1).shows_whole(table), cf.shows_whole(re.compile("x"))
        (False, False)
        >>> replace(cf, text="[a]\\n  b = 1\\n[... ...]\\n[c]", elided=(2,)).shows_whole(table)
        False
        """
        lines = self.text.split("\n")
        start = next((i for i, line in enumerate(lines) if header.match(line)), None)
        if start is None:
            return False
        # the next table's header ends it (a `[... ...]` mark of lines left out is no header; a
        # header the paste is cut in still is one)
        headers = (
            i
            for i in range(start + 1, len(lines))
            if lines[i].lstrip().startswith("[") and i not in self.elided
        )
        end = next(headers, len(lines))
        gaps = (*self.elided, *(() if self.cut is None else (self.cut,)))
        return not any(start < gap < end for gap in gaps)

    def line_of(self, dotted: str) -> int | None:
        """Best-effort line of a key (its last component) for evidence citations."""
        leaf = dotted.rsplit(".", 1)[-1]
        if not leaf or leaf.isdigit():
            return None
        line = self._key_lines.get(leaf)
        return None if line is None else self.first_line + line

    @cached_property
    def _key_lines(self) -> dict[str, int]:
        """Each key's first line (0-based), read once: the facts ask for every key."""
        out: dict[str, int] = {}
        for i, line in enumerate(self.text.split("\n")):
            m = _KEY_LINE_RE.match(line)
            if m:
                out.setdefault(m.group(1) or m.group(2), i)
        return out


def flatten(obj: Any) -> dict[str, Any]:
    """Dotted key -> leaf value, in document order (a list of mappings by index). Walked with a
    stack of its own: a config nested thousands deep (valid YAML) overflowed Python's recursion.

    >>> flatten({"a": {"b": 1, "c": [{"d": 2}]}, "e": [1, 2]})
    {'a.b': 1, 'a.c.0.d': 2, 'e': [1, 2]}
    """
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack and len(out) <= MAX_KEYS:
        prefix, value = stack.pop()
        if isinstance(value, dict):
            items = [(f"{prefix}.{k}" if prefix else str(k), v) for k, v in value.items()]
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            items = [(f"{prefix}.{i}", v) for i, v in enumerate(value)]
        else:
            out[prefix] = value
            continue
        stack.extend(reversed(items))
    return out


# A paste's framing around a config, never TOML: the shell prompt of the command that printed it
# (`$ cat ...`, `[root@host ~]# cat ...`, `user@host:~$ sudo cat ...`) and the marks of lines left
# out ("........", "…", "[... ...]"). Blanked, so lines keep their numbers; a line left out is
# said in a warning (what it held is not known).
_PROMPT_RE = re.compile(r"^\s*(?:[$>]|\[[^\]\n]*\][#$]|[\w.-]+@[\w.-]+:[^\s$#]*[$#]) \S")


def load_toml(text: str) -> tuple[dict[str, Any], list[str], tuple[int, ...], int | None]:
    """TOML, or the part of it before the line where a cut-off paste breaks it; the warnings,
    the 0-based lines marking lines left out (`ConfigFacts.elided`) and the line where the
    parsed part ends, if cut (`ConfigFacts.cut`).

    >>> load_toml('[root@gpu-1 ~]# cat /etc/containerd/config.toml\\n[a]\\n  b = 1\\n[... ...]\\n[a.c]\\n  d = 2')
    ({'a': {'b': 1, 'c': {'d': 2}}}, ['lines left out at line 4: the config is not whole'], (3,), None)
    >>> load_toml('[a]\\n  b = 1\\n[c]\\n  d = "cut')[2:]
    ((), 3)
    """
    import tomllib  # only bundles with a TOML config pay for it

    lines = text.split("\n")
    elided = [n for n, line in enumerate(lines) if ELISION_RE.match(line)]
    for n in elided:
        lines[n] = ""
    lines = ["" if _PROMPT_RE.match(line) else line for line in lines]
    cut: list[int] = []

    def problem(exc: Exception, n_lines: int) -> tuple[int | None, str]:
        line, warning = _toml_problem(exc, n_lines)
        cut.append(line - 1 if line is not None else 0)
        return line, warning

    data, warnings = load_prefix(lines, tomllib.loads, problem, {})
    if elided:
        warnings.append(f"lines left out at line {elided[0] + 1}: the config is not whole")
    return data, warnings, tuple(elided), (cut[-1] if cut else None)


def _toml_problem(exc: Exception, n_lines: int) -> tuple[int | None, str]:
    import tomllib

    if isinstance(exc, tomllib.TOMLDecodeError):
        m = _TOML_LINE_RE.search(str(exc))
        # "at end of document" has no line number: the last line is the broken one
        line = int(m.group(1)) if m else n_lines
        return line, f"TOML error: {exc}; parsed the part before line {line}"
    if isinstance(exc, RecursionError):
        return None, "TOML nested too deeply"
    raise exc


def parse_config(artefact: Artefact, documents: Documents | None = None) -> ConfigFacts:
    """`documents`: a YAML or JSON config's, shared by the parsers of its kind."""
    text = artefact.text or ""
    cf = ConfigFacts(artefact.kind, artefact.file.name, artefact.first_line, text=text)
    if artefact.kind in ("toolkit-config", "containerd-config"):
        data, warnings, cf.elided, cf.cut = load_toml(text)
        cf.values = flatten(data)
        cf.warnings.extend(warnings)
        return cf
    docs, warnings = (documents or Documents(text)).loaded
    cf.warnings.extend(warnings)
    merged: dict[str, Any] = {}
    for i, d in enumerate(docs):
        flat = flatten(d)
        if len(docs) > 1:
            flat = {f"{i}.{k}": v for k, v in flat.items()} | flat
        merged.update(flat)
    cf.values = merged
    return cf
