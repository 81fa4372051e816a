"""Our modules' code read from one file of the cache folder (analyzer/modcache.py)."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from analyzer import modcache
from analyzer.install import PACKAGE

BUNDLE = Path(__file__).resolve().parent.parent / "sample_bundles" / "healthy-single-gpu" / "bundle"

# a process started as the command line starts, reporting how its modules were loaded
PROBE = (
    "import sys\n"
    "from analyzer import startup, modcache\n"
    "startup.begin()\n"
    "import analyzer.analyze, analyzer.cli\n"
    "m = sys.modules['analyzer.analyze']\n"
    "print(type(m.__spec__.loader).__name__, m.__file__)\n"
    "print(analyzer.analyze.analyze.__code__.co_filename)\n"
)


def _run(cache_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home)},
    )


def _analyze(cache_home: Path) -> subprocess.CompletedProcess[str]:
    return _run(cache_home, "-m", "analyzer", "analyze", str(BUNDLE), "--format", "json")


def _module_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "hami-bundle-analyzer").glob("modules-*.marshal"))


def test_a_warm_run_reads_its_modules_from_the_file_and_gives_the_same_report(tmp_path):
    first = _analyze(tmp_path)
    assert first.returncode == 0, first.stderr
    [path] = _module_files(tmp_path)
    index, code = modcache._read(path)
    assert {"analyzer.analyze", "analyzer.rules.engine", "analyzer.facts"} <= index.keys()
    relative, package, mtime, length, at, size, _crc = index["analyzer.facts"]
    assert (relative, package) == ("facts/__init__.py", True)
    facts_stat = (PACKAGE / "facts" / "__init__.py").stat()
    assert (mtime, length) == (facts_stat.st_mtime_ns, facts_stat.st_size)
    # each module's code is what Python compiles from its source
    facts = PACKAGE / "facts" / "__init__.py"
    assert marshal.loads(code[at : at + size]) == compile(
        facts.read_bytes(), str(facts), "exec", dont_inherit=True
    )
    os.utime(path, ns=(1, 1))
    second = _analyze(tmp_path)
    assert (second.returncode, second.stdout) == (0, first.stdout)
    assert path.stat().st_mtime_ns == 1  # it held every module: not rewritten
    probe = _run(tmp_path, "-c", PROBE)
    loader, file = probe.stdout.splitlines()[0].split(" ", 1)
    # the module's file and its code's are the source's, as Python's own import gives them
    assert (loader, file) == ("_Cached", str(PACKAGE / "analyze.py"))
    assert probe.stdout.splitlines()[1] == str(PACKAGE / "analyze.py")


def _file_of(index: object, code: bytes = b"") -> bytes:
    head = marshal.dumps(index)
    return len(head).to_bytes(modcache.HEADER, "big") + head + code


def _entry(code: bytes, crc: int | None = None) -> tuple:
    source = (PACKAGE / "analyze.py").stat()
    crc = zlib.crc32(code) if crc is None else crc
    return ("analyze.py", False, source.st_mtime_ns, source.st_size, 0, len(code), crc)


@pytest.mark.parametrize(
    "content",
    [
        b"",  # empty
        b"\x00garbage\xff" * 10,  # not marshal
        (1 << 40).to_bytes(8, "big") + b"x",  # an index longer than the file
        _file_of(["analyzer.analyze"]),  # not a mapping
        _file_of({"os": ("os.py", False, 0, 0, 0, 0, 0)}),  # not one of ours
        _file_of(
            {"analyzer.analyze": ("analyze.py", False, 0, 0, 0, 99, 0)}, b"short"
        ),  # past the end
        _file_of({"analyzer.analyze": _entry(b"junk!")}, b"junk!"),  # not code
        # code whose CRC-32 is not the recorded one (a byte changed: its code could crash)
        _file_of(
            {"analyzer.analyze": _entry(marshal.dumps(compile("x = 1", "a", "exec")), 7)},
            marshal.dumps(compile("x = 1", "a", "exec")),
        ),
    ],
)
def test_a_file_that_does_not_hold_what_save_writes_is_ignored_and_rewritten(tmp_path, content):
    first = _analyze(tmp_path)
    [path] = _module_files(tmp_path)
    path.write_bytes(content)
    second = _analyze(tmp_path)
    assert (second.returncode, second.stdout) == (0, first.stdout), second.stderr
    assert "analyzer.analyze" in modcache._read(path)[0]


def test_a_module_the_file_lacks_is_imported_as_python_does_and_added(tmp_path):
    assert _analyze(tmp_path).returncode == 0
    [path] = _module_files(tmp_path)
    entries = modcache._read(path)[0]
    assert "analyzer.render.markdown" not in entries  # `--format json` does not import it
    probe = PROBE + (
        "import analyzer.render.markdown as md\n"
        "print(type(md.__spec__.loader).__name__)\n"
        "modcache.save()\n"
    )
    out = _run(tmp_path, "-c", probe)
    assert out.stdout.splitlines()[2] == "SourceFileLoader", out.stderr
    assert entries.keys() < modcache._read(path)[0].keys()
    assert "analyzer.render.markdown" in modcache._read(path)[0]


def test_the_file_is_named_by_the_code_and_the_package_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = modcache._file()
    monkeypatch.setattr(modcache, "code_digest", lambda: ("edited", False))
    assert modcache._file() not in (None, first)
    edited = modcache._file()
    monkeypatch.setattr(modcache, "PACKAGE", Path("/elsewhere/analyzer"))
    assert modcache._file() not in (None, first, edited)


def test_every_byte_changed_in_turn_is_caught_or_harmless(tmp_path):
    """A damaged file never crashes a run: a byte changed anywhere in a module's code fails its
    CRC-32 (then Python imports the module), anywhere in the index the file is ignored."""
    assert _analyze(tmp_path).returncode == 0
    [path] = _module_files(tmp_path)
    good = path.read_bytes()
    index, _ = modcache._read(path)
    head = modcache.HEADER + int.from_bytes(good[: modcache.HEADER], "big")
    at, size = index["analyzer.cli"][4:6]
    for offset in (3, head // 2, head + at, head + at + size // 2, head + at + size - 1):
        damaged = bytearray(good)
        damaged[offset] ^= 0x5A
        path.write_bytes(bytes(damaged))
        probe = _run(tmp_path, "-c", PROBE + "modcache.save()\n")
        assert probe.returncode == 0, (offset, probe.stderr[-300:])


def test_a_module_edited_since_is_imported_from_its_source(tmp_path, monkeypatch):
    """The source's time and size are checked as Python checks a .pyc: an entry recorded for
    another version of the file is not served (an edit in place, in a wheel whose RECORD stays)."""
    code = marshal.dumps(compile("VALUE = 'cached'", str(PACKAGE / "analyze.py"), "exec"))
    relative, package, mtime, size, *_ = _entry(code)
    stale = {
        "analyzer.analyze": (relative, package, mtime - 1, size, 0, len(code), zlib.crc32(code))
    }
    cache = modcache.ModuleCache(None, stale, memoryview(code))
    assert cache.find_spec("analyzer.analyze") is None
    assert cache.damaged == {"analyzer.analyze"} and cache.missed
    fresh = modcache.ModuleCache(None, {"analyzer.analyze": _entry(code)}, memoryview(code))
    spec = fresh.find_spec("analyzer.analyze")
    assert spec is not None and spec.origin == str(PACKAGE / "analyze.py")
    assert fresh.find_spec("analyzer.analyze", target=object()) is None  # a reload: the file's


def test_an_optimised_run_keeps_its_code_apart(tmp_path):
    names = {
        flags: _run(
            tmp_path, *flags, "-c", "from analyzer import modcache; print(modcache._file())"
        ).stdout.strip()
        for flags in ((), ("-O",), ("-OO",))
    }
    assert len(set(names.values())) == 3, names
