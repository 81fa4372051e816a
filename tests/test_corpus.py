"""Real pasted material from public issues: no crash, obvious kinds recognised."""

from __future__ import annotations

import pytest
import yaml

from analyzer.analyze import analyze
from conftest import SHARED

CORPUS = SHARED / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
OBVIOUS = {
    "node.yaml": {"node"},
    "scheduler.log": {"scheduler-log", "kube-scheduler-log"},
    "device-plugin.log": {"device-plugin-log", "vgpu-monitor-log"},
    "pod-describe.txt": {"pod-describe", "pod", "text"},
    "node-annotations.txt": {"node-describe"},
}


@pytest.mark.skipif(not CASES, reason="../shared/corpus not present")
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_corpus_case_analyses_cleanly(ruleset, case):
    files = [p for p in sorted(case.iterdir()) if p.name != "expected.yaml"]
    for f in files:
        _, diags = analyze([str(f)], ruleset)
        kinds = {a["kind"] for a in diags[0].inventory}
        if f.name in OBVIOUS:
            assert kinds & OBVIOUS[f.name], (f.name, kinds)
        assert diags[0].rule_errors == []
    _, diags = analyze([str(f) for f in files], ruleset)
    assert diags[0].primary.category


@pytest.mark.skipif(not CASES, reason="../shared/corpus not present")
def test_corpus_agreement_is_reported(ruleset, capsys):
    """Not a gate on each case: the corpus is fragments. Prints the agreement for the notes."""
    agree = 0
    rows = []
    for case in CASES:
        exp = yaml.safe_load((case / "expected.yaml").read_text())
        files = [str(p) for p in sorted(case.iterdir()) if p.name != "expected.yaml"]
        _, diags = analyze(files, ruleset)
        got = diags[0].primary.category
        agree += got == exp["category"]
        rows.append(f"{case.name}: expected {exp['category']}, got {got}")
    with capsys.disabled():
        print(f"\ncorpus agreement: {agree}/{len(CASES)}\n" + "\n".join(rows))
    assert agree >= len(CASES) // 2
