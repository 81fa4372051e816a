"""Rule results -> the report. The one place a report is assembled: findings grouped by cause
(a rule's `explains`), link states that never contradict a fault, the verdict with its
confidence, what to collect next, and each node's timeline."""

from __future__ import annotations

import polars as pl

from analyzer import __version__
from analyzer.bundle.model import InputWarning
from analyzer.catalogue.messages import message
from analyzer.decisions import build_decisions
from analyzer.facts.context import NodeContext
from analyzer.facts.model import lower
from analyzer.facts.registry import cited
from analyzer.parse.logs import READ_WHOLE_ROWS, ParsedLog
from analyzer.pipeline import ParsedBundle
from analyzer.report import next_steps
from analyzer.report.model import (
    CONFIDENCE_RANK,
    SEVERITY_RANK,
    ArtefactRow,
    ClockInfo,
    Finding,
    HandshakeInfo,
    LinkState,
    LogStatsRow,
    NamespaceInfo,
    NodeReport,
    NotEvaluated,
    RegisterInfo,
    Report,
    TimelineRow,
    Verdict,
    VersionClue,
    VersionInfo,
    flatten,
)
from analyzer.rules.engine import (
    ERROR,
    EXPLAINED,
    FIRED,
    NOT_APPLICABLE,
    NOT_EVALUATED,
    NOT_FIRED,
    RuleResult,
)
from analyzer.rules.model import RuleSet
from analyzer.timeline import IN_MEMORY, NodeTimeline

REGISTRATION_LINKS = ("count", "spec", "liveness")
KIND_RANK = {"fault": 0, "normal": 1, "ok": 2}
DIAGNOSIS_ROWS = (
    3000  # timeline rows carried in the diagnosis (the `timeline` command has them all)
)


def rank(f: Finding) -> tuple:
    """Order of findings: faults first; the most certain, most severe, highest priority."""
    return (
        KIND_RANK[f.kind],
        CONFIDENCE_RANK[f.confidence],
        SEVERITY_RANK[f.severity],
        -f.priority,
        f.rule_id,
    )


def _finding(r: RuleResult, consequences: tuple[Finding, ...] = ()) -> Finding:
    rule = r.rule
    return Finding(
        rule_id=rule.id,
        title=r.title,
        category=rule.category,
        severity=rule.severity,
        kind=rule.kind,
        link=rule.link,
        case=rule.case,
        confidence=r.confidence or "high",
        confidence_reason=r.confidence_reason,
        explanation=r.explanation,
        remediation=r.remediation,
        references=rule.references,
        evidence=tuple(e for e in r.evidence if e.kind != "fact" or cited(e.path, e.value)),
        priority=rule.priority,
        consequences=consequences,
    )


def _group(fired: list[RuleResult]) -> list[Finding]:
    """Consequences under their cause: a fired fault that `explains` another fired rule takes it
    in, so one XID is one story. The strongest cause claims a consequence first; a consequence's
    own consequences move up to the top cause with it."""
    plain = {r.rule.id: _finding(r) for r in fired}
    by_id = {r.rule.id: r for r in fired}
    owner: dict[str, str] = {}
    for cause in sorted((f for f in plain.values() if f.kind == "fault"), key=rank):
        for rid in by_id[cause.rule_id].rule.explains:
            if rid in plain and rid not in owner and rid != cause.rule_id:
                owner[rid] = cause.rule_id

    def top(rid: str) -> str:
        seen = {rid}
        while rid in owner and owner[rid] not in seen:
            rid = owner[rid]
            seen.add(rid)
        return rid

    subs: dict[str, list[Finding]] = {}
    for rid in owner:
        head = top(rid)
        if head != rid:
            subs.setdefault(head, []).append(plain[rid])
    out = [
        _finding(by_id[rid], tuple(sorted(subs[rid], key=rank))) if rid in subs else f
        for rid, f in plain.items()
        if top(rid) == rid
    ]
    return sorted(out, key=rank)


def _without_contradictions(findings: list[Finding]) -> list[Finding]:
    """No "this link works" beside a fault on the same link."""
    broken = {g.link for f in findings if f.kind == "fault" for g in flatten([f])}
    return [f for f in findings if not (f.kind == "ok" and f.link in broken)]


def _links(flat: list[Finding], results: list[RuleResult]) -> tuple[LinkState, ...]:
    """The state of each registration link, from every finding (consequences included)."""
    out = []
    for link in REGISTRATION_LINKS:
        faults = sorted((f for f in flat if f.link == link and f.kind == "fault"), key=rank)
        oks = [f for f in flat if f.link == link and f.kind == "ok"]
        if faults:
            out.append(LinkState(link, "broken", faults[0].title, faults[0].rule_id))
        elif oks:
            out.append(LinkState(link, "ok", oks[0].title, oks[0].rule_id))
        else:
            missing = sorted(
                {
                    k
                    for r in results
                    if r.rule.link == link and r.rule.kind == "ok" and r.outcome == NOT_EVALUATED
                    for k in r.missing
                }
            )
            reason = (
                f"not enough evidence (needs {', '.join(missing)})"
                if missing
                else "no rule could confirm or refute it"
            )
            out.append(LinkState(link, "unknown", reason))
    return tuple(out)


def competing(faults: list[Finding]) -> list[Finding]:
    """Other causes as certain and as grave as the first one that no rule declares a consequence
    of it (by `explains`): a cause of another category at the same confidence and severity (or
    worse). A lesser finding (a warning beside an error) and findings that are no cause
    (category inconclusive, severity info) do not compete."""
    head = faults[0]
    return [
        f
        for f in faults[1:]
        if f.category != head.category
        and f.confidence == head.confidence
        and SEVERITY_RANK[f.severity] <= SEVERITY_RANK[head.severity]
        and f.severity != "info"
        and f.category not in ("inconclusive", "healthy")
    ]


def _verdict(
    findings: list[Finding], links: tuple[LinkState, ...], ctx: NodeContext, lang: str = "en"
) -> Verdict:
    faults = [f for f in findings if f.kind == "fault"]
    if faults:
        f = faults[0]
        rivals = competing(faults)
        if not rivals:
            return Verdict(
                f.rule_id,
                f.category,
                f.severity,
                f.title,
                f.case,
                f.confidence,
                f.confidence_reason,
            )
        named = "; ".join(f"{r.title} ({r.rule_id})" for r in rivals[:2])
        return Verdict(
            f.rule_id,
            f.category,
            f.severity,
            f.title,
            f.case,
            lower(f.confidence),
            f.confidence_reason + message("reason-competing", lang, rivals=named),
            tuple(r.rule_id for r in rivals),
        )
    state = {ln.link: ln.state for ln in links}
    from_object = ctx.facts.value("register.from") == "annotation"
    if state.get("count") == "ok" and state.get("spec") == "ok" and from_object:
        level = "high" if state.get("liveness") == "ok" else "medium"
        return Verdict(
            None,
            "healthy",
            "info",
            message("verdict-healthy", lang),
            confidence=level,
            confidence_reason=message("reason-healthy", lang)
            + (message("reason-healthy-scheduler", lang) if level == "high" else ""),
        )
    answered = [
        f
        for f in findings
        if f.kind == "normal" and any(e.artefact == "issue-text" for e in f.evidence)
    ]
    if answered and "broken" not in state.values():
        return Verdict(
            None,
            "healthy",
            "info",
            message("verdict-expected", lang, title=answered[0].title),
            confidence="medium",
            confidence_reason=message("reason-expected", lang),
        )
    return Verdict(
        None,
        "inconclusive",
        "info",
        message("verdict-inconclusive", lang),
        confidence="low",
        confidence_reason=message("reason-inconclusive", lang),
    )


def _register_info(ctx: NodeContext) -> RegisterInfo | None:
    r = ctx.register
    if r is None:
        if ctx.facts.value("register.status") == "absent":
            return RegisterInfo("hami.io/node-nvidia-register", "absent", "annotation")
        return None
    return RegisterInfo(
        r.key,
        r.status,
        ctx.facts.value("register.from") or "annotation",
        r.format,
        r.error,
        r.text[:4000],
        tuple(r.devices),
    )


def _handshake_info(ctx: NodeContext) -> HandshakeInfo | None:
    present = ctx.facts.value("handshake.present")
    if present is None:
        return None
    h = ctx.handshake
    others = tuple(ctx.facts.value("handshake.other_vendor_keys", []))
    if h is None:
        return HandshakeInfo(False, other_vendor_keys=others)
    return HandshakeInfo(
        True, h.key, h.state, h.text, h.time, ctx.facts.value("handshake.age_seconds"), others
    )


def _version_info(ctx: NodeContext) -> VersionInfo:
    v = ctx.version
    return VersionInfo(
        v.label,
        v.describe(),
        tuple(VersionClue(str(e.range), e.reason, e.where) for e in v.evidence),
        tuple(VersionClue(str(e.range), e.reason, e.where) for e in v.conflicts),
        tuple((c, str(i.range)) for c, i in sorted(ctx.components.items()) if i.known),
        v.missing,
    )


def build_node(
    ctx: NodeContext,
    results: list[RuleResult],
    ruleset: RuleSet,
    timeline: NodeTimeline,
    lang: str = "en",
) -> NodeReport:
    """One node's report from its context, its rule results and its timeline stage's output."""
    fired = [r for r in results if r.outcome == FIRED]
    findings = _without_contradictions(_group(fired))
    flat = flatten(findings)
    links = _links(flat, results)
    verdict = _verdict(findings, links, ctx, lang)
    rows, total = cited_rows(timeline, flat)
    return NodeReport(
        node=ctx.name,
        primary=verdict,
        findings=tuple(findings),
        links=links,
        not_evaluated=tuple(
            NotEvaluated(r.rule.id, r.rule.title, tuple(sorted(r.missing)))
            for r in results
            if r.outcome == NOT_EVALUATED
        ),
        not_applicable=tuple(r.rule.id for r in results if r.outcome == NOT_APPLICABLE),
        not_fired=tuple(r.rule.id for r in results if r.outcome == NOT_FIRED),
        explained_away=tuple(r.rule.id for r in results if r.outcome == EXPLAINED),
        rule_errors=tuple(
            [*ctx.index.errors, *(r.error for r in results if r.outcome == ERROR and r.error)]
        ),
        collect=next_steps.choose(
            verdict, results, ctx, ruleset.catalogue, lang, collected=ctx.collected
        ),
        version=_version_info(ctx),
        clock=ClockInfo(
            ctx.clock.collected_at, ctx.clock.year, ctx.clock.source, ctx.clock.missing
        ),
        namespace=_namespace_info(ctx, lang),
        register=_register_info(ctx),
        handshake=_handshake_info(ctx),
        decisions=build_decisions(ctx, ruleset.decisions),
        timeline=rows,
        timeline_total=total,
        episodes=timeline.episodes,
        clock_issues=timeline.clock_issues,
    )


def _namespace_info(ctx: NodeContext, lang: str) -> NamespaceInfo:
    name = ctx.shell_values()["NS"] or ""
    where = ctx.facts.where("hami.namespace")
    if ctx.facts.value("hami.namespace") is None:
        return NamespaceInfo(name, False, message("namespace-assumed", lang, namespace=name))
    how = ctx.facts.value("hami.namespace_from", "")
    text = message("namespace-stated", lang, namespace=name, how=how, where=str(where))
    return NamespaceInfo(name, True, text, str(where) if where else None)


def cited_rows(
    timeline: NodeTimeline, findings: list[Finding]
) -> tuple[tuple[TimelineRow, ...], int]:
    """The bounded copy of the events the report carries, each marked with the findings that
    cite it, and how many events there are in all."""
    cites: dict[tuple[str, int], list[str]] = {}
    for f in findings:
        for e in f.evidence:
            if e.file and e.line:
                cites.setdefault((e.file, e.line), []).append(f.rule_id)
    if timeline.frame.height <= min(DIAGNOSIS_ROWS, READ_WHOLE_ROWS):  # all of them, as rows
        joined = {k: ",".join(v) for k, v in cites.items()}
        rows_read = timeline.frame.to_dicts()
        for r in rows_read:
            r["findings"] = joined.get((r["file"], r["line"]))
        return tuple(TimelineRow(**r) for r in rows_read), timeline.frame.height
    keys = pl.DataFrame(
        [(k[0], k[1], ",".join(v)) for k, v in cites.items()],
        schema={"file": pl.String, "line": pl.Int64, "findings": pl.String},
        orient="row",
    )
    rows = timeline.frame.lazy().join(
        keys.lazy(), on=["file", "line"], how="left", maintain_order="left"
    )
    if timeline.frame.height > DIAGNOSIS_ROWS:  # the events that say something, when not all fit
        rows = rows.filter(
            pl.col("signature").is_not_null()
            | pl.col("severity").is_in(["W", "E", "F"])
            | (pl.col("source") == "node")
            | pl.col("findings").is_not_null()
        )
    kept = rows.head(DIAGNOSIS_ROWS).collect(engine=IN_MEMORY).to_dicts()
    return tuple(TimelineRow(**r) for r in kept), timeline.frame.height


def _badness(n: NodeReport) -> tuple:
    p = n.primary
    if n.faults():
        return (0, CONFIDENCE_RANK[p.confidence], SEVERITY_RANK[p.severity])
    return (1 if p.category == "inconclusive" else 2, 0, 0)


def _log_stats(log: ParsedLog, starts: dict[str, str]) -> LogStatsRow:
    """Whole-file statistics; `restarts` counts the process starts after the first, by the start
    signature rules/timeline.yaml declares for the log's kind (None: no such signature)."""
    s = log.stats
    start = starts.get(log.artefact.kind)
    return LogStatsRow(
        file=log.artefact.file.name,
        kind=log.artefact.kind,
        first_line=log.artefact.first_line,
        lines=s.lines,
        klog_lines=s.klog_lines,
        severities=dict(s.severities),
        first=s.first_clock,
        last=s.last_clock,
        containers=tuple(s.containers),
        hard_wrap_joins=s.hard_wrap_joins,
        truncated_last_line=s.truncated_last_line,
        all_lines_kept=s.all_lines_kept,
        signature_counts=dict(sorted(s.sig_counts.items())),
        restarts=max(0, s.sig_counts.get(start, 0) - 1) if start else None,
    )


def build_report(
    bundle: ParsedBundle,
    nodes: list[NodeReport],
    ruleset: RuleSet,
    warnings: tuple[InputWarning, ...] = (),
) -> Report:
    """`warnings`: the facts stage's about the inputs (logs of no node), shown before the
    reader's and the parsers'."""
    return Report(
        nodes=tuple(sorted(nodes, key=_badness)),
        inventory=tuple(
            ArtefactRow(a.file.name, a.kind, a.reason, a.first_line, a.file.size)
            for a in bundle.artefacts
        ),
        input_warnings=(*warnings, *bundle.input_warnings),
        log_stats=tuple(_log_stats(log, ruleset.episodes.starts) for log in bundle.logs),
        analyzer_version=__version__,
        rules_version=ruleset.version,
        digest=bundle.digest,
    )
