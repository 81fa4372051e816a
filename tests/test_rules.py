"""The rule set: it loads clean, every rule's own cases pass, custom rules override."""

from __future__ import annotations

from pathlib import Path

from analyzer.rules.loader import load_ruleset
from analyzer.rules.model import CATEGORIES
from conftest import diagnose_texts, fired


def test_every_rule_and_signature_self_test_passes(ruleset, rule_test_results):
    failed = [f"{r.rule_id} {r.case}: {r.detail}" for r in rule_test_results if not r.ok]
    assert failed == []
    # every example and every case ran: one result each (plus one per translated firing case)
    rules = ruleset.rules.values()
    expected = sum(
        len(s.examples_match) + len(s.examples_no_match) for s in ruleset.signatures.values()
    )
    expected += sum(
        len(r.tests.get("fires") or []) + len(r.tests.get("silent") or []) for r in rules
    )
    expected += sum(len(r.tests.get("fires") or []) for r in rules if r.zh is not None)
    assert len(rule_test_results) == expected


def test_every_rule_is_documented_and_tested(ruleset):
    for r in ruleset.rules.values():
        assert r.explanation, r.id
        assert r.tests.get("fires") and r.tests.get("silent"), r.id
        assert r.category in CATEGORIES
        if r.kind == "fault" and r.category != "inconclusive":
            assert r.remediation, f"{r.id} has no remediation"
        assert r.references, r.id


def test_every_guide_case_has_a_fault_rule(ruleset):
    cases = {r.case for r in ruleset.rules.values() if r.kind == "fault"}
    assert {1, 2, 3, 4, 5} <= cases


def test_custom_rule_replaces_builtin(tmp_path: Path, ruleset):
    (tmp_path / "mine.yaml").write_text(
        "rules:\n"
        "  - id: no-gpu-label\n"
        "    title: Custom label check\n"
        "    severity: warning\n"
        "    kind: fault\n"
        "    category: no-device-plugin-pod\n"
        "    when: {fact: node.labels.pool, eq: gpu}\n"
        "    explanation: custom\n"
    )
    rs = load_ruleset([tmp_path])
    assert rs.rules["no-gpu-label"].title == "Custom label check"
    node = "kind: Node\nmetadata: {name: n, labels: {pool: gpu}}\n"
    d = diagnose_texts(rs, {"node.yaml": node})
    assert "no-gpu-label" in fired(d) and d.worst.primary.severity == "warning"


def test_collect_next_fills_the_node_and_asks_for_the_basics(ruleset):
    """Nothing points anywhere: the verdict is inconclusive and collect-next asks for the basic
    evidence, with the node name the bundle gives filled into each command."""
    d = diagnose_texts(
        ruleset,
        {
            "node.txt": "Name:               gpu-7\nRoles:              <none>\nLabels:             gpu=on\n"
        },
    ).worst
    assert d.primary.category == "inconclusive"
    assert any(n.rule_id == "rbac-patch-forbidden" for n in d.not_evaluated)
    cmds = {c.kind: c for c in d.collect}
    assert "spec.nodeName=gpu-7" in cmds["device-plugin-log"].command
    assert cmds["device-plugin-log"].needs == ()
    assert cmds["scheduler-log"].command.startswith(
        "kubectl logs -n kube-system deploy/hami-scheduler -c vgpu-scheduler-extender"
    )
    assert "node" not in cmds  # the node is in the bundle already
    assert len(d.collect) <= 5


def test_collect_next_is_empty_on_a_healthy_node(ruleset):
    from analyzer.analyze import analyze
    from conftest import SAMPLES

    _, report = analyze([str(SAMPLES / "healthy-single-gpu" / "bundle")], ruleset)
    assert report.primary.category == "healthy" and report.worst.collect == ()


def test_version_out_of_range_is_not_applicable(ruleset):
    # A v2.10-only JSON annotation (no devicepairscore) rules out the <2.10 handshake rule.
    node = (
        "kind: Node\nmetadata:\n  name: n\n  annotations:\n"
        "    hami.io/node-handshake: 'Deleted_2026-08-15 09:13:59'\n"
        '    hami.io/node-nvidia-register: \'[{"id":"GPU-1","count":10,"health":true}]\'\n'
        "status: {allocatable: {nvidia.com/gpu: '10'}}\n"
    )
    d = diagnose_texts(ruleset, {"node.yaml": node}).worst
    assert d.version.range is not None
    assert "handshake-deleted-stuck" in d.not_applicable
