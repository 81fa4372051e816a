"""A GitHub comment for the issue bot: short, safe, deterministic.

Everything that came from the issue or the bundle is neutralised: in prose it cannot mention
people, link issues, start HTML, images or links, or break the layout; in code blocks it sits
inside a fence longer than any backtick run it contains, so it cannot close the fence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import regex

from analyzer import __version__
from analyzer.bundle.text import printable
from analyzer.catalogue.messages import message
from analyzer.facts.model import STRENGTHS, Evidence
from analyzer.report.model import NodeReport, Report
from analyzer.report.next_steps import COLLECTED

MAX_COMMENT = 65_536
MAX_NEXT_STEPS = 3
MAX_UNREAD = 5  # lines about attachments that could not be analysed
MARKER = "hami-bundle-analyzer"
ZWSP = "\u200b"
_MD_INLINE = regex.compile(r"([\\`*_\[\]|~$])")  # emphasis, code, links, tables, strike, math
_SEVERITY_ICON = {"critical": "🔴", "error": "🔴", "warning": "🟠", "info": "🔵"}


def safe_text(value: object, limit: int = 600) -> str:
    r"""Untrusted text for a Markdown paragraph: one line, every Markdown/HTML metacharacter
    escaped, mentions and issue references broken with a zero-width space. Characters that do
    not print (bidi overrides that reverse what a reader sees, invisible joiners) are shown as
    "?", as in code.

    >>> safe_text("run \u202ehs.lave|lruc @\u2060team")
    'run ?hs.lave\\|lruc @?team'
    """
    text = printable(" ".join(str(value).split()), keep="")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_INLINE.sub(r"\\\1", text)
    text = regex.sub(r"!(?=\\\[)", r"\\!", text)  # no images
    text = regex.sub(r"^([#+\-=]|\d+[.)])", r"\\\1", text)  # no heading/list/rule at the start
    text = regex.sub(r"#(?=\d)", "#" + ZWSP, text)  # no #123 issue links
    text = regex.sub(r"@(?=\w)", "@" + ZWSP, text)  # no @mentions
    text = regex.sub(r"(?i)\b(gh)-(?=\d)", r"\1" + ZWSP + "-", text)  # no GH-123 links
    text = regex.sub(r"(?i)(?<=\w)://", ZWSP + "://", text)  # no autolinked URLs
    text = regex.sub(r"(?i)\bwww\.", "www" + ZWSP + ".", text)
    return text


def code_block(text: str, limit: int = 4000) -> str:
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + "\n… (cut)"
    text = printable(text)
    longest = max((len(m) for m in regex.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def table_cell(markdown: str) -> str:
    r"""Inline Markdown made safe for a GFM table cell. GFM splits a row at every `|` not
    escaped by a backslash, inside code spans too, before any inline parsing: a `|` in a node
    name would end its cell mid-span and let the rest go live as raw HTML or mentions. Every `|`
    gets its escape (GFM turns `\|` back into `|`, in code spans as well); one already escaped
    stays as it is, and a backslash before it cannot cancel the escape.

    >>> print(table_cell(r"`a|b` \| c \\|d"))
    `a\|b` \| c \\\|d
    """
    return regex.sub(r"(?<!\\)((?:\\\\)*)\|", r"\1\\|", markdown)


def _one_line(command: str) -> str:
    """A command of several lines (an install, then the run) as one line that still runs them."""
    return " && ".join(line.strip() for line in command.splitlines() if line.strip())


def code_span(text: object, limit: int = 120) -> str:
    """Inline code: literal on GitHub (no escapes, mentions or links inside)."""
    text = printable(" ".join(str(text).split())[:limit], keep="")
    longest = max((len(m) for m in regex.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _best_evidence(evidence: tuple[Evidence, ...]) -> Evidence:
    """A log line if there is one (the strongest), else the last (most specific) fact."""
    logs = [e for e in evidence if e.kind == "log"]
    if logs:
        return min(logs, key=lambda e: STRENGTHS.index(e.strength))
    return evidence[-1]


def _evidence(e: Evidence) -> str:
    if e.kind == "log":
        more = f" ({e.count} matching lines)" if e.count and e.count > 1 else ""
        return f"{code_span(f'{e.file}:{e.line}')}{more}\n{code_block(e.text or '', 600)}"
    if e.kind == "fact":
        where = f" in {code_span(f'{e.file}:{e.line}')}" if e.file and e.line else ""
        return f"{code_span(e.path)}{where}\n{code_block(str(e.value), 600)}"
    return f"_{safe_text(e.text or '')}_"


def _icon(n: NodeReport) -> str:
    p = n.primary
    if p.category == "healthy":
        return "🟢"
    if p.category == "inconclusive":
        return "⚪"
    return _SEVERITY_ICON[p.severity]


def _level(level: str, lang: str) -> str:
    return message(f"level-{level}", lang)


def _headline(n: NodeReport, lang: str) -> str:
    p = n.primary
    likely = message("likely", lang) if p.likely else ""
    node = (
        message("on-node", lang, node=code_span(n.node, 80))
        if n.node and n.node not in p.title
        else ""
    )
    meta = [f"`{p.category}`"]
    if p.rule_id:
        meta.append(message("rule", lang, rule=f"`{p.rule_id}`"))
    if p.category != "inconclusive":
        meta.append(message("confidence-level", lang, level=_level(p.confidence, lang)))
    return f"{_icon(n)} **{likely}{safe_text(p.title, 300)}**{node} ({', '.join(meta)})"


def _node_body(n: NodeReport, steps: int, lang: str) -> list[str]:
    """The verdict alone (its explanation, best evidence and first `steps` fix steps): the other
    faults are one line each under the details."""
    body: list[str] = []
    for f in n.faults()[:1]:
        body += [
            "",
            f"### {_SEVERITY_ICON[f.severity]} {safe_text(f.title, 300)}",
            "",
            safe_text(f.explanation, 1200),
        ]
        if f.confidence != "high":
            note = message(
                "confidence-note",
                lang,
                level=_level(f.confidence, lang),
                reason=safe_text(f.confidence_reason, 300),
            )
            body += ["", f"_{note}_"]
        if f.evidence:
            body += ["", _evidence(_best_evidence(f.evidence))]
        if f.consequences:
            body += [
                "",
                message("consequences", lang)
                + "; ".join(safe_text(c.title, 200) for c in f.consequences),
            ]
        if f.remediation:
            body += ["", message("fix", lang)]
            for i, step in enumerate(f.remediation[:steps], 1):
                body.append(f"{i}. {safe_text(step.text, 300)}")
                if step.command:
                    body += ["", code_block(step.command, 800), ""]
    return body


def render_markdown(
    report: Report,
    digest_source: bytes = b"",
    lang: str = "en",
    unread: Sequence[tuple[str, str]] = (),
) -> str:
    """The comment in `lang` (its fixed phrases; the rule texts are the report's own).
    `unread`: (attachment, why) of each attachment the bot could not analyse, one line each."""
    d = report.worst
    digest = hashlib.sha256(digest_source).hexdigest()[:16]
    marker = f"<!-- {MARKER} version={__version__} rules={report.rules_version} input={digest} -->"
    head = [_headline(d, lang), ""]
    links = " → ".join(
        f"{message('link-' + ln.link, lang)}: **{message('state-' + ln.state, lang)}**"
        for ln in d.links
    )
    head.append(
        message("registration-links", lang, links=links, version=safe_text(d.version.summary, 120))
    )
    if len(report.nodes) > 1:
        head += [
            "",
            f"| {message('table-node', lang)} | {message('table-verdict', lang)} |",
            "|---|---|",
        ]
        for n in report.nodes:
            p = n.primary
            node = table_cell(code_span(n.node or "unknown", 80))
            verdict = table_cell(f"{_icon(n)} `{p.category}`: {safe_text(p.title, 160)}")
            head.append(f"| {node} | {verdict} |")
    for name, why in unread[:MAX_UNREAD]:
        line = message("attachment-unread", lang, name=code_span(name), why=safe_text(why, 300))
        head += ["", f"⚠️ {line}"]
    if len(unread) > MAX_UNREAD:
        head += ["", "⚠️ " + message("attachments-unread-more", lang, n=len(unread) - MAX_UNREAD)]
    # at most MAX_NEXT_STEPS next steps in all: a confident verdict's fix comes first and the
    # checklist fills what is left; where the verdict is not confident and evidence is missing,
    # the checklist leads with `hami-analyzer collect` and the single most useful item, and the
    # verdict keeps one fix step
    top = d.faults()[0] if d.faults() else None
    fixes = len(top.remediation) if top else 0
    confident = top is not None and top.confidence == "high"
    if d.collect and d.collect[0].kind == COLLECTED and not confident:
        shown = 2
        steps = min(fixes, MAX_NEXT_STEPS - shown)
    else:
        steps = min(fixes, MAX_NEXT_STEPS)
        shown = MAX_NEXT_STEPS - steps
    body = _node_body(d, steps, lang)
    for n in report.nodes[1:]:
        if n.faults():
            body += ["", "---", "", _headline(n, lang)]
            body += _node_body(n, 1, lang)
    if d.collect and shown:
        body += ["", message("attach", lang)]
        for c in d.collect[:shown]:
            where = message("run-on-node", lang) if c.where == "node" else ""
            needs = (
                message("set-first", lang, names=", ".join(code_span(v) for v in c.needs))
                if c.needs
                else ""
            )
            body += [
                f"- [ ] {safe_text(c.title, 200)}{where}{message('item-end', lang)}{needs}",
                "",
                code_block(c.command, 600),
            ]
    details: list[str] = []
    if len(d.collect) > shown:
        details += [
            message("also-useful", lang),
            *[
                f"- {safe_text(c.title, 200)}: {code_span(_one_line(c.command), 300)}"
                for c in d.collect[shown:]
            ],
            "",
        ]
    rest = d.faults()[1:]
    if rest:
        details += [
            message("more-findings", lang),
            *[f"- {code_span(f.rule_id)}: {safe_text(f.title, 300)}" for f in rest],
            "",
        ]
    normals = d.normals()
    if normals:
        details += [
            message("normals", lang),
            *[f"- {safe_text(f.title, 300)}" for f in normals],
            "",
        ]
    if d.register and d.register.devices:
        details += [
            message("gpus-annotation" if d.register.source == "annotation" else "gpus-log", lang),
            "",
            "| id | type | devmem | count | health |",
            "|---|---|---|---|---|",
        ]
        for dev in d.register.devices[:16]:
            health = (
                message("gpu-healthy", lang)
                if dev.health
                else message("gpu-unhealthy", lang)
                + (message("health-absent", lang) if "health" in dev.absent else "")
            )
            cells = (safe_text(dev.id, 60), safe_text(dev.type, 60), dev.devmem, dev.count, health)
            details.append("| " + " | ".join(table_cell(str(c)) for c in cells) + " |")
        details.append("")
    files = ", ".join(f"{code_span(a.file, 80)} ({a.kind})" for a in report.inventory[:30])
    details.append(message("files-read", lang) + files)
    details.append("")
    if report.warnings:
        details.append(
            message("input-warnings", lang)
            + "; ".join(safe_text(w, 200) for w in report.warnings[:10])
        )
        details.append("")
    details.append(safe_text(d.clock.how, 300))
    if d.names_namespace:
        details.append("")
        details.append(safe_text(d.namespace.how, 300))
    footer = [
        "",
        f"<details><summary>{message('details', lang)}</summary>",
        "",
        *details,
        "",
        "</details>",
        "",
        f"<sub>{MARKER} {__version__} · rules {report.rules_version}</sub>",
        marker,  # hidden; a bot finds and updates its own comment by it
    ]
    out = "\n".join(head + body + footer) + "\n"
    if len(out) > MAX_COMMENT:
        note = f"\n\n{message('cut', lang)}\n"
        out = "\n".join(head + body)[: MAX_COMMENT - len(note) - len(marker) - 200]
        out = _close_fence(out[: out.rfind("\n")]) + note + marker + "\n"
    return out


def _close_fence(text: str) -> str:
    """A cut can fall inside a code block: close it so nothing after it turns into code."""
    fence = None
    for line in text.split("\n"):
        s = line.strip()
        m = regex.match(r"^(`{3,})", s)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and s == fence:
            fence = None
    return text + ("\n" + fence if fence else "")
