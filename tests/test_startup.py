"""The code cache of the command line (analyzer/codecache.py): the cached dataclass methods,
namedtuple constructors, string annotations and regular expressions are what Python would
compile, a damaged cache file or entry is never used, and a warm run compiles nothing."""

from __future__ import annotations

import _sre
import collections
import contextlib
import dataclasses
import inspect
import os
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import regex
from regex import _regex  # type: ignore[attr-defined]

from analyzer import codecache
from analyzer.codecache import CODE_FILE, CodeCache, pattern_code, read_codes, write_codes

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO / "sample_bundles" / "healthy-single-gpu" / "bundle"


@contextlib.contextmanager
def in_front_of(module, name: str, hook):
    """`module`'s builtin `name` replaced by `hook` while the block runs."""
    namespace = vars(module)
    saved = namespace.get(name)
    namespace[name] = hook
    try:
        yield
    finally:
        if saved is None:
            del namespace[name]
        else:
            namespace[name] = saved


def _declare(cache: CodeCache):
    """A frozen dataclass declared with `cache` standing in for dataclasses' exec."""
    with in_front_of(dataclasses, "exec", cache.exec):

        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int = 0
            tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    return Point


def test_a_class_declared_from_the_cache_behaves_as_one_compiled_afresh():
    first = CodeCache({})
    Fresh = _declare(first)
    assert first.missed == len(first.used) > 0
    second = CodeCache(*read_codes(write_codes(first.used, {})))
    Cached = _declare(second)
    assert second.missed == 0
    for cls in (Fresh, Cached):
        p = cls(1)
        assert (p.x, p.y, p.tags) == (1, 0, ())
        assert repr(p).endswith("Point(x=1, y=0, tags=())")
        assert p == cls(1, 0) and hash(p) == hash(cls(1, 0)) and p != cls(2)
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 3  # type: ignore[misc]
        # compiled as dataclasses' own exec compiles: no `from __future__ import annotations`
        # of ours turning the return annotation into a string
        assert cls.__init__.__annotations__["return"] is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-10],  # truncated
        lambda data: data[:20] + bytes([data[20] ^ 1]) + data[21:],  # a flipped bit
        lambda data: b"",
        lambda data: b"\0\0",
    ],
    ids=["truncated", "flipped-bit", "empty", "short"],
)
def test_a_damaged_cache_file_is_not_used(damage):
    cache = CodeCache({})
    _declare(cache)
    cache.compile(r"(?P<word>\w+)", 0)
    cache.compile_regex(r"(?P<word>\w+)", 0, False, {}, True)
    written = write_codes(cache.used, cache.used_patterns, cache.used_regexes)
    assert read_codes(written) == (cache.used, cache.used_patterns, cache.used_regexes)
    assert read_codes(damage(written)) == ({}, {}, {})


def test_a_namedtuple_and_an_annotation_from_the_cache_are_the_ones_compiled_afresh():
    first = CodeCache({})
    with in_front_of(collections, "eval", first.eval):
        Fresh = collections.namedtuple("Fresh", "x y")
    with in_front_of(typing, "compile", first.compile_source):
        fresh_ref = typing.ForwardRef("list[Fresh] | None")
    assert first.missed == len(first.used) == 2
    second = CodeCache(*read_codes(write_codes(first.used, {})))
    with in_front_of(collections, "eval", second.eval):
        Cached = collections.namedtuple("Cached", "x y")
    with in_front_of(typing, "compile", second.compile_source):
        cached_ref = typing.ForwardRef("list[Fresh] | None")
    assert second.missed == 0
    assert Fresh(1, y=2) == Cached(1, y=2) == (1, 2)
    with pytest.raises(TypeError):
        Cached(1)
    # as typing compiles it (no `from __future__` of this module)
    reference = compile("list[Fresh] | None", "<string>", "eval", dont_inherit=True)
    for ref in (fresh_ref, cached_ref):
        assert ref.__forward_code__ == reference
        assert eval(ref.__forward_code__, {"Fresh": Fresh}) == list[Fresh] | None
    with pytest.raises(SyntaxError), in_front_of(typing, "compile", second.compile_source):
        typing.ForwardRef("two words")
    # any other call is compiled as the builtin does
    code = second.compile_source("x: int = 1", "<string>", "exec")
    assert code.co_filename == "<string>" and second.missed == 0


def test_string_annotations_inspect_evaluates_from_the_cache_are_the_builtins():
    """typer reads a command's parameters with `inspect.signature(eval_str=True)`, which evals
    each annotation written as a string (the command line's module has `from __future__ import
    annotations`): through the cache, as the builtin eval gives them (leading spaces and tabs
    dropped as it drops them; a text that is no expression is the same SyntaxError)."""

    def command(a, b, c=1): ...

    command.__annotations__ = {
        "a": "list[int] | None",
        "b": "  dict[str, Path]",
        "c": "\tint",
        "return": "str",
    }
    expected = inspect.get_annotations(command, eval_str=True)  # the builtin eval
    first = CodeCache({})
    with in_front_of(inspect, "eval", first.eval):
        fresh = inspect.get_annotations(command, eval_str=True)
    assert first.missed == 4
    second = CodeCache(*read_codes(write_codes(first.used, {})))
    with in_front_of(inspect, "eval", second.eval):
        cached = inspect.get_annotations(command, eval_str=True)
        signature = inspect.signature(command, eval_str=True)  # what typer asks
    assert second.missed == 0
    assert [p.annotation for p in signature.parameters.values()] == [
        list[int] | None,
        dict[str, Path],
        int,
    ]
    assert (
        fresh
        == cached
        == expected
        == {
            "a": list[int] | None,
            "b": dict[str, Path],
            "c": int,
            "return": str,
        }
    )
    command.__annotations__ = {"a": "two words"}
    with pytest.raises(SyntaxError), in_front_of(inspect, "eval", second.eval):
        inspect.get_annotations(command, eval_str=True)


def test_a_cache_file_holding_anything_but_code_is_not_used():
    code = compile("1", "<string>", "eval")
    nothing = ({}, {}, {})
    assert read_codes(write_codes({("exec", "def f(): pass"): "not code"}, {})) == nothing  # type: ignore[dict-item]
    assert read_codes(write_codes({"1": code}, {})) == nothing  # type: ignore[dict-item]
    assert read_codes(write_codes([code], {})) == nothing  # type: ignore[arg-type]
    assert read_codes(write_codes({}, {"a": "not a pattern's code"})) == nothing  # type: ignore[dict-item]
    assert read_codes(write_codes({}, {}, {"a": "not a pattern's code"})) == nothing  # type: ignore[dict-item]


# patterns of the kinds re compiles differently: named groups, inline and passed flags, bytes,
# look-arounds, back-references, repeats, classes, Unicode, verbose, conditionals
PATTERNS: list[tuple[str | bytes, int]] = [
    (r"^(?P<level>[IWEF])(?P<date>\d{4}) (?P<time>[\d:.]+)\s+(?P<pid>\d+) (?P<src>[^]]+)\] ", 0),
    (r"(?i)nvidia-smi.*(?:failed|not found)", 0),
    (r"device[- ]plugin", re.IGNORECASE | re.MULTILINE),
    (rb"\nE\d{4} ", 0),
    (r"(?<=node )\S+(?!\.local)", 0),
    (r"(['\"])(.*?)\1", re.DOTALL),
    (r"[^\x00-\x1f\x7f-\x9f]{3,}?|\b\d+\b", 0),
    (r"显存|内存\s*不足", 0),
    (r"(?x) a \s+ b  # a comment", 0),
    (r"(<)?\w+(?(1)>|$)", re.ASCII),
]


def _compiled_by_re(pattern: str | bytes, flags: int) -> tuple:
    """What re's own compiler hands _sre.compile for `pattern`."""
    seen: list[tuple] = []

    class Recorder:
        def __getattr__(self, name):
            return getattr(_sre, name)

        @staticmethod
        def compile(*args):
            seen.append(args)
            return _sre.compile(*args)

    saved = re._compiler._sre  # type: ignore[attr-defined]
    re._compiler._sre = Recorder()  # type: ignore[attr-defined]
    try:
        codecache._compile_afresh(pattern, flags)
    finally:
        re._compiler._sre = saved  # type: ignore[attr-defined]
    return seen[0]


@pytest.mark.parametrize(("pattern", "flags"), PATTERNS)
def test_a_pattern_from_the_cache_is_the_one_re_compiles(pattern, flags):
    assert (pattern, *pattern_code(pattern, flags)) == _compiled_by_re(pattern, flags)
    first = CodeCache({})
    fresh = first.compile(pattern, flags)
    assert first.missed == 1
    second = CodeCache(*read_codes(write_codes({}, first.used_patterns)))
    cached = second.compile(pattern, flags)
    assert second.missed == 0
    reference = codecache._compile_afresh(pattern, flags)
    for compiled in (fresh, cached):
        assert (compiled.pattern, compiled.flags, compiled.groups, compiled.groupindex) == (
            reference.pattern,
            reference.flags,
            reference.groups,
            reference.groupindex,
        )


# patterns of regex's own syntax: possessive and atomic groups, Unicode properties, fuzzy
# matching, variable look-behind, version 1, flags passed and inline, bytes
REGEXES: list[tuple[str | bytes, int]] = [
    (r"(?P<pod>[\w.-]++)/(?>\d+)", 0),
    (r"\p{Han}+|\p{InCJK_Symbols_and_Punctuation}", 0),
    (r"(?:nvidia){e<=1}", 0),
    (r"(?<=node \w+ )ready", regex.IGNORECASE),
    (r"(?V1)[\w--_]+", 0),
    (rb"\nE\d{4} ", 0),
]


@pytest.mark.parametrize(("pattern", "flags"), REGEXES)
def test_a_regex_pattern_from_the_cache_is_the_one_regex_compiles(pattern, flags):
    first = CodeCache({})
    fresh = first.compile_regex(pattern, flags, False, {}, True)
    assert first.missed == 1 and first.compile_regex(pattern, flags, False, {}, True) is fresh
    second = CodeCache(*read_codes(write_codes({}, {}, first.used_regexes)))
    cached = second.compile_regex(pattern, flags, False, {}, True)
    assert second.missed == 0
    reference = codecache._compile_regex_afresh(pattern, flags, False, {}, False)
    for compiled in (fresh, cached):
        assert compiled._pickled_data == reference._pickled_data
        assert (compiled.pattern, compiled.flags, compiled.groupindex) == (
            reference.pattern,
            reference.flags,
            reference.groupindex,
        )


def test_regex_named_lists_debug_and_locale_go_to_regex(capsys):
    cache = CodeCache({})
    assert cache.compile_regex(r"\L<gpus>", 0, False, {"gpus": ["a100"]}, True).search("a100")
    cache.compile_regex("a+", regex.DEBUG, False, {}, True)
    assert "GREEDY_REPEAT" in capsys.readouterr().out
    cache.compile_regex(r"(?L)\w+", 0, False, {}, True)
    cache.compile_regex("b+", 0, False, {}, False)  # regex.compile(..., cache_pattern=False)
    assert cache.used_regexes == {} and cache.missed == 0


def test_a_cached_regex_entry_that_is_not_valid_code_is_compiled_afresh():
    key = (r"(?P<n>\d+) GPUs", 0, int(regex.DEFAULT_VERSION), regex.__version__)
    good = codecache._compile_regex_afresh(key[0], 0, False, {}, False)._pickled_data
    cache = CodeCache({}, {}, {key: ("not", "code")})
    compiled = cache.compile_regex(key[0], 0, False, {}, True)
    assert compiled.match("8 GPUs").group("n") == "8"
    assert cache.missed == 1 and cache.used_regexes[key] == good


def test_patterns_compiled_while_unrecorded_are_not_kept_unless_used_again(monkeypatch):
    cache = CodeCache({})
    monkeypatch.setattr(codecache, "_installed", cache)
    with codecache.unrecorded():
        cache.compile_regex("validated", 0, False, {}, True)
        cache.compile_regex("used later", 0, False, {}, True)
    cache.compile_regex("used later", 0, False, {}, True)
    assert [k[0] for k in cache.used_regexes] == ["used later"]


def test_a_cached_pattern_entry_that_is_not_valid_code_is_compiled_afresh():
    good = pattern_code(r"(?P<n>\d+) GPUs", 0)
    bad = (good[0], [99999, *good[1][1:]], *good[2:])
    cache = CodeCache({}, {(r"(?P<n>\d+) GPUs", 0): bad})  # type: ignore[dict-item]
    compiled = cache.compile(r"(?P<n>\d+) GPUs", 0)
    assert compiled.match("8 GPUs").group("n") == "8"  # type: ignore[union-attr]
    assert cache.missed == 1 and cache.used_patterns[(r"(?P<n>\d+) GPUs", 0)] == good


def test_a_parsed_pattern_and_the_debug_flag_go_to_re(capsys, monkeypatch):
    cache = CodeCache({})
    monkeypatch.setattr(re._compiler, "compile", cache.compile)  # type: ignore[attr-defined]
    scanner = re.Scanner(
        [(r"\d+", lambda _, text: int(text)), (r"\s+", None)]
    )  # compiles a parsed pattern
    cache.compile("a+", re.DEBUG)
    assert scanner.scan("1 22") == ([1, 22], "")
    assert "MAX_REPEAT" in capsys.readouterr().out
    assert cache.used_patterns == {} and cache.missed == 0


def test_the_cache_keeps_what_other_commands_used_up_to_its_bound(monkeypatch):
    monkeypatch.setattr(codecache, "MAX_CODES", 6)
    monkeypatch.setattr(codecache, "MAX_PATTERNS", 2)
    code = compile("pass", "<string>", "exec")
    cache = CodeCache(
        {("exec", f"old {i}"): code for i in range(3)}, {("old", 0): pattern_code("old", 0)}
    )
    cache.used = {("exec", f"new {i}"): code for i in range(3)}
    cache.compile("new", 0)
    codes, patterns, _ = cache.to_keep()
    assert (len(codes), set(patterns)) == (6, {("old", 0), ("new", 0)})
    cache.used[("exec", "new 3")] = code  # 7 > 6: the texts of classes since edited go
    cache.compile("newer", 0)  # 3 > 2: the same for patterns
    codes, patterns, _ = cache.to_keep()
    assert set(codes) == {("exec", f"new {i}") for i in range(4)}
    assert set(patterns) == {("new", 0), ("newer", 0)}


def _analyze(cache_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", "analyze", str(BUNDLE), "--format", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home)},
    )


def test_a_warm_run_compiles_no_dataclass_and_a_damaged_cache_file_is_rewritten(tmp_path):
    first = _analyze(tmp_path)
    assert first.returncode == 0, first.stderr
    path = tmp_path / "hami-bundle-analyzer" / CODE_FILE
    written = path.read_bytes()
    codes, patterns, regexes = read_codes(written)
    assert len(codes) > 100  # the dataclass methods of a small run
    # and the string annotations its dependencies check
    assert ("eval", "bool | None") in codes
    assert len(patterns) > 100  # the patterns its modules and the recognition compile
    for (pattern, flags), code in patterns.items():  # the code re's compiler would give
        assert (pattern, *code) == _compiled_by_re(pattern, flags)
    # regex's: the analyzer's modules' and rules' patterns, not the ~450 the rules' validation
    # compiled (the rule cache keeps those)
    assert 3 < len(regexes) < 50
    for (pattern, flags, version, _), code in regexes.items():  # regex's own compile of each
        # (its code lists a set's members in the order of the process's string hashes)
        reference = codecache._compile_regex_afresh(pattern, flags | version, False, {}, False)
        compiled = _regex.compile(*code)
        assert (compiled.pattern, compiled.flags, compiled.groupindex) == (
            reference.pattern,
            reference.flags,
            reference.groupindex,
        )
    os.utime(path, ns=(1, 1))
    second = _analyze(tmp_path)
    assert (second.returncode, second.stdout) == (0, first.stdout)
    assert path.stat().st_mtime_ns == 1  # nothing missed, nothing rewritten
    path.write_bytes(written[: len(written) // 2])
    third = _analyze(tmp_path)
    assert (third.returncode, third.stdout) == (0, first.stdout)
    codes, patterns, regexes = read_codes(path.read_bytes())
    # the first run also validated the rules, with patterns a run from the cached rules skips
    assert codes == read_codes(written)[0] and patterns.items() < read_codes(written)[1].items()
    assert regexes.keys() == read_codes(written)[2].keys()


def test_importing_the_package_leaves_the_standard_library_alone():
    """Only the command line's entry point puts the cache in front of dataclasses' exec,
    namedtuple's and inspect's eval, typing's compile and the compilers of re and regex."""
    code = (
        "import collections, dataclasses, inspect, re, regex, typing, analyzer.analyze, "
        "analyzer.cli; "
        "print('exec' in vars(dataclasses), 'eval' in vars(collections), "
        "'compile' in vars(typing), 'eval' in vars(inspect), re._compiler.compile.__module__, "
        "regex._main._compile.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"] * 4 + ["re._compiler", "regex._main"]


def test_a_command_that_never_uses_regex_does_not_import_it_for_the_cache(tmp_path):
    """The cache stands in for regex's compiler when regex is imported, not before: `version`
    (and `--help`) import no regex."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "analyzer", "version"],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert "analyzer.codecache" in imported and "regex" not in imported


def _hooks(conn) -> None:
    """Sent back from a spawned worker: whether the standard library goes through the cache."""
    installed = codecache._installed
    conn.send(
        (
            vars(dataclasses).get("exec") == getattr(installed, "exec", None),
            vars(collections).get("eval") == getattr(installed, "eval", None),
            vars(inspect).get("eval") == getattr(installed, "eval", None),
            vars(typing).get("compile") == getattr(installed, "compile_source", None),
            re._compiler.compile == getattr(installed, "compile", None),  # type: ignore[attr-defined]
            regex._main._compile == getattr(installed, "compile_regex", None),  # type: ignore[attr-defined]
        )
    )


def test_a_spawned_worker_starts_with_the_code_cache(tmp_path, monkeypatch):
    """`python -m analyzer batch` spawns its workers with no entry point of ours run in them:
    `startup.spawned` puts the cache in place before the worker's modules are imported."""
    import multiprocessing

    from analyzer import startup

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    worker = ctx.Process(target=startup.spawned, args=(f"{__name__}:_hooks", theirs))
    worker.start()
    theirs.close()
    assert ours.poll(60) and ours.recv() == (True,) * 6
    worker.join(10)
    assert worker.exitcode == 0


def test_a_module_the_dependencies_import_but_seldom_use_runs_at_its_first_use():
    """`startup.DEFERRED`: importlib.metadata is imported by polars as it is imported, and run
    only when something reads it; then it is the module Python would have run."""
    code = (
        "import sys\n"
        "from analyzer import startup\n"
        "startup.begin()\n"
        "import polars\n"
        "deferred = sys.modules['importlib.metadata']\n"
        "print(type(deferred).__name__, 'email' in sys.modules)\n"
        "from importlib.metadata import version\n"
        "print(version('polars') == polars.__version__, type(deferred).__name__)\n"
        "import importlib.metadata as m\n"
        "print(m is deferred, 'email' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "_LazyModule False",  # imported, not run: nor what it imports
        "True module",  # run at the first look into it
        "True True",
    ]


def test_a_call_on_a_wide_stack_runs_above_a_frame_of_its_own_size():
    """`startup.on_a_wide_stack` returns what the function returns, raises what it raises, and
    calls it from a frame of more than half a 256 KiB block of frames (8-byte slots)."""
    from analyzer import startup

    def caller_slots() -> int:
        return sys._getframe(1).f_code.co_nlocals

    assert startup.on_a_wide_stack(caller_slots) * 8 > 128 * 1024
    assert startup.on_a_wide_stack(divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):
        startup.on_a_wide_stack(divmod, 1, 0)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_small_run_does_not_map_blocks_of_frames_again_and_again(tmp_path):
    """CPython maps a 16 KiB block for frames past the end of the last one and unmaps it when
    they return: the command line runs on one wide block, so a small run maps a handful, not the
    600-1,700 it did when its imports and calls kept crossing a block's end."""
    trace = tmp_path / "mmap.txt"
    assert _analyze(tmp_path).returncode == 0  # the caches filled
    subprocess.run(
        ["strace", "-f", "-e", "trace=mmap", "-o", str(trace), sys.executable, "-m", "analyzer"]
        + ["analyze", str(BUNDLE), "--format", "json"],
        capture_output=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
        check=True,
    )
    blocks = trace.read_text().count("mmap(NULL, 16384,")
    assert blocks < 50, f"{blocks} blocks of frames mapped"
