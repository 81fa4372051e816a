"""`hami-analyzer rules test`: every rule's own cases and every signature's examples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from analyzer.bundle.reader import BundleReader
from analyzer.errors import AnalyzerError
from analyzer.rules import builtin_rules_dir
from analyzer.rules.model import RuleSet

_CJK = regex.compile(r"\p{Han}")


@dataclass
class CaseResult:
    rule_id: str
    case: str
    ok: bool
    detail: str
    report: Any = None  # the case's Report (analyzer.report.model), kept for snapshots


def _run_case(ruleset: RuleSet, case: dict, base: Path, lang: str = "en"):
    """A rule test case as a bundle: a sample folder and/or named files (a `.md` file is the
    issue's own text, as the issue bot reads it)."""
    from analyzer.analyze import AnalyzeOptions, analyze

    reader = BundleReader()
    try:
        if "bundle" in case:
            path = Path(case["bundle"])
            if not path.is_absolute():
                candidates = [base / path, builtin_rules_dir().parent / path, Path.cwd() / path]
                path = next((c for c in candidates if c.exists()), candidates[0])
            reader.add_input(str(path))
        for name, content in (case.get("files") or {}).items():
            for part, body, kind in _as_read(name, str(content)):
                reader.add_bytes(part, body.encode(), kind=kind)
        options = AnalyzeOptions(ruleset=ruleset, node=case.get("node"), lang=lang)
        return analyze(reader, options).report
    finally:
        reader.close()


def _as_read(name: str, content: str) -> list[tuple[str, str, str | None]]:
    """A case's file as the analyzer reads it: a `.md` file is an issue, split as the bot and
    `analyze issue.md` split a post (its code blocks are files of their own, its prose is the
    issue's text), so a rule is tested on what a reporter's words and pastes become."""
    if not name.endswith(".md"):
        return [(name, content, None)]
    from analyzer.bundle.thread import Post, post_texts

    return post_texts([Post(Path(name).stem, content)])[0]


def run_rule_tests(ruleset: RuleSet, only: str | None = None) -> list[CaseResult]:
    results: list[CaseResult] = []
    for sig in sorted(ruleset.signatures.values(), key=lambda s: s.id):
        if not only or sig.id == only:
            results += _examples(sig)
    for rule in sorted(ruleset.rules.values(), key=lambda r: r.id):
        if not only or rule.id == only:
            results += _cases(ruleset, rule)
    return results


def _examples(sig) -> list[CaseResult]:
    """A signature's examples: each match example matches, each no_match one does not."""
    out = []
    for ex in sig.examples_match:
        ok = sig.compiled.search(ex) is not None
        out.append(
            CaseResult(sig.id, "example match", ok, "" if ok else f"did not match: {ex[:80]}")
        )
    for ex in sig.examples_no_match:
        ok = sig.compiled.search(ex) is None
        out.append(CaseResult(sig.id, "example no_match", ok, "" if ok else f"matched: {ex[:80]}"))
    return out


def _cases(ruleset: RuleSet, rule) -> list[CaseResult]:
    """A rule's own cases: it fires on each `fires` case (in Chinese too when translated) and
    stays silent on each `silent` one."""
    base = Path(rule.file).parent
    out = []
    if not rule.tests.get("fires"):
        out.append(CaseResult(rule.id, "fires", False, "rule has no 'fires' test case"))
    for want in ("fires", "silent"):
        for i, case in enumerate(rule.tests.get(want) or []):
            label = f"{want}[{i}]" + (f" {case.get('name')}" if case.get("name") else "")
            try:
                report = _run_case(ruleset, case, base)
            except AnalyzerError as exc:
                out.append(CaseResult(rule.id, label, False, f"input error: {exc}"))
                continue
            ok, detail = _judge(rule.id, want, report)
            out.append(CaseResult(rule.id, label, ok, detail, report))
            if want == "fires" and ok and rule.zh is not None:
                out.append(_translated(ruleset, rule.id, case, base, label))
    return out


def _judge(rule_id: str, want: str, report) -> tuple[bool, str]:
    """Whether the case went as wanted, and why not (what fired, what kept the rule quiet)."""
    got = {f.rule_id for n in report.nodes for f in n.all_findings()}
    fired = rule_id in got
    if fired == (want == "fires"):
        return True, ""
    detail = f"expected {'to fire' if want == 'fires' else 'silence'}; fired: {sorted(got)}"
    if rule_id in {n.rule_id for d in report.nodes for n in d.not_evaluated}:
        detail += " (rule was not evaluated: the evidence it needs is missing from the case)"
    if rule_id in {rid for n in report.nodes for rid in n.explained_away}:
        detail += " (its `unless` explained it away)"
    return False, detail


def _translated(ruleset: RuleSet, rule_id: str, case: dict, base: Path, label: str) -> CaseResult:
    """A translated rule's firing case renders its Chinese texts without a template error."""
    report = _run_case(ruleset, case, base, "zh")
    found = [f for n in report.nodes for f in n.all_findings() if f.rule_id == rule_id]
    errors = [e for n in report.nodes for e in n.rule_errors if rule_id in e]
    ok = bool(found) and not errors and all(_CJK.search(f.title) for f in found)
    detail = "" if ok else f"zh texts did not render: {errors[:1] or [f.title for f in found]}"
    return CaseResult(rule_id, f"{label} (zh)", ok, detail)
