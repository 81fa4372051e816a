"""Evaluate every rule over one node's context. The engine returns rule results and nothing
else; analyzer/report/build.py turns them into the report.

A rule fires when `when` is TRUE and `unless` is not TRUE. Its confidence is the weakest of the
rule's own cap and the evidence (a line of a recognised log: high; a bare quoted error or the
issue's prose: medium; a described symptom or an inference from absence: low), one level lower
when `unless` could not be checked."""

from __future__ import annotations

from dataclasses import dataclass

import regex

from analyzer.catalogue.messages import message
from analyzer.facts.context import NodeContext
from analyzer.facts.model import STRENGTHS, Evidence, lower, weakest
from analyzer.rules.conditions import Tri, human_duration
from analyzer.rules.model import Rule, RuleSet, Step
from analyzer.rules.templates import TemplateProblem, render, render_command

FIRED, NOT_FIRED, NOT_EVALUATED, NOT_APPLICABLE, ERROR, EXPLAINED = (
    "fired",
    "not-fired",
    "not-evaluated",
    "not-applicable",
    "error",
    "explained-away",
)


@dataclass(frozen=True)
class RuleResult:
    """One rule's evaluation on a node, with its texts written out."""

    rule: Rule
    outcome: str
    evidence: tuple[Evidence, ...] = ()
    missing: frozenset[str] = frozenset()
    confidence: str | None = None
    confidence_reason: str = ""
    title: str = ""
    explanation: str = ""
    remediation: tuple[Step, ...] = ()
    error: str | None = None


def _template_context(ctx: NodeContext) -> dict:
    caps = {sid: ms[0].captures for sid, ms in ctx.index.matches.items() if ms}
    shell = ctx.shell_values()
    return {
        # known values fill commands; what the bundle does not tell stays a shell variable
        "node": shell["NODE"] or "$NODE",
        "pod": shell["POD"] or "$POD",
        "pod_ns": shell["POD_NS"] or "$POD_NS",
        "namespace": shell["NS"],  # HAMi's: stated by the bundle, else the chart's usual one
        "fact": lambda path, default=None: ctx.facts.value(path, default),
        "captures": caps,
        "count": ctx.index.count,
        "version": ctx.version.describe(),
        "register": ctx.register,
        "handshake": ctx.handshake,
        "human": human_duration,
        "device_plugin": _device_plugin(ctx),
    }


def _quoting(evidence: tuple[Evidence, ...], ctx: NodeContext, tctx: dict) -> dict:
    """A fired rule's texts quote the lines it fired on: each signature among its evidence gives
    the captures of its first evidence line (the strongest), not of its first match anywhere in
    the bundle, which another component's line of the same shape may be (an ingress webhook's
    error before Volcano's). A signature the texts name but the evidence does not keeps its
    first match."""
    chosen: dict[str, dict] = {}
    for e in evidence:
        if e.kind != "log" or not e.signature or e.signature in chosen:
            continue
        for m in ctx.index.matches.get(e.signature, ()):
            if m.line == e.line and m.file == e.file:
                chosen[e.signature] = m.captures
                break
    if not chosen:
        return tctx
    return {**tctx, "captures": {**tctx["captures"], **chosen}}


def _device_plugin(ctx: NodeContext) -> str | None:
    """Whose device plugin the bundle shows, so a fix names the right one (HAMi's plugin prints
    NVIDIA's messages too): "hami" with a HAMi version or register annotation, "nvidia" with only
    NVIDIA's own k8s-device-plugin's version, None when the bundle does not tell."""
    if ctx.version.known or ctx.facts.value("register.present"):
        return "hami"
    if ctx.facts.value("version.nvidia-device-plugin"):
        return "nvidia"
    return None


_CJK = r"[\p{Han}\p{InCJK_Symbols_and_Punctuation}\p{InHalfwidth_and_Fullwidth_Forms}]"
_PUNCT = r"[\p{InCJK_Symbols_and_Punctuation}\p{InHalfwidth_and_Fullwidth_Forms}]"
_CJK_BREAK = regex.compile(
    rf"(?<={_CJK})\s*\n\s*(?={_CJK})|(?<={_PUNCT})\s*\n\s*|\s*\n\s*(?={_PUNCT})"
)


def _reflow(text: str) -> str:
    r"""YAML block scalars keep the rule author's line breaks; a paragraph reads as one line.
    A break between two Chinese characters, or next to Chinese punctuation, is no space (Chinese
    puts none between words, nor around its full-width punctuation).

    >>> _reflow("a\nb\n\n插件\n退出 x\nNVML。\nok：\nx")
    'a b\n\n插件退出 x NVML。ok：x'
    """
    paras = [" ".join(_CJK_BREAK.sub("", p).split()) for p in regex.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)


def _dedupe(evidence) -> tuple[Evidence, ...]:
    seen, out = set(), []
    for e in evidence:
        if e.key not in seen:
            seen.add(e.key)
            out.append(e)
    return tuple(out)


def _reason(
    level: str, evidence: tuple[Evidence, ...], unless_unknown: frozenset[str], lang: str = "en"
) -> str:
    logs = [e for e in evidence if e.kind == "log"]
    if any(e.strength == "high" for e in logs) and level == "high":
        e = next(e for e in logs if e.strength == "high")
        why = message("reason-decisive", lang, where=f"{e.file}:{e.line}")
    elif logs and all(e.strength == "low" for e in logs):
        why = message("reason-symptom", lang)
    elif any(e.kind == "absence" for e in evidence) and not logs:
        why = message("reason-absence", lang)
    elif logs:
        e = min(logs, key=lambda x: STRENGTHS.index(x.strength))
        key = "reason-quoted" if e.strength == "medium" else "reason-log-line"
        why = message(key, lang, where=f"{e.file}:{e.line}")
    else:
        why = message("reason-facts", lang)
    if unless_unknown:
        why += message("reason-unless", lang, kinds=", ".join(sorted(unless_unknown)))
    return why


def applicable(rule: Rule, ctx: NodeContext) -> bool:
    if not ctx.version.allows(rule.versions):
        return False
    for comp, rng in rule.component_versions.items():
        inf = ctx.components.get(comp)
        if inf is not None and not inf.allows(rng):
            return False
    return True


def evaluate(ruleset: RuleSet, ctx: NodeContext, lang: str = "en") -> list[RuleResult]:
    """Every rule's result; fired rules carry their texts rendered in `lang`."""
    tctx = _template_context(ctx)
    out: list[RuleResult] = []
    for rule in sorted(ruleset.rules.values(), key=lambda r: r.id):
        if rule.disabled:
            continue
        if not applicable(rule, ctx):
            out.append(RuleResult(rule, NOT_APPLICABLE))
            continue
        try:
            when = rule.when.evaluate(ctx)
            unless = rule.unless.evaluate(ctx) if rule.unless is not None else None
        except (TimeoutError, ValueError) as exc:
            out.append(RuleResult(rule, ERROR, error=f"rule {rule.id}: {exc}"))
            continue
        if when.state is Tri.UNKNOWN:
            out.append(RuleResult(rule, NOT_EVALUATED, missing=when.missing))
            continue
        if when.state is Tri.FALSE:
            out.append(RuleResult(rule, NOT_FIRED))
            continue
        if unless is not None and unless.state is Tri.TRUE:
            out.append(RuleResult(rule, EXPLAINED, evidence=_dedupe(unless.evidence)))
            continue
        evidence = _dedupe(when.evidence)
        level = weakest(rule.confidence, when.strength)
        unless_unknown = (
            unless.missing if unless is not None and unless.state is Tri.UNKNOWN else frozenset()
        )
        if unless_unknown:
            level = lower(level)
        quoted = _quoting(evidence, ctx, tctx)
        try:
            title_t, explanation_t, steps_t = rule.texts(lang)
            title = render(title_t, **quoted)
            explanation = _reflow(render(explanation_t, **quoted))
            # a step whose text renders empty does not apply here (the fix of another component)
            steps = tuple(
                Step(text, render_command(s.command, **quoted) if s.command else None)
                for s in steps_t
                if (text := render(s.text, **quoted))
            )
        except TemplateProblem as exc:
            out.append(RuleResult(rule, ERROR, error=f"rule {rule.id}: template error: {exc}"))
            continue
        out.append(
            RuleResult(
                rule,
                FIRED,
                evidence,
                unless_unknown,
                level,
                _reason(level, evidence, unless_unknown, lang),
                title,
                explanation,
                steps,
            )
        )
    return out
