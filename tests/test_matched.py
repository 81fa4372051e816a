"""The facts stage reads a signature's match where the parse stage's own regex check found it
(`ParsedLog.matched`) instead of searching the line again: the matches, their spans and groups
are those a search afresh gives, on every sample bundle, on generated short and long logs, and
on a big log's kept lines; a line the parse stage did not check one by one is still searched."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_smalllog import _lines, _parsed

from analyzer.analyze import load_bundle
from analyzer.bundle import recognise
from analyzer.facts import matches as matches_mod
from analyzer.facts.clock import Clock, stamp_logs
from analyzer.facts.matches import collect_matches
from conftest import SAMPLES


def _searched_afresh(logs):
    return [dataclasses.replace(log, matched={}) for log in logs]


def _matches(logs, kinds, ruleset):
    stamped = stamp_logs(logs, Clock(None, 2026, "the tests' year"))  # as the facts stage does
    index = collect_matches(stamped, kinds, ruleset.signatures, ruleset.catalogue)
    return index.matches, index.errors


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_a_samples_matches_are_those_a_search_afresh_finds(ruleset, sample):
    bundle = load_bundle([str(SAMPLES / sample / "bundle")], ruleset)
    found = _matches(bundle.logs, bundle.kinds, ruleset)
    assert found == _matches(_searched_afresh(bundle.logs), bundle.kinds, ruleset)


@pytest.mark.parametrize("sample", ["healthy-single-gpu", "two-nodes-one-plugin-crash"])
def test_a_log_read_as_python_rows_gives_the_matches_its_query_gives(ruleset, sample, monkeypatch):
    """A log frame of a few rows is read as Python lists, a bigger one by a query: the same."""
    bundle = load_bundle([str(SAMPLES / sample / "bundle")], ruleset)
    as_rows = _matches(bundle.logs, bundle.kinds, ruleset)
    monkeypatch.setattr(matches_mod, "READ_WHOLE_ROWS", -1)
    assert as_rows == _matches(bundle.logs, bundle.kinds, ruleset)
    assert as_rows[0]  # the sample's logs hold matches


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    kind=st.sampled_from(["device-plugin-log", "issue-text", "text"]),
    short=st.booleans(),
)
def test_a_generated_logs_matches_are_those_a_search_afresh_finds(ruleset, data, kind, short):
    examples = sorted({x for s in ruleset.signatures.values() for x in s.examples_match})
    text = "\n".join(data.draw(_lines(examples))) + "\n"
    parsed = _parsed(text, kind, short)
    assert _matches([parsed], [kind], ruleset) == _matches(
        _searched_afresh([parsed]), [kind], ruleset
    )


def test_the_parse_stage_keeps_the_span_and_groups_of_each_match_it_checked(ruleset):
    line = 'I0815 10:00:00.000001       1 register.go:1] node gpu-1: "Register succeeded"'
    parsed = _parsed(line + "\n", "device-plugin-log", True)
    for (number, sid), (span, groups) in parsed.matched.items():
        m = ruleset.signatures[sid].compiled.search(line)
        assert number == 1 and m is not None
        assert (span, groups) == (m.span(), m.groupdict())


def test_a_big_logs_kept_lines_give_the_matches_a_search_afresh_finds(
    ruleset, tmp_path, monkeypatch
):
    """Streamed, as a big log is: the kept lines' final check is the one by one check of small
    frames, whose matches the facts stage reads."""
    line = "E0815 10:00:01.000001       1 plugin.go:42] nvml init failed: ERROR_LIBRARY_NOT_FOUND\n"
    quiet = "I0815 10:00:00.000001       1 main.go:1] waiting\n"
    (tmp_path / "device-plugin.log").write_text(quiet * 20_000 + line * 3 + quiet * 20_000)
    node = SAMPLES / "healthy-single-gpu" / "bundle" / "node.yaml"
    (tmp_path / "node.yaml").write_bytes(node.read_bytes())
    monkeypatch.setattr(recognise, "SMALL_FILE", 1 << 10)
    bundle = load_bundle([str(tmp_path)], ruleset)
    (parsed,) = bundle.logs
    assert parsed.artefact.text is None  # streamed
    assert parsed.matched  # the kept lines were checked one by one
    found = _matches(bundle.logs, bundle.kinds, ruleset)
    assert found == _matches(_searched_afresh(bundle.logs), bundle.kinds, ruleset)
    read = {(m.line, m.sig) for ms in found[0].values() for m in ms}
    assert read and read <= set(parsed.matched)  # every match read, none searched again
