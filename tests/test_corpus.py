"""Real pasted material from public issues, scored both ways (attached files; issue.md alone).

The bar is the score, not exact agreement: the corpus is fragments, and "inconclusive: attach X"
is half right where a confident wrong verdict is not right at all."""

from __future__ import annotations

import pytest
import yaml

from analyzer.analyze import analyze, analyze_issue
from analyzer.dev.score import FORMS, score_corpus
from conftest import SHARED

CORPUS = SHARED / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
FLOOR = 90.0  # percent, each form
needs_corpus = pytest.mark.skipif(not CASES, reason="../shared/corpus not present")


@needs_corpus
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_corpus_case_analyses_cleanly(ruleset, case):
    """Every file alone and the case as a whole analyse without rule errors; every finding
    cites evidence."""
    files = [p for p in sorted(case.iterdir()) if p.name not in ("expected.yaml", "issue.md")]
    reports = [analyze([str(f)], ruleset)[1] for f in files]
    if files:
        reports.append(analyze([str(f) for f in files], ruleset)[1])
    if (case / "issue.md").is_file():
        reports.append(analyze_issue((case / "issue.md").read_bytes(), ruleset)[1])
    for report in reports:
        for node in report.nodes:
            assert node.rule_errors == ()
            for f in node.all_findings():
                assert f.evidence, f.rule_id


@needs_corpus
def test_corpus_score(ruleset, capsys):
    """Issue 21's bar: >= 90 % in both forms, at most one confident-wrong verdict per form, and no
    wrong verdict at high confidence (the reliability table's high row has no wrong)."""
    result = score_corpus(CORPUS, ruleset)
    with capsys.disabled():
        for form in FORMS:
            got, n = result.total(form)
            print(f"\ncorpus {form}: {got:g}/{n} = {result.percent(form):.1f}%", end="")
        print()
    for form in FORMS:
        assert result.percent(form) >= FLOOR, (form, result.percent(form))
        wrong = [r for r in result.confident_wrong() if r.form == form]
        assert len(wrong) <= 1, [(r.case, r.got, r.confidence) for r in wrong]
        assert result.reliability(form)["high"]["wrong"] == 0, form


@needs_corpus
def test_bot_never_posts_a_wrong_high(ruleset):
    """With min-confidence high the bot posts a fault only when the reading is right."""
    from analyzer.bot.decide import Options, decide, load_config

    config, options = load_config(), Options(min_confidence="high")
    for case in CASES:
        issue = case / "issue.md"
        if not issue.is_file():
            continue
        text = issue.read_bytes()
        report = analyze_issue(text, ruleset)[1]
        d = decide(report, text.decode("utf-8", "replace"), options, config)
        if d.verdict == "fault":
            exp = yaml.safe_load((case / "expected.yaml").read_text(encoding="utf-8"))
            assert d.category in [exp["category"], *(exp.get("also_ok") or [])], case.name
