"""Golden test: each sample bundle's diagnosis against its hand-written expected.yaml."""

from __future__ import annotations

import pytest
import yaml

from analyzer.analyze import AnalyzeOptions, analyze
from conftest import SAMPLES

SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "expected.yaml").is_file())


def test_there_are_enough_samples():
    assert len(SAMPLE_DIRS) >= 17


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_sample_diagnosis(ruleset, sample):
    expected = yaml.safe_load((sample / "expected.yaml").read_text())
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    d = report.worst
    fired = {f.rule_id for f in d.all_findings()}
    assert d.primary.category == expected["primary_category"], (d.primary, sorted(fired))
    assert set(expected["must_fire"]) - fired == set()
    assert set(expected["must_not_fire"]) & fired == set()
    assert d.rule_errors == ()
    for f in d.all_findings():
        assert f.evidence, f"{f.rule_id} fired without evidence"
        for e in f.evidence:
            if e.kind == "log":
                assert e.file and e.line and e.text


@pytest.mark.parametrize(
    "sample",
    [s for s in SAMPLE_DIRS if yaml.safe_load((s / "expected.yaml").read_text()).get("healthy")],
    ids=lambda p: p.name,
)
def test_no_fault_on_healthy_samples(ruleset, sample):
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    assert [f.rule_id for f in report.worst.faults()] == []
    assert {ln.link: ln.state for ln in report.worst.links} == {
        "count": "ok",
        "spec": "ok",
        "liveness": "ok",
    }
