"""The cached rule set (analyzer/rules/loader.py): read back while the rules are unchanged,
rebuilt when a rule file changes (the built-in ones known by their stamp, folders given with
--rules by their content) or when the cache file is damaged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from analyzer.rules import builtin_rules_dir
from analyzer.rules import loader as loader_mod
from analyzer.rules.loader import load_ruleset

SIGNATURE = (
    "signatures:\n  - id: sym-test-cached\n    component: issue\n    origin: test\n"
    "    source: [issue-text]\n    symptom: true\n    scanned_in: [issue-text, text]\n"
    "    regex: 'the plugin keeps dying'\n    meaning: {meaning}\n"
    "    examples:\n      match: ['the plugin keeps dying']\n"
)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder, and a copy of the shipped rules the loader takes for the built-in
    ones (so that a test may edit them)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), root)
    monkeypatch.setattr(loader_mod, "builtin_rules_dir", lambda: root)
    return tmp_path / "cache" / "hami-bundle-analyzer"


def _no_rebuild(monkeypatch) -> None:
    def rebuild(*_args):
        raise AssertionError("the rules were validated again instead of read from the cache")

    monkeypatch.setattr(loader_mod, "_load_ruleset", rebuild)


def _edit(path: Path, old: str, new: str) -> None:
    """Replace `old` with `new`, of the same length: the file keeps its size."""
    assert len(old) == len(new)
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer has {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_unchanged_rules_are_read_back_from_the_cache(cache, monkeypatch):
    built = load_ruleset()
    (cached,) = cache.glob("rules-*.pickle")
    _no_rebuild(monkeypatch)
    again = load_ruleset()
    assert again is not built and again.version == built.version
    assert again.rules.keys() == built.rules.keys()
    assert list(cache.glob("rules-*.pickle")) == [cached]


def test_an_edited_built_in_rule_file_is_validated_again(cache):
    symptoms = loader_mod.builtin_rules_dir() / "signatures" / "symptoms.yaml"
    before = load_ruleset()
    _edit(symptoms, "The reporter says the device-plugin", "The REPORTER says the device-plugin")
    after = load_ruleset()
    assert after.signatures["sym-plugin-restarts"].meaning.startswith("The REPORTER says")
    assert after.version != before.version  # the version a diagnosis cites is the content's


def test_a_rules_folder_is_keyed_by_its_content_not_its_time(cache, tmp_path):
    """A script may rewrite a --rules file within the clock's resolution: same size, same time."""
    extra = tmp_path / "extra"
    extra.mkdir()
    rule_file = extra / "cached.yaml"
    rule_file.write_text(SIGNATURE.format(meaning="first"), encoding="utf-8")
    assert load_ruleset([extra]).signatures["sym-test-cached"].meaning == "first"
    stat = rule_file.stat()
    rule_file.write_text(SIGNATURE.format(meaning="again"), encoding="utf-8")
    os.utime(rule_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert load_ruleset([extra]).signatures["sym-test-cached"].meaning == "again"


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"not a pickle at all",
        lambda b: b"",
    ],
    ids=["truncated", "garbage", "empty"],
)
def test_a_damaged_cache_file_is_rebuilt(cache, monkeypatch, damage):
    built = load_ruleset()
    (cached,) = cache.glob("rules-*.pickle")
    cached.write_bytes(damage(cached.read_bytes()))
    assert load_ruleset().version == built.version
    _no_rebuild(monkeypatch)  # and the rebuilt file is sound again
    assert load_ruleset().rules.keys() == built.rules.keys()


def test_the_parsed_phrases_are_read_back_until_their_text_changes(tmp_path, monkeypatch):
    """analyzer/catalogue/messages.yaml is parsed once per text: the parsed mapping is kept in
    the cache folder, a damaged copy is parsed again, an edited text gets its own."""
    from analyzer.catalogue import messages
    from analyzer.structured import load_yaml

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    phrases = tmp_path / "messages.yaml"
    shutil.copyfile(messages.MESSAGES_PATH, phrases)
    monkeypatch.setattr(messages, "MESSAGES_PATH", phrases)
    parses: list[str] = []
    monkeypatch.setattr(messages, "load_yaml", lambda text: parses.append(text) or load_yaml(text))

    def fresh() -> dict:
        messages._messages.cache_clear()
        return messages._messages()

    parsed = load_yaml(phrases.read_text(encoding="utf-8"))["messages"]
    assert (fresh(), len(parses)) == (parsed, 1)
    assert (fresh(), len(parses)) == (parsed, 1)  # read back
    [kept] = (tmp_path / "cache" / "hami-bundle-analyzer").glob("messages-*.json")
    kept.write_text('{"cut": ', encoding="utf-8")
    assert (fresh(), len(parses)) == (parsed, 2)  # parsed again
    assert (fresh(), len(parses)) == (parsed, 2)  # and written again
    phrases.write_text(
        phrases.read_text(encoding="utf-8").replace("No fault found", "Nothing wrong"),
        encoding="utf-8",
    )
    assert fresh()["verdict-healthy"]["en"].startswith("Nothing wrong")
    assert len(list(kept.parent.glob("messages-*.json"))) == 2
    messages._messages.cache_clear()


PACKED = {  # the fields a run seldom reads, pickled apart (analyzer/packed.py)
    "rules": ("explanation", "remediation", "references", "zh", "tests"),
    "signatures": ("examples_match", "examples_no_match", "origin", "references"),
}


def _still_packed(ruleset) -> bool:
    return all(
        not any(name in item.__dict__ for name in names)
        for part, names in PACKED.items()
        for item in getattr(ruleset, part).values()
    )


def test_a_cached_rules_seldom_read_fields_are_read_back_when_asked(cache, monkeypatch):
    """A rule's texts beyond its title and its self-tests, a signature's examples, origin and
    references, are pickled apart and read back on first use: the same as the validated rule
    set's, and a run that never asks for them does not unpickle them."""
    from analyzer.catalogue.signatures import Signature
    from analyzer.rules.model import Rule

    for cls, part in ((Rule, "rules"), (Signature, "signatures")):
        # a class-level default would hide the packed value
        assert not any(hasattr(cls, name) for name in PACKED[part])
    validated = load_ruleset()
    _no_rebuild(monkeypatch)
    cached = load_ruleset()
    assert _still_packed(cached)
    rule = cached.rules["nvml-init-failed"]
    assert rule.title == validated.rules["nvml-init-failed"].title  # no field read back
    assert not any(name in rule.__dict__ for name in PACKED["rules"])
    assert rule.explanation == validated.rules["nvml-init-failed"].explanation
    assert all(name in rule.__dict__ for name in PACKED["rules"])  # all at once
    assert cached.rules == validated.rules and cached.signatures == validated.signatures
    assert sum(bool(r.tests) for r in cached.rules.values()) > 100
    assert sum(bool(s.examples_match) for s in cached.signatures.values()) > 200
    with pytest.raises(AttributeError):
        _ = next(iter(cached.rules.values())).no_such_field
    with pytest.raises(AttributeError):
        _ = next(iter(cached.signatures.values())).no_such_field


def test_a_cached_rule_set_pickles_again_with_its_fields_still_packed(cache, monkeypatch):
    """A rule set read from the cache, its packed fields never asked for, can be pickled again
    (to hand it to another process) and gives the same fields there."""
    import pickle

    validated = load_ruleset()
    _no_rebuild(monkeypatch)
    cached = load_ruleset()
    again = pickle.loads(pickle.dumps(cached))
    assert _still_packed(again)
    assert again.rules == validated.rules and again.signatures == validated.signatures


def test_rusts_engine_is_asked_once_for_every_signature_and_still_names_a_bad_one(cache, tmp_path):
    """Validation asks Rust's engine for every signature's regex in one call; when one is
    refused, each is asked on its own, and the refused one is named with Rust's message."""
    from analyzer.errors import RuleLoadError
    from analyzer.rules import schema

    built = load_ruleset(use_cache=False)
    assert {s.pattern for s in built.signatures.values()} <= schema._RUST_TAKES
    extra = tmp_path / "extra"
    extra.mkdir()
    bad = SIGNATURE.replace("sym-test-cached", "sym-test-lookahead").replace(
        "regex: 'the plugin keeps dying'", "regex: 'the plugin (?=keeps) dying'"
    )
    (extra / "bad.yaml").write_text(bad.format(meaning="bad"), encoding="utf-8")
    with pytest.raises(RuleLoadError) as caught:
        load_ruleset([extra], use_cache=False)
    message = str(caught.value)
    assert "sym-test-lookahead" in message and "linear-time scanner" in message


def test_threads_reading_packed_fields_at_once_all_get_them(cache, monkeypatch):
    """Threads reading a packed field back at once (a batch worker's threads, Dask's) each get
    it: the blob is dropped only once the fields are in place."""
    import sys
    import threading

    validated = load_ruleset()
    _no_rebuild(monkeypatch)
    expected = {k: r.explanation for k, r in validated.rules.items()}
    errors: list[BaseException] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(5):
            cached = load_ruleset()
            start = threading.Barrier(8)

            def read(rules=cached.rules, start=start) -> None:
                start.wait()
                try:
                    for k, r in rules.items():
                        assert r.explanation == expected[k]
                except BaseException as exc:  # any failure of a reader
                    errors.append(exc)

            threads = [threading.Thread(target=read) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


def test_a_cached_field_at_its_default_is_read_from_the_class(cache, monkeypatch):
    """The cached set leaves out of each object what holds the class's default (analyzer/packed
    `dump`), and holds each version range once: the objects read back are the validated ones."""
    validated = load_ruleset()
    _no_rebuild(monkeypatch)
    cached = load_ruleset()
    plain = [s for s in cached.signatures.values() if not s.symptom]
    assert plain and all("symptom" not in s.__dict__ and s.symptom is False for s in plain)
    assert any("symptom" in s.__dict__ for s in cached.signatures.values())  # not a default
    # (compiled patterns are equal only to themselves: their reprs hold what they were built from)
    assert repr(cached.catalogue.kinds) == repr(validated.catalogue.kinds)
    for rule_id, rule in validated.rules.items():
        assert (cached.rules[rule_id].when, cached.rules[rule_id].unless) == (
            rule.when,
            rule.unless,
        )
    ranges = [s.versions for s in cached.signatures.values()]
    assert len({id(r) for r in ranges}) == len(set(ranges)) < len(ranges)
