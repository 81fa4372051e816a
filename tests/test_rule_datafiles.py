"""timeline.yaml, decisions.yaml and annotations.yaml are validated like rule files: a defect
stops the load with one `file:line: message` naming what is wrong, and `hami-analyzer rules lint`
prints it and exits 2 (analyzer/catalogue/datafiles.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import analyzer.rules.loader as loader_mod
from analyzer.cli import app
from analyzer.errors import RuleLoadError
from analyzer.rules import builtin_rules_dir
from analyzer.rules.loader import load_ruleset

runner = CliRunner()

CASES = [
    pytest.param(
        "timeline.yaml",
        "device-plugin-log: dp-start",
        "device-plugin-log: dp-strat",
        "timeline.yaml:{line}: starts.device-plugin-log: unknown signature id 'dp-strat'",
        "device-plugin-log: dp-strat",
        id="timeline-unknown-signature",
    ),
    pytest.param(
        "timeline.yaml",
        "device-plugin-log: dp-start",
        "device-plugin-lg: dp-start",
        "timeline.yaml:{line}: starts: unknown artefact kind 'device-plugin-lg'",
        "device-plugin-lg: dp-start",
        id="timeline-unknown-kind",
    ),
    pytest.param(
        "timeline.yaml",
        "where: {current: '^[1-9]'}",
        "where: {currnet: '^[1-9]'}",
        "timeline.yaml:{line}: signature sch-health-check has no capture 'currnet'",
        "{signature: sch-health-check",
        id="timeline-unknown-capture",
    ),
    pytest.param(
        "timeline.yaml",
        "restart_loop: {count: 3",
        "restart_loop: {count: three",
        "timeline.yaml:{line}: count must be a whole number, got 'three'",
        "restart_loop: {count: three",
        id="timeline-bad-number",
    ),
    pytest.param(
        "decisions.yaml",
        "    pod: [pod, pod2]",
        "    pod: [pod, pod3]",
        "decisions.yaml:{line}: signature sch-node-unfit has no capture 'pod3'",
        "signature: sch-node-unfit",
        id="decisions-unknown-capture",
    ),
    pytest.param(
        "decisions.yaml",
        "    fit: true",
        "    fits: true",
        (
            "decisions.yaml:{line}: decision: unknown key 'fits' (allowed: signature, fit, pod, node, reason)",
            "decisions.yaml:{line}: decision: missing 'fit'",
        ),
        "signature: sch-pod-scheduled",
        id="decisions-unknown-key",
    ),
    pytest.param(
        "annotations.yaml",
        "numa: {type: int, default: 0}",
        "numa: {type: integer, default: 0}",
        "annotations.yaml:{line}: type 'integer' not one of str, int, bool",
        "numa: {type: integer",
        id="annotations-field-type",
    ),
    pytest.param(
        "annotations.yaml",
        "pattern: '^Reported (?P<time>",
        "pattern: '^Reported (?P<when>",
        "annotations.yaml:{line}: pattern needs the named group(s) time",
        "- state: Reported",
        id="annotations-state-without-time",
    ),
    pytest.param(
        "annotations.yaml",
        "versions: '<2.5.0'",
        "versions: '<<2.5.0'",
        "annotations.yaml:{line}: bad version constraint '<<2.5.0'",
        "- name: csv-7",
        id="annotations-bad-versions",
    ),
]


@pytest.fixture
def rules_copy(tmp_path, monkeypatch) -> Path:
    """A copy of the shipped rules/ the loader takes for the built-in one."""
    root = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), root)
    monkeypatch.setattr(loader_mod, "builtin_rules_dir", lambda: root)
    return root


def _break(root: Path, name: str, old: str, new: str) -> None:
    text = (root / name).read_text(encoding="utf-8")
    assert text.count(old) >= 1, f"{name} no longer has {old!r}: update this case"
    (root / name).write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_copy_loads_clean(rules_copy):
    """The copy alone loads, so each case below reports only its own defect."""
    assert load_ruleset(use_cache=False).warnings == []


@pytest.mark.parametrize(("name", "old", "new", "problems", "anchor"), CASES)
def test_data_file_defect_names_file_and_line(rules_copy, name, old, new, problems, anchor):
    """`anchor` is the text on the line the problem must name (the mapping holding the defect),
    so that edits elsewhere in the file do not move the expectation."""
    _break(rules_copy, name, old, new)
    lines = (rules_copy / name).read_text(encoding="utf-8").splitlines()
    (line,) = [i for i, text in enumerate(lines, 1) if anchor in text]
    expected = [
        f"{rules_copy}/{p}".replace("{line}", str(line))
        for p in ([problems] if isinstance(problems, str) else problems)
    ]
    with pytest.raises(RuleLoadError) as info:
        load_ruleset(use_cache=False)
    assert info.value.problems == expected
    res = runner.invoke(app, ["rules", "lint"])
    assert res.exit_code == 2 and all(p in res.stderr for p in expected), res.output
