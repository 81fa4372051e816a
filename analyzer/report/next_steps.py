"""The next steps of a report: what to collect next, chosen by the verdict: only what would confirm or overturn it, or
decide between the remaining candidates. Nothing on a healthy node; at most three items on a
confident verdict. Commands come from the kind catalogue with the values the bundle knows.

When `hami-analyzer collect` would gather more than one of the missing items, or nothing points
anywhere, the list leads with it (and the line that installs it), unless the bundle already is
such an archive; with `--node-debug` when node-side items (journals, containerd, toolkit and CDI
configs, nvidia-smi) are among those listed, which it then fetches through a debug pod."""

from __future__ import annotations

from analyzer.catalogue.kinds import Catalogue
from analyzer.catalogue.messages import message
from analyzer.facts.context import NodeContext
from analyzer.report.model import NextStep, Verdict
from analyzer.rules.engine import FIRED, NOT_EVALUATED, RuleResult

DEFAULT_RELEASE = "hami"  # the chart's documented release name
VARIABLES = ("NODE", "NS", "RELEASE", "POD", "POD_NS")
INSTALL = "pipx install git+https://github.com/Project-HAMi/hami-bundle-analyzer"
COLLECTED = "collect-manifest"  # the kind that says the bundle is an archive of `collect`


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
    return {**ctx.shell_values(), "RELEASE": DEFAULT_RELEASE}


def choose(
    verdict: Verdict,
    results: list[RuleResult],
    ctx: NodeContext,
    catalogue: Catalogue,
    lang: str = "en",
    collected: bool = False,
) -> tuple[NextStep, ...]:
    """`collected`: the bundle is (or holds) an archive of `hami-analyzer collect`."""
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
        # first the kinds that decide rules of the verdict's own link (the one under suspicion),
        # then the most rules: a component with many rules elsewhere does not push it down
        link = primary.rule.link if primary is not None else None
        on_link = {
            k: sum(link is not None and by_id[r].rule.link == link for r in ids)
            for k, ids in counts.items()
        }
        for kind in sorted(counts, key=lambda k: (-on_link[k], -len(counts[k]), k)):
            want(
                kind, f"lets {len(counts[kind])} more rule(s) decide: {', '.join(counts[kind][:4])}"
            )
    limit = 3 if verdict.confidence == "high" and primary is not None else 5
    values = values_of(ctx)
    out = []
    if (len(wanted) > 1 or (primary is None and wanted)) and not collected:
        listed = wanted[: limit - 1]  # the lead counts as one of the items
        node_debug = any(catalogue[kind].where == "node" for kind, _ in listed)
        out.append(collect_command_step(values.get("NODE"), lang, node_debug))
    for kind, why in wanted[: limit - len(out)]:
        k = catalogue[kind]
        command, needs = fill(k.collect, values)
        title = k.title_zh if lang == "zh" and k.title_zh else k.title
        out.append(NextStep(kind, title, command, k.where, why, needs))
    return tuple(out)


def collect_command_step(node: str | None, lang: str = "en", node_debug: bool = False) -> NextStep:
    """`hami-analyzer collect` for the node (or, with no node known, the nodes running HAMi),
    after the line that installs it; `node_debug`: the node's side too, through a debug pod."""
    command = "hami-analyzer collect" + (f" --node {_quote(node)}" if node else "")
    command += " --node-debug" if node_debug else ""
    return NextStep(
        COLLECTED,
        message("collect-all-node" if node_debug else "collect-all", lang),
        f"{INSTALL}\n{command} -o hami-bundle.tar.gz",
        "cluster",
        "gathers the items below in one run"
        + (
            ", the node's through a short-lived privileged pod"
            if node_debug
            else " and prints the node-side commands"
        ),
    )
