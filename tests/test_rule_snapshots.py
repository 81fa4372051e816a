"""Each rule's firing cases against its snapshot (tests/snapshots/rules/<rule-id>.snap): a change
of a title, a verdict or an evidence `file:line` fails here until the snapshot is updated with
`make snapshots` and the diff is read (docs/rules.md, Rule tests and snapshots)."""

from __future__ import annotations

import difflib

import pytest
from rule_snapshots import SNAPSHOTS, render, snapshot_path

from analyzer.rules import builtin_rules_dir
from analyzer.rules.loader import load_ruleset

RULE_IDS = sorted(load_ruleset().rules)
HOW = "run `make snapshots`, then read `git diff tests/snapshots` before committing"


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_snapshot(request, ruleset, rule_test_results, rule_id):
    text = render(ruleset.rules[rule_id], rule_test_results, builtin_rules_dir())
    path = snapshot_path(rule_id)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if request.config.getoption("--update-snapshots"):
        if old != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return
    assert old is not None, f"no snapshot for rule {rule_id}: {HOW}"
    diff = difflib.unified_diff(old.splitlines(), text.splitlines(), "snapshot", "now", lineterm="")
    assert old == text, f"{path.name} changed ({HOW}):\n" + "\n".join(diff)


def test_no_snapshot_without_its_rule(request):
    """A renamed or deleted rule leaves no snapshot behind."""
    stale = sorted(p for p in SNAPSHOTS.glob("*.snap") if p.stem not in RULE_IDS)
    if request.config.getoption("--update-snapshots"):
        for p in stale:
            p.unlink()
        return
    assert [p.name for p in stale] == [], HOW
