"""Golden test: each sample bundle's diagnosis against its hand-written expected.yaml."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

from analyzer.analyze import AnalyzeOptions, analyze
from conftest import REPO, SAMPLES

SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if p.is_dir())


def _make_samples():
    spec = importlib.util.spec_from_file_location(
        "make_samples", REPO / "tools" / "make_samples.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_sample_is_built_and_checked():
    """The samples here are exactly those tools/make_samples.py builds, each with its bundle and
    its expected.yaml (so none is silently left out of the golden test below)."""
    names = {s.name for s in (b() for b in _make_samples().BUILDERS) if s is not None}
    # the one sample made from ../shared/reference is not rebuilt on a clone without ../shared
    unbuildable = set() if (REPO.parent / "shared" / "reference").is_dir() else {"xid79-gpu-lost"}
    assert {p.name for p in SAMPLE_DIRS} == names | unbuildable
    for p in SAMPLE_DIRS:
        assert (p / "expected.yaml").is_file() and (p / "bundle").is_dir(), p.name


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
    if "nodes" in expected:  # a multi-node sample: every node as expected, none more
        by_node = {n.node: n for n in report.nodes}
        assert sorted(expected["nodes"]) == sorted(by_node)
        for name, want in expected["nodes"].items():
            _check_node(by_node[name], want)


def _check_node(node, want: dict) -> None:
    """A multi-node sample's expectations of one node: its verdict, the rules that fire and
    do not, and the only files its evidence may cite (its own object and logs, shared logs)."""
    fired = {f.rule_id for f in node.all_findings()}
    assert node.primary.category == want["primary_category"], (node.node, node.primary)
    assert set(want["must_fire"]) - fired == set(), node.node
    assert set(want["must_not_fire"]) & fired == set(), node.node
    cited = {e.file for f in node.all_findings() for e in f.evidence if e.file}
    assert cited <= set(want["evidence_files"]), (node.node, cited)


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
