"""Code Python compiles afresh at every start, kept between runs: the source texts the standard
library generates and compiles while modules are imported, and regular expressions.

Python 3.11 writes each dataclass's __init__, __repr__, __eq__ (and, frozen, __setattr__,
__delattr__, __hash__) as source text and compiles it, on every start: about 600 compiles for a
small run's ~110 dataclasses, ~60 ms, a sixth of the run. `typing` compiles each annotation
written as a string that it checks (`Optional["Context"]`, a TypedDict's fields: ~180 of them
while polars, typer and jinja2 are imported, ~15 ms), and `namedtuple` the text of each
`__new__` (~25). The command line (analyzer/startup.py) puts a `CodeCache` in front of the
`exec`, `compile` and `eval` these three call: compiled code is kept in the cache folder, keyed
by the exact text, its mode and Python's bytecode magic number, as Python keeps a module's .pyc.
The same text always compiles to the same code, so an entry is never stale. A text not there is
compiled as before, and the file is rewritten when the command ends. A file that cannot be read,
fails its checksum or holds anything but code is ignored (and rewritten). The file is as trusted
as the cached rule set beside it, a pickle.

Regular expressions: `re` parses and compiles each pattern in Python at its first use in a
process (re's own cache lasts one process): ~160 patterns in a small run, the analyzer's and its
dependencies' module-level ones and the recognition patterns, ~20 ms. `CodeCache.compile` stands
in for `re._compiler.compile` and keeps what it hands `_sre.compile`, keyed by the pattern and
its flags; the file's name holds `_sre.MAGIC`, the version of that code. `_sre.compile` checks
the code it is given; an entry it refuses is compiled afresh. The `regex` module's parser is
Python too (~0.3 ms a pattern, ~15 in a small run: module-level ones and the rules'):
`CodeCache.compile_regex` stands in for it once regex is imported (a command that never imports
it, `--help`, does not import it for the cache) and keeps what it hands `_regex.compile`, as
regex pickles a pattern, keyed by the pattern, its flags and regex's version."""

from __future__ import annotations

import _sre
import collections
import contextlib
import dataclasses
import inspect
import marshal
import re
import sys
import typing
import zlib
from collections.abc import Callable, Iterator
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from importlib.util import MAGIC_NUMBER
from re import _compiler, _parser  # type: ignore[attr-defined]
from types import CodeType, ModuleType

from analyzer.atomic import atomic_path
from analyzer.cache import cache_dir

CODE_FILE = f"compiled-code-{MAGIC_NUMBER.hex()}-{_sre.MAGIC}.marshal"
MAX_CODES = 2000  # every command together uses ~1000 (a small bundle's analysis ~800)
MAX_PATTERNS = 1000  # a small bundle's analysis compiles ~160 (and ~15 of regex)

CodeKey = tuple[str, str]  # what was compiled: the mode ("exec" or "eval"), the source text
PatternKey = tuple[str | bytes, int]  # what re.compile was given: the pattern, its flags
# what re's compiler hands _sre.compile after the pattern: flags (the inline ones added), code,
# the number of groups, their indexes by name and names by index
PatternCode = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
_compile_afresh = _compiler.compile
# what regex compiled: the pattern, its flags, regex.DEFAULT_VERSION and regex's version (its
# compiled code is its own version's)
RegexKey = tuple[str | bytes, int, int, str]
RegexCode = tuple  # what regex's compiler hands _regex.compile (a pattern's `_pickled_data`)
_regex_compile: Callable | None = None  # regex's own compiler, once the cache stands in for it


def _compile_regex_afresh(*args):
    """regex's own `_compile`."""
    from regex import _main  # type: ignore[attr-defined]

    return (_regex_compile or _main._compile)(*args)  # type: ignore[attr-defined]


class CodeCache:
    """Compiled source texts by mode and text, and compiled patterns by pattern and flags: the
    ones read from the cache file, and the ones this run used or compiled (what the file is
    rewritten with when something was missing)."""

    def __init__(
        self,
        cached: dict[CodeKey, CodeType],
        patterns: dict[PatternKey, PatternCode] | None = None,
        regexes: dict[RegexKey, RegexCode] | None = None,
    ) -> None:
        self.cached = cached
        self.used: dict[CodeKey, CodeType] = {}
        self.patterns = patterns or {}
        self.used_patterns: dict[PatternKey, PatternCode] = {}
        self.regexes = regexes or {}
        self.used_regexes: dict[RegexKey, RegexCode] = {}
        self._compiled_regexes: dict[RegexKey, object] = {}  # regex's own cache, in effect
        self.missed = 0

    def code(self, source: str, mode: str) -> CodeType:
        """What `compile(source, "<string>", mode)` gives in a module of the standard library
        (no __future__ flags of ours), from the cache when there."""
        key = (mode, source)
        code = self.cached.get(key)
        if code is None:
            code = compile(source, "<string>", mode, dont_inherit=True)
            self.missed += 1
        self.used[key] = code
        return code

    def exec(
        self, source: str | CodeType, scope: dict | None = None, names: dict | None = None, /
    ) -> None:
        """`exec` as dataclasses calls it."""
        exec(self.code(source, "exec") if isinstance(source, str) else source, scope, names)

    def eval(self, source: str | CodeType, scope: dict | None = None, names: dict | None = None, /):
        """`eval` as namedtuple and inspect call it (a text's leading spaces and tabs are
        dropped first, as the builtin drops them)."""
        if isinstance(source, str):
            source = self.code(source.lstrip(" \t"), "eval")
        return eval(source, scope, names)

    def compile_source(self, source, filename, mode, *args, **kwargs) -> CodeType:
        """`compile` as typing calls it for an annotation written as a string; any other call
        is compiled as the builtin would in the caller's module (typing has no __future__
        import)."""
        if isinstance(source, str) and (filename, mode, args, kwargs) == (
            "<string>",
            "eval",
            (),
            {},
        ):
            return self.code(source, "eval")
        kwargs.setdefault("dont_inherit", True)
        return compile(source, filename, mode, *args, **kwargs)

    def compile(self, pattern, flags: int = 0) -> re.Pattern:
        """`re._compiler.compile` (what `re.compile` calls for a pattern it has not compiled in
        this process), with the code from the cache when there. A parsed pattern (`re.Scanner`)
        and the DEBUG flag, which prints the code, go to re's compiler."""
        if not isinstance(pattern, str | bytes) or flags & re.DEBUG:
            return _compile_afresh(pattern, flags)
        key = (pattern, int(flags))
        if (code := self.patterns.get(key)) is not None:
            with contextlib.suppress(TypeError, ValueError, RuntimeError):  # not code _sre takes
                compiled = _sre.compile(pattern, *code)
                self.used_patterns[key] = code
                return compiled
        code = pattern_code(pattern, flags)
        self.missed += 1
        self.used_patterns[key] = code
        return _sre.compile(pattern, *code)

    def compile_regex(self, pattern, flags, ignore_unused, kwargs, cache_it):
        """regex's `_compile` (what `regex.compile`, `regex.search`... call), with the code from
        the cache when there; a pattern is compiled once per process, as regex itself caches
        it. Named lists, patterns regex would not cache, the DEBUG flag (it prints the code),
        LOCALE patterns (their code depends on the locale) and compiled patterns go to regex."""
        import regex
        from regex import _regex  # type: ignore[attr-defined]

        if (
            kwargs
            or not cache_it
            or not isinstance(pattern, str | bytes)
            or flags & (regex.DEBUG | regex.LOCALE)
        ):
            return _compile_regex_afresh(pattern, flags, ignore_unused, kwargs, cache_it)
        key = (pattern, int(flags), int(regex.DEFAULT_VERSION), regex.__version__)
        compiled = self._compiled_regexes.get(key)
        if compiled is None:
            if (code := self.regexes.get(key)) is not None:
                with contextlib.suppress(Exception):  # not code _regex takes
                    compiled = _regex.compile(*code)
            if compiled is None:
                compiled = _compile_regex_afresh(pattern, flags, ignore_unused, kwargs, cache_it)
                if compiled.flags & regex.LOCALE:  # an inline (?L)
                    return compiled
                self.missed += 1
            self._compiled_regexes[key] = compiled
        if key not in self.used_regexes:
            self.used_regexes[key] = compiled._pickled_data
        return compiled

    def to_keep(self) -> Cached:
        """The cached entries and this run's (each command uses its own classes and patterns),
        unless that is more than the bound (entries of classes or patterns since edited or
        removed): then only this run's."""
        return (
            _bounded(self.cached, self.used, MAX_CODES),
            _bounded(self.patterns, self.used_patterns, MAX_PATTERNS),
            _bounded(self.regexes, self.used_regexes, MAX_PATTERNS),
        )


def _bounded(cached: dict, used: dict, most: int) -> dict:
    merged = {**cached, **used}
    return merged if len(merged) <= most else dict(used)


def pattern_code(pattern: str | bytes, flags: int) -> PatternCode:
    """What `re._compiler.compile` computes for `pattern` and hands `_sre.compile` (Python 3.11-
    3.13; tests/test_startup.py compares the two)."""
    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    # int(): re's opcodes are an int subclass, which marshal does not write
    return (
        int(flags | parsed.state.flags),
        [int(c) for c in code],
        parsed.state.groups - 1,
        groupindex,
        tuple(indexgroup),
    )


Cached = tuple[dict[CodeKey, CodeType], dict[PatternKey, PatternCode], dict[RegexKey, RegexCode]]


def read_codes(data: bytes) -> Cached:
    """A cache file's contents (a CRC-32, then the marshalled codes, re's patterns and regex's);
    all empty when it is anything else."""
    payload = memoryview(data)[4:]  # not a copy: the file is ~1 MB, each copy ~250 page faults
    if len(data) < 4 or zlib.crc32(payload).to_bytes(4, "big") != data[:4]:
        return {}, {}, {}
    try:
        codes, patterns, regexes = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return {}, {}, {}
    if not (
        isinstance(codes, dict)
        and all(
            isinstance(k, tuple) and len(k) == 2 and isinstance(v, CodeType)
            for k, v in codes.items()
        )
        and all(
            isinstance(d, dict)
            and all(isinstance(k, tuple) and isinstance(v, tuple) for k, v in d.items())
            for d in (patterns, regexes)
        )
    ):
        return {}, {}, {}
    return codes, patterns, regexes


def write_codes(
    codes: dict[CodeKey, CodeType],
    patterns: dict[PatternKey, PatternCode],
    regexes: dict[RegexKey, RegexCode] | None = None,
) -> bytes:
    payload = marshal.dumps((codes, patterns, regexes or {}))
    return zlib.crc32(payload).to_bytes(4, "big") + payload


_installed: CodeCache | None = None  # this process's, once `install` made it


def install() -> CodeCache:
    """The cache read from its file, put in front of dataclasses' `exec`, namedtuple's `eval`,
    typing's `compile` and the compilers of re and regex (once: a worker spawned from the
    console script has run the entry point's `begin` too)."""
    global _installed
    if _installed is not None:
        return _installed
    folder = cache_dir()
    cached: Cached = {}, {}, {}
    if folder is not None:
        with contextlib.suppress(OSError):
            cached = read_codes((folder / CODE_FILE).read_bytes())
    codes = CodeCache(*cached)
    # the modules' namespaces: their `exec`, `eval` and `compile` now find ours before the
    # builtins
    vars(dataclasses)["exec"] = codes.exec
    vars(collections)["eval"] = codes.eval
    vars(inspect)["eval"] = codes.eval
    vars(typing)["compile"] = codes.compile_source
    if hasattr(_compiler, "_code"):  # the compiler `pattern_code` follows (3.11-3.13)
        _compiler.compile = codes.compile  # re._compile looks it up at each call
    if "regex._main" in sys.modules:
        _stand_in_for_regex(sys.modules["regex._main"], codes)
    else:
        sys.meta_path.insert(0, _WhenRegexLoads(codes))
    _installed = codes
    return codes


def _stand_in_for_regex(main: ModuleType, codes: CodeCache) -> None:
    global _regex_compile
    _regex_compile = main._compile
    main._compile = codes.compile_regex  # type: ignore[attr-defined]  # looked up at each call


class _WhenRegexLoads(MetaPathFinder):
    """Puts the cache in front of regex's compiler as soon as `regex._main` is loaded."""

    def __init__(self, codes: CodeCache) -> None:
        self.codes = codes

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if name != "regex._main":
            return None
        sys.meta_path.remove(self)
        spec = PathFinder.find_spec(name, path)
        loader = spec.loader if spec is not None else None
        if loader is not None and hasattr(loader, "exec_module"):
            load = loader.exec_module

            def exec_module(module: ModuleType) -> None:
                load(module)
                _stand_in_for_regex(module, self.codes)

            loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """regex's patterns compiled meanwhile are left out of the file unless used again: those
    of a rule set's validation (~450), which a run from the cached rule set skips; loading them
    would cost it more than the ~10 it compiles."""
    codes = _installed
    if codes is None:
        yield
        return
    before = dict(codes.used_regexes)
    try:
        yield
    finally:
        codes.used_regexes = before


def save() -> None:
    """Rewrite the file when this run compiled something (after `install`)."""
    codes = _installed
    if codes is None or not codes.missed:
        return
    folder = cache_dir()
    if folder is None:
        return
    with contextlib.suppress(OSError), atomic_path(folder / CODE_FILE) as tmp:
        tmp.write_bytes(write_codes(*codes.to_keep()))
