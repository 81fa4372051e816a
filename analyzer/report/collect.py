"""What to collect next, chosen by the verdict: only what would confirm or overturn it, or
decide between the remaining candidates. Nothing on a healthy node; at most three items on a
confident verdict. Commands come from the kind catalogue with the values the bundle knows."""

from __future__ import annotations

from analyzer.facts.context import NodeContext
from analyzer.kinds import Catalogue
from analyzer.report.model import Collect, Verdict
from analyzer.rules.engine import FIRED, NOT_EVALUATED, RuleResult

DEFAULT_NAMESPACE = "kube-system"
DEFAULT_RELEASE = "hami"  # the chart's documented release name
VARIABLES = ("NODE", "NS", "RELEASE", "POD", "POD_NS")


def fill(command: str, values: dict[str, str | None]) -> tuple[str, tuple[str, ...]]:
    """Replace "$VAR" with known values; return the command and the variables left to set."""
    needs = []
    for var in VARIABLES:
        token = f'"${var}"'
        if token not in command:
            continue
        value = values.get(var)
        if value:
            command = command.replace(token, _quote(value))
        else:
            needs.append(var)
    return command, tuple(needs)


def _quote(value: str) -> str:
    return (
        value
        if all(c.isalnum() or c in "-._/:" for c in value)
        else "'" + value.replace("'", "'\\''") + "'"
    )


def values_of(ctx: NodeContext) -> dict[str, str | None]:
    return {**ctx.shell_values(), "NS": DEFAULT_NAMESPACE, "RELEASE": DEFAULT_RELEASE}


def choose(
    verdict: Verdict,
    results: list[RuleResult],
    ctx: NodeContext,
    catalogue: Catalogue,
    lang: str = "en",
) -> tuple[Collect, ...]:
    if verdict.category == "healthy":
        return ()
    present = ctx.index.present
    by_id = {r.rule.id: r for r in results}
    wanted: list[tuple[str, str]] = []  # (kind, why)

    def want(kind: str, why: str) -> None:
        if kind in present or kind in (k for k, _ in wanted):
            return
        k = catalogue.get(kind)
        if k is None or not k.collect:
            return
        wanted.append((kind, why))

    primary = by_id.get(verdict.rule_id) if verdict.rule_id else None
    if primary is not None and primary.outcome == FIRED:
        for kind in primary.rule.collect:
            want(kind, f"confirms or overturns: {primary.rule.id}")
    if verdict.confidence != "high" or primary is None:
        # the kinds that would let the most not-yet-evaluated rules decide
        counts: dict[str, list[str]] = {}
        for r in results:
            if r.outcome == NOT_EVALUATED and r.rule.kind == "fault":
                for kind in sorted(r.missing):
                    counts.setdefault(kind, []).append(r.rule.id)
        if primary is None:
            for k in catalogue.basic():
                want(k.id, "basic evidence for any verdict")
        for kind in sorted(counts, key=lambda k: (-len(counts[k]), k)):
            want(
                kind, f"lets {len(counts[kind])} more rule(s) decide: {', '.join(counts[kind][:4])}"
            )
    limit = 3 if verdict.confidence == "high" and primary is not None else 5
    values = values_of(ctx)
    out = []
    for kind, why in wanted[:limit]:
        k = catalogue[kind]
        command, needs = fill(k.collect, values)
        title = k.title_zh if lang == "zh" and k.title_zh else k.title
        out.append(Collect(kind, title, command, k.where, why, needs))
    return tuple(out)
