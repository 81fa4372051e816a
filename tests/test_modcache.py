"""Our modules' code read from one file of the cache folder (analyzer/modcache.py)."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
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
    relative, package, at, size = index["analyzer.facts"]
    assert (relative, package) == ("facts/__init__.py", True)
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
    assert (loader, file) == ("ModuleCache", str(PACKAGE / "analyze.py"))
    assert probe.stdout.splitlines()[1] == str(PACKAGE / "analyze.py")


def _file_of(index: object, code: bytes = b"") -> bytes:
    head = marshal.dumps(index)
    return len(head).to_bytes(modcache.HEADER, "big") + head + code


@pytest.mark.parametrize(
    "content",
    [
        b"",  # empty
        b"\x00garbage\xff" * 10,  # not marshal
        (1 << 40).to_bytes(8, "big") + b"x",  # an index longer than the file
        _file_of(["analyzer.analyze"]),  # not a mapping
        _file_of({"os": ("os.py", False, 0, 0)}),  # not one of ours
        _file_of({"analyzer.analyze": ("analyze.py", False, 0, 99)}, b"short"),  # past the end
        _file_of({"analyzer.analyze": ("analyze.py", False, 0, 5)}, b"junk!"),  # not code
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
