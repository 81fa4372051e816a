"""Score the analyzer on real cases (a folder per case with expected.yaml), both ways: the
artefact files as an attached bundle (without issue.md), and issue.md alone as the issue bot
reads it. Right (the category or an also_ok) = 1, inconclusive = 0.5, anything else = 0; a
wrong verdict given with high or medium confidence is listed as confident-wrong.

The reliability table says whether a confidence level can be trusted: for each form and level,
how many verdicts at that level were right, inconclusive and wrong. An expected "inconclusive"
answered with inconclusive counts as right."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analyzer import confidence
from analyzer.confidence import confident
from analyzer.errors import AnalyzerError
from analyzer.rules.model import RuleSet
from analyzer.structured import load_yaml

FORMS = ("files", "issue")
LEVELS = (*confidence.LEVELS, "none")  # none: the analysis failed
OUTCOMES = ("right", "inconclusive", "wrong")
SKIP = ("expected.yaml", "issue.md")


@dataclass
class CaseScore:
    case: str
    form: str
    expected: str
    also_ok: list[str]
    expected_confidence: str | None
    got: str
    rule_id: str | None
    confidence: str | None
    score: float

    @property
    def confident_wrong(self) -> bool:
        return self.score == 0 and confident(self.confidence)

    @property
    def outcome(self) -> str:
        if self.score == 1:
            return "right"
        return "inconclusive" if self.score else "wrong"


@dataclass
class ScoreResult:
    rows: list[CaseScore] = field(default_factory=list)

    def total(self, form: str) -> tuple[float, int]:
        rows = [r for r in self.rows if r.form == form]
        return sum(r.score for r in rows), len(rows)

    def percent(self, form: str) -> float:
        got, n = self.total(form)
        return 100.0 * got / n if n else 0.0

    def confident_wrong(self) -> list[CaseScore]:
        return [r for r in self.rows if r.confident_wrong]

    def reliability(self, form: str) -> dict[str, dict[str, int]]:
        """Per confidence level of the verdict: right / inconclusive / wrong counts."""
        table = {level: {o: 0 for o in OUTCOMES} for level in LEVELS}
        for r in self.rows:
            if r.form == form:
                table[r.confidence if r.confidence in LEVELS else "none"][r.outcome] += 1
        return table


def _score(category: str, ok: list[str]) -> float:
    if category in ok:
        return 1.0
    return 0.5 if category == "inconclusive" else 0.0


def score_case(case: Path, ruleset: RuleSet) -> list[CaseScore]:
    from analyzer.analyze import AnalyzeOptions, Issue, analyze

    exp = load_yaml((case / "expected.yaml").read_text(encoding="utf-8"))
    ok = [exp["category"], *(exp.get("also_ok") or [])]
    files = [str(p) for p in sorted(case.iterdir()) if p.is_file() and p.name not in SKIP]
    out = []
    for form in FORMS:
        try:
            if form == "files":
                if not files:
                    continue
                report = analyze(files, AnalyzeOptions(ruleset=ruleset)).report
            else:
                issue = case / "issue.md"
                if not issue.is_file():
                    continue
                report = analyze(Issue(issue.read_bytes()), AnalyzeOptions(ruleset=ruleset)).report
            p = report.primary
            got, rule, conf = p.category, p.rule_id, p.confidence
        except AnalyzerError as exc:
            got, rule, conf = f"error: {exc}", None, None
        out.append(
            CaseScore(
                case.name,
                form,
                exp["category"],
                ok[1:],
                exp.get("confidence"),
                got,
                rule,
                conf,
                _score(got, ok),
            )
        )
    return out


def score_corpus(corpus: Path, ruleset: RuleSet) -> ScoreResult:
    result = ScoreResult()
    for case in sorted(p for p in corpus.iterdir() if (p / "expected.yaml").is_file()):
        result.rows.extend(score_case(case, ruleset))
    return result


def render_score(result: ScoreResult, fmt: str = "text") -> str:
    if fmt == "json":
        doc = {
            "rows": [asdict(r) | {"confident_wrong": r.confident_wrong} for r in result.rows],
            "reliability": {f: result.reliability(f) for f in FORMS},
            "confident_wrong": [
                {"case": r.case, "form": r.form, "got": r.got, "confidence": r.confidence}
                for r in result.confident_wrong()
            ],
            "totals": {
                f: {
                    "score": result.total(f)[0],
                    "cases": result.total(f)[1],
                    "percent": round(result.percent(f), 1),
                }
                for f in FORMS
            },
        }
        return json.dumps(doc, indent=2)
    lines = [f"{'case':32} {'form':6} {'expected':30} {'got':48} score"]
    for r in result.rows:
        exp = r.expected + (f" (+{','.join(r.also_ok)})" if r.also_ok else "")
        got = f"{r.got} [{r.confidence}]" + (f" {r.rule_id}" if r.rule_id else "")
        flag = "  CONFIDENT-WRONG" if r.confident_wrong else ""
        lines.append(f"{r.case:32} {r.form:6} {exp[:30]:30} {got[:48]:48} {r.score:g}{flag}")
    lines.append("")
    for f in FORMS:
        right, n = result.total(f)
        lines.append(f"{f:6}: {right:g}/{n} = {result.percent(f):.1f}%")
    lines += ["", "reliability (verdicts per confidence level: right / inconclusive / wrong)"]
    lines.append(f"{'form':6} {'level':7} {'right':>5} {'incon':>5} {'wrong':>5}")
    for f in FORMS:
        for level, row in result.reliability(f).items():
            if any(row.values()):
                lines.append(
                    f"{f:6} {level:7} {row['right']:5} {row['inconclusive']:5} {row['wrong']:5}"
                )
    wrong = result.confident_wrong()
    lines.append("")
    lines.append(f"confident-wrong (wrong at medium or high): {len(wrong)}")
    lines += [
        f"  {r.case} ({r.form}): {r.got} [{r.confidence}] {r.rule_id or ''}, expected {r.expected}"
        for r in wrong
    ]
    return "\n".join(lines)
