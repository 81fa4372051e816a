"""Evaluate rules over a NodeContext and assemble the Diagnosis."""

from __future__ import annotations

import datetime as dt
from typing import Any

import regex
from jinja2 import TemplateError

from analyzer import __version__
from analyzer.diagnosis import (
    SEVERITY_RANK,
    Collect,
    Diagnosis,
    Evidence,
    Finding,
    LinkState,
    NotEvaluated,
    Primary,
    Step,
)
from analyzer.facts import NodeContext
from analyzer.pipeline import ParsedBundle
from analyzer.rules.model import Rule, RuleSet
from analyzer.rules.templates import render

MAX_EVIDENCE_LINES = 3
REGISTRATION_LINKS = ("count", "spec", "liveness")
_DURATION_RE = regex.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)?$")


def _duration(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"bad duration {value!r}")
    return float(m[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m[2] or "s"]


def _compare(value: Any, cond: dict[str, Any], facts: dict[str, Any] | None = None) -> bool:
    for op, want in cond.items():
        if op in ("fact", "age_of"):
            continue
        if isinstance(want, dict) and "fact" in want:  # compare with another fact
            want = (facts or {}).get(want["fact"])
            if want is None:
                return False
        if op == "exists":
            ok = (value is not None and value != []) == bool(want)
        elif value is None:
            ok = op in ("ne", "not_in", "not_contains")
        elif op == "eq":
            ok = value == want or str(value) == str(want)
        elif op == "ne":
            ok = not (value == want or str(value) == str(want))
        elif op in ("gt", "ge", "lt", "le"):
            try:
                a, b = float(value), float(want)
            except (TypeError, ValueError):
                return False
            ok = {"gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[op]
        elif op == "in":
            ok = value in want or str(value) in [str(w) for w in want]
        elif op == "not_in":
            ok = value not in want and str(value) not in [str(w) for w in want]
        elif op == "matches":
            ok = regex.search(str(want), str(value), timeout=0.25) is not None
        elif op == "contains":
            ok = want in value if isinstance(value, list | dict | str) else False
        elif op == "not_contains":
            ok = want not in value if isinstance(value, list | dict | str) else True
        else:
            return False
        if not ok:
            return False
    return True


class Evaluator:
    def __init__(self, ruleset: RuleSet, ctx: NodeContext):
        self.rs = ruleset
        self.ctx = ctx

    def matches_for(self, cond: dict[str, Any]):
        ms = self.ctx.matches.get(cond["signature"], [])
        where = cond.get("where") or {}
        if where:
            ms = [
                m
                for m in ms
                if all(
                    regex.search(str(p), m.captures.get(c, ""), timeout=0.25)
                    for c, p in where.items()
                )
            ]
        return ms

    def evaluate(self, cond: dict[str, Any]) -> tuple[bool, list[Evidence]]:
        if "all" in cond:
            ev: list[Evidence] = []
            for c in cond["all"]:
                ok, e = self.evaluate(c)
                if not ok:
                    return False, []
                ev.extend(e)
            return True, ev
        if "any" in cond:
            hit, ev = False, []
            for c in cond["any"]:
                ok, e = self.evaluate(c)
                if ok:
                    hit = True
                    ev.extend(e)
            return hit, ev
        if "not" in cond:
            ok, _ = self.evaluate(cond["not"])
            inner = cond["not"]
            if not ok and "signature" in inner:
                sig = self.rs.signatures[inner["signature"]]
                return True, [
                    Evidence(
                        "absence",
                        text=f"no line matches '{sig.id}' ({sig.meaning.splitlines()[0] if sig.meaning else sig.pattern})",
                        signature=sig.id,
                    )
                ]
            return not ok, []
        if "signature" in cond:
            ms = self.matches_for(cond)
            count = len(ms)
            if not cond.get("where") and not self.rs.signatures[cond["signature"]].node_capture:
                # big logs keep only samples of each signature; the scan counted every line
                count = max(count, self.ctx.sig_counts.get(cond["signature"], 0))
            ok = count >= int(cond.get("count_ge", 1))
            if "count_le" in cond:
                ok = ok and count <= int(cond["count_le"])
            if not ok:
                return False, []
            ev = [
                Evidence("log", m.file, m.line, m.text, span=m.span, signature=m.sig, count=count)
                for m in ms[:MAX_EVIDENCE_LINES]
            ]
            return True, ev
        if "age_of" in cond:
            path = cond["age_of"]
            t = self.ctx.facts.get(path)
            now = self.ctx.clock.collected_at
            if not isinstance(t, dt.datetime) or now is None:
                return False, []
            age = (now - t).total_seconds()
            ops = {k: _duration(v) for k, v in cond.items() if k != "age_of"}
            if not _compare(age, ops):
                return False, []
            file, line = self.ctx.locate(path)
            return True, [
                Evidence(
                    "fact",
                    file,
                    line,
                    path=path,
                    value=f"{t:%Y-%m-%d %H:%M:%S} UTC ({_human(age)} before collection)",
                )
            ]
        path = cond["fact"]
        value = self.ctx.facts.get(path)
        if not _compare(value, cond, self.ctx.facts):
            return False, []
        file, line = self.ctx.locate(path)
        return True, [Evidence("fact", file, line, path=path, value=_plain(value))]


def _human(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _plain(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S UTC")
    return v


def _template_context(ctx: NodeContext) -> dict[str, Any]:
    caps = {sid: ms[0].captures for sid, ms in ctx.matches.items() if ms}
    name = ctx.facts.get("node.name") or "$NODE"
    return {
        "node": name,
        "facts": ctx.facts,
        "fact": lambda path, default=None: ctx.facts.get(path, default),
        "captures": caps,
        "count": lambda sid: max(len(ctx.matches.get(sid, [])), ctx.sig_counts.get(sid, 0)),
        "version": ctx.version.describe(),
        "register": ctx.register,
        "handshake": ctx.handshake,
        "human": _human,
    }


def _missing(rule: Rule, ctx: NodeContext) -> list[str]:
    missing = []
    for item in rule.requires:
        options = item if isinstance(item, list) else [item]
        if not any(o in ctx.sources for o in options):
            missing.append(" or ".join(options))
    return missing


def diagnose(ruleset: RuleSet, ctx: NodeContext, bundle: ParsedBundle) -> Diagnosis:
    ev = Evaluator(ruleset, ctx)
    tctx = _template_context(ctx)
    findings: list[Finding] = []
    not_eval: list[NotEvaluated] = []
    not_applicable: list[str] = []
    not_fired: list[str] = []
    errors = list(ctx.errors)
    for rule in sorted(ruleset.rules.values(), key=lambda r: r.id):
        if rule.disabled:
            continue
        missing = _missing(rule, ctx)
        if missing:
            not_eval.append(NotEvaluated(rule.id, rule.title, missing))
            continue
        if ctx.version.known and not rule.versions.overlaps(ctx.version.range):
            not_applicable.append(rule.id)
            continue
        if any(
            comp in ctx.components
            and ctx.components[comp].known
            and not rng.overlaps(ctx.components[comp].range)
            for comp, rng in rule.component_versions.items()
        ):
            not_applicable.append(rule.id)
            continue
        try:
            fired, evidence = ev.evaluate(rule.when)
        except (TimeoutError, ValueError) as exc:
            errors.append(f"rule {rule.id}: {exc}")
            continue
        if not fired:
            not_fired.append(rule.id)
            continue
        try:
            explanation = _reflow(render(rule.explanation, **tctx))
            title = render(rule.title, **tctx)
            steps = [
                Step(
                    render(s.get("text", ""), **tctx),
                    render(s["command"], **tctx) if s.get("command") else None,
                )
                for s in rule.remediation
            ]
        except TemplateError as exc:
            errors.append(f"rule {rule.id}: template error: {exc}")
            continue
        findings.append(
            Finding(
                rule.id,
                title,
                rule.category,
                rule.severity,
                rule.kind,
                rule.link,
                rule.case,
                explanation,
                steps,
                rule.references,
                _dedupe(evidence),
                rule.priority,
            )
        )
    kind_rank = {"fault": 0, "normal": 1, "ok": 2}
    findings.sort(
        key=lambda f: (kind_rank[f.kind], SEVERITY_RANK[f.severity], -f.priority, f.rule_id)
    )
    links = _links(findings, ruleset, ctx)
    primary = _primary(findings, links)
    return Diagnosis(
        node=ctx.facts.get("node.name"),
        primary=primary,
        findings=findings,
        links=links,
        not_evaluated=not_eval,
        not_applicable=not_applicable,
        not_fired=not_fired,
        rule_errors=errors,
        collect=_collect(not_eval, ruleset, ctx, primary),
        version={
            "range": str(ctx.version.range) if ctx.version.known else None,
            "summary": ctx.version.describe(),
            "evidence": [
                {"range": str(e.range), "reason": e.reason, "where": e.where}
                for e in ctx.version.evidence
            ],
            "conflicts": [
                {"range": str(e.range), "reason": e.reason, "where": e.where}
                for e in ctx.version.conflicts
            ],
        },
        clock={
            "collected_at": _plain(ctx.clock.collected_at),
            "year": ctx.clock.year,
            "how": ctx.clock.source,
        },
        register=_register_dict(ctx),
        handshake=_handshake_dict(ctx),
        inventory=[
            {
                "file": a.file.name,
                "kind": a.kind,
                "reason": a.reason,
                "first_line": a.first_line,
                "size": a.file.size,
            }
            for a in bundle.inventory.artefacts
        ],
        warnings=list(bundle.inventory.warnings),
        log_stats=[_log_stats(log, ruleset.episodes.get("starts") or {}) for log in bundle.logs],
        other_nodes=[
            n.name for n in bundle.nodes if n.name and n.name != ctx.facts.get("node.name")
        ],
        analyzer_version=__version__,
        rules_version=ruleset.version,
    )


def _dedupe(evidence: list[Evidence]) -> list[Evidence]:
    seen, out = set(), []
    for e in evidence:
        key = (e.kind, e.file, e.line, e.path, e.signature)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def _links(findings: list[Finding], ruleset: RuleSet, ctx: NodeContext) -> list[LinkState]:
    out = []
    for link in REGISTRATION_LINKS:
        faults = [f for f in findings if f.link == link and f.kind == "fault"]
        oks = [f for f in findings if f.link == link and f.kind in ("ok", "normal")]
        if faults:
            out.append(LinkState(link, "broken", faults[0].title, faults[0].rule_id))
        elif [f for f in oks if f.kind == "ok"]:
            f = next(f for f in oks if f.kind == "ok")
            out.append(LinkState(link, "ok", f.title, f.rule_id))
        else:
            needs = {
                r.link: r.requires
                for r in ruleset.rules.values()
                if r.link == link and r.kind == "ok"
            }
            req = needs.get(link, [])
            missing = [
                s for s in (x if isinstance(x, str) else x[0] for x in req) if s not in ctx.sources
            ]
            reason = (
                f"not enough evidence (needs {', '.join(missing)})"
                if missing
                else "no rule could confirm or refute it"
            )
            out.append(LinkState(link, "unknown", reason))
    return out


def _primary(findings: list[Finding], links: list[LinkState]) -> Primary:
    faults = [f for f in findings if f.kind == "fault"]
    if faults:
        f = faults[0]
        return Primary(f.rule_id, f.category, f.severity, f.title, f.case)
    state = {ln.link: ln.state for ln in links}
    if state.get("count") == "ok" and state.get("spec") == "ok":
        return Primary(
            None, "healthy", "info", "No fault found: the node's registration links are intact"
        )
    return Primary(
        None,
        "inconclusive",
        "info",
        "Inconclusive: the bundle lacks the evidence to decide; see what to collect",
    )


def _collect(
    not_eval: list[NotEvaluated], ruleset: RuleSet, ctx: NodeContext, primary: Primary
) -> list[Collect]:
    by_source: dict[str, list[str]] = {}
    for ne in not_eval:
        for m in ne.missing:
            first = m.split(" or ")[0]
            by_source.setdefault(first, []).append(ne.rule_id)
    node = ctx.facts.get("node.name") or "$NODE"
    out = []
    for sid in sorted(by_source, key=lambda s: (-len(by_source[s]), s)):
        src = ruleset.sources.get(sid)
        if src is None or not src.collect:
            continue
        cmd = render(src.collect, node=node)
        out.append(Collect(sid, src.title, cmd, sorted(by_source[sid])))
    return out


def _register_dict(ctx: NodeContext) -> dict[str, Any] | None:
    r = ctx.register
    if r is None:
        return (
            {"status": "absent", "key": "hami.io/node-nvidia-register", "devices": []}
            if ctx.node
            else None
        )
    return {
        "key": r.key,
        "status": r.status,
        "format": r.format,
        "error": r.error,
        "text": r.text[:4000],
        "devices": [d.as_dict() for d in r.devices],
    }


def _handshake_dict(ctx: NodeContext) -> dict[str, Any] | None:
    h = ctx.handshake
    if h is None:
        return {"present": False, "key": "hami.io/node-handshake"} if ctx.node else None
    age = ctx.facts.get("handshake.age_seconds")
    return {
        "present": True,
        "key": h.key,
        "state": h.state,
        "value": h.text,
        "time": _plain(h.time),
        "age": _human(age) if isinstance(age, float) else None,
        "other_vendor_keys": ctx.facts.get("handshake.other_vendor_keys", []),
    }


def _log_stats(log, starts: dict[str, str]) -> dict[str, Any]:
    """Whole-file statistics; `restarts` counts the process starts after the first, by the start
    signature rules/timeline.yaml declares for the log's kind (None: no such signature)."""
    s = log.stats
    start = starts.get(log.artefact.kind)
    return {
        "file": log.artefact.file.name,
        "kind": log.artefact.kind,
        "first_line": log.artefact.first_line,
        "lines": s.lines,
        "klog_lines": s.klog_lines,
        "severities": s.severities,
        "first": s.first_clock,
        "last": s.last_clock,
        "containers": s.containers,
        "hard_wrap_joins": s.hard_wrap_joins,
        "truncated_last_line": s.truncated_last_line,
        "all_lines_kept": s.all_lines_kept,
        "signature_counts": dict(sorted(s.sig_counts.items())),
        "restarts": max(0, s.sig_counts.get(start, 0) - 1) if start else None,
    }


def _reflow(text: str) -> str:
    """YAML block scalars keep the rule author's line breaks; a paragraph reads as one line."""
    paras = [" ".join(p.split()) for p in regex.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)
