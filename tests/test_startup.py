"""The dataclass code cache of the command line (analyzer/codecache.py): the cached code is the
code Python would compile, a damaged cache file is never used, and a warm run compiles nothing."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer import codecache
from analyzer.codecache import CODE_FILE, CodeCache, read_codes, write_codes

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO / "sample_bundles" / "healthy-single-gpu" / "bundle"


def _declare(cache: CodeCache):
    """A frozen dataclass declared with `cache` standing in for dataclasses' exec."""
    namespace = vars(dataclasses)
    saved = namespace.get("exec")
    namespace["exec"] = cache.exec
    try:

        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int = 0
            tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    finally:
        if saved is None:
            del namespace["exec"]
        else:
            namespace["exec"] = saved
    return Point


def test_a_class_declared_from_the_cache_behaves_as_one_compiled_afresh():
    first = CodeCache({})
    Fresh = _declare(first)
    assert first.missed == len(first.used) > 0
    second = CodeCache(read_codes(write_codes(first.used)))
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
    assert read_codes(write_codes(cache.used)) == cache.used
    assert read_codes(damage(write_codes(cache.used))) == {}


def test_a_cache_file_holding_anything_but_code_is_not_used():
    assert read_codes(write_codes({"def f(): pass": "not code"})) == {}  # type: ignore[dict-item]
    assert read_codes(write_codes([compile("1", "<string>", "eval")])) == {}  # type: ignore[arg-type]


def test_the_cache_keeps_what_other_commands_used_up_to_its_bound(monkeypatch):
    monkeypatch.setattr(codecache, "MAX_CODES", 6)
    code = compile("pass", "<string>", "exec")
    cache = CodeCache({f"old {i}": code for i in range(3)})
    cache.used = {f"new {i}": code for i in range(3)}
    assert len(cache.to_keep()) == 6
    cache.used["new 3"] = code  # 7 > 6: the texts of classes since edited go
    assert set(cache.to_keep()) == {f"new {i}" for i in range(4)}


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
    assert len(read_codes(written)) > 100  # the dataclass methods of a small run
    os.utime(path, ns=(1, 1))
    second = _analyze(tmp_path)
    assert (second.returncode, second.stdout) == (0, first.stdout)
    assert path.stat().st_mtime_ns == 1  # nothing missed, nothing rewritten
    path.write_bytes(written[: len(written) // 2])
    third = _analyze(tmp_path)
    assert (third.returncode, third.stdout) == (0, first.stdout)
    assert read_codes(path.read_bytes()) == read_codes(written)


def test_importing_the_package_leaves_dataclasses_alone():
    """Only the command line's entry point puts the cache in front of dataclasses' exec."""
    code = "import dataclasses, analyzer.analyze, analyzer.cli; print('exec' in vars(dataclasses))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
