"""The cache folder's files (`analyzer/cache.py`): what is kept is what was used last."""

from __future__ import annotations

import os

from analyzer.cache import kept

KEEP = ("db-*.bin", 2)


def _kept(folder, name: str, made: list[str]) -> bytes:
    def make() -> bytes:
        made.append(name)
        return name.encode()

    return kept(folder, name, KEEP, lambda data: data, make, lambda value: value)


def test_an_entry_read_outlives_one_made_after_it_but_unused(tmp_path):
    """Two kept, three in use in turn: the one read again stays; kept by when they were made, a
    run that used more than it keeps compiled one of them again each time."""
    made: list[str] = []
    _kept(tmp_path, "db-a.bin", made)
    _kept(tmp_path, "db-b.bin", made)
    old = (tmp_path / "db-a.bin").stat().st_mtime - 60
    os.utime(tmp_path / "db-a.bin", (old, old))
    os.utime(tmp_path / "db-b.bin", (old + 1, old + 1))
    assert _kept(tmp_path, "db-a.bin", made) == b"db-a.bin"  # read: no make
    _kept(tmp_path, "db-c.bin", made)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db-a.bin", "db-c.bin"]
    assert made == ["db-a.bin", "db-b.bin", "db-c.bin"]
    assert _kept(tmp_path, "db-a.bin", made) == b"db-a.bin"
    assert made == ["db-a.bin", "db-b.bin", "db-c.bin"]


def test_without_a_folder_the_value_is_made_each_time():
    made: list[str] = []
    assert _kept(None, "db-a.bin", made) == b"db-a.bin"
    assert _kept(None, "db-a.bin", made) == b"db-a.bin"
    assert made == ["db-a.bin", "db-a.bin"]


def test_a_rule_set_read_from_the_cache_is_touched(tmp_path, monkeypatch):
    """The cached rule sets are pruned by their times like the other entries: the one read is
    marked as used (`rules/loader.py`)."""
    from analyzer.rules.loader import load_ruleset

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    load_ruleset()
    (kept_set,) = (tmp_path / "hami-bundle-analyzer").glob("rules-*.pickle")
    old = kept_set.stat().st_mtime - 3600
    os.utime(kept_set, (old, old))
    load_ruleset()
    assert kept_set.stat().st_mtime > old + 3000
