"""`hami-analyzer rules test`: every rule's own cases and every signature's examples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analyzer.bundle.reader import BundleReader
from analyzer.errors import AnalyzerError
from analyzer.rules import builtin_rules_dir
from analyzer.rules.model import RuleSet


@dataclass
class CaseResult:
    rule_id: str
    case: str
    ok: bool
    detail: str


def _run_case(ruleset: RuleSet, case: dict, base: Path):
    from analyzer.analyze import analyze_parsed
    from analyzer.pipeline import parse_files

    reader = BundleReader()
    try:
        if "bundle" in case:
            path = Path(case["bundle"])
            if not path.is_absolute():
                candidates = [base / path, builtin_rules_dir().parent / path, Path.cwd() / path]
                path = next((c for c in candidates if c.exists()), candidates[0])
            reader.add_input(str(path))
        for name, content in (case.get("files") or {}).items():
            reader.add_bytes(name, str(content).encode())
        parsed = parse_files(reader, ruleset)
        return analyze_parsed(parsed, ruleset, case.get("node"))
    finally:
        reader.close()


def run_rule_tests(ruleset: RuleSet, only: str | None = None) -> list[CaseResult]:
    results: list[CaseResult] = []
    for sig in sorted(ruleset.signatures.values(), key=lambda s: s.id):
        if only and sig.id != only:
            continue
        for ex in sig.examples_match:
            ok = sig.compiled.search(ex) is not None
            results.append(
                CaseResult(sig.id, "example match", ok, "" if ok else f"did not match: {ex[:80]}")
            )
        for ex in sig.examples_no_match:
            ok = sig.compiled.search(ex) is None
            results.append(
                CaseResult(sig.id, "example no_match", ok, "" if ok else f"matched: {ex[:80]}")
            )
    for rule in sorted(ruleset.rules.values(), key=lambda r: r.id):
        if only and rule.id != only:
            continue
        base = Path(rule.file).parent
        if not rule.tests.get("fires"):
            results.append(CaseResult(rule.id, "fires", False, "rule has no 'fires' test case"))
        for want, cases in (
            ("fires", rule.tests.get("fires") or []),
            ("silent", rule.tests.get("silent") or []),
        ):
            for i, case in enumerate(cases):
                label = f"{want}[{i}]" + (f" {case.get('name')}" if case.get("name") else "")
                try:
                    diags = _run_case(ruleset, case, base)
                except AnalyzerError as exc:
                    results.append(CaseResult(rule.id, label, False, f"input error: {exc}"))
                    continue
                fired = any(f.rule_id == rule.id for d in diags for f in d.findings)
                ok = fired if want == "fires" else not fired
                detail = ""
                if not ok:
                    got = sorted({f.rule_id for d in diags for f in d.findings})
                    ne = [n.rule_id for d in diags for n in d.not_evaluated]
                    detail = f"expected {'to fire' if want == 'fires' else 'silence'}; fired: {got}"
                    if rule.id in ne:
                        detail += (
                            " (rule was not evaluated: a required source is missing from the case)"
                        )
                results.append(CaseResult(rule.id, label, ok, detail))
    return results
