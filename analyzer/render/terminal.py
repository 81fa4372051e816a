"""Plain-text report for a terminal: every node's verdict, then the details of each faulty one.

Written to be read in ten seconds: the verdict first, the registration links in words, then each
cause with its evidence (the matched part of every line shown whole), its fix, and the findings it
explains under it without repeating them. Colour by severity on a terminal only (never when piped,
with NO_COLOR set, or with --no-color: https://no-color.org)."""

from __future__ import annotations

import os
import re
import textwrap
import unicodedata
from dataclasses import dataclass

from analyzer.bundle.text import printable
from analyzer.catalogue.messages import message
from analyzer.facts.model import Evidence
from analyzer.render.evidence import fresh, grouped
from analyzer.report.model import Finding, NodeReport, Report

DEFAULT_WIDTH = 100  # when the output is not a terminal: stable for pipes, logs and snapshots
SYMBOL = {"critical": "✖", "error": "✗", "warning": "!", "info": "i"}
LINK_SYMBOL = {"broken": "✗", "ok": "✓", "unknown": "?"}
LINK_STATE = {"broken": "broken", "ok": "works", "unknown": "not known"}
# ANSI styles (SGR parameters) by severity or meaning
STYLE = {
    "critical": "1;31",
    "error": "31",
    "warning": "33",
    "info": "36",
    "ok": "32",
    "broken": "31",
    "unknown": "2",
    "healthy": "32",
    "inconclusive": "2",
    "heading": "1",
    "match": "1;4",
    "dim": "2",
}


def clean(text: object) -> str:
    """Text from the bundle, safe for a terminal (the name this module's callers use)."""
    return printable(text)


def wants_colour(stream, disabled: bool = False) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set to anything or --no-color."""
    if disabled or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def terminal_width(stream) -> int | None:
    """The terminal's width (COLUMNS wins); None (the default width) when not a terminal."""
    if os.environ.get("COLUMNS", "").isdigit():
        return max(int(os.environ["COLUMNS"]), 60)
    try:
        return max(os.get_terminal_size(stream.fileno()).columns, 60)
    except (OSError, AttributeError, ValueError):
        return None


@dataclass(frozen=True)
class Style:
    colour: bool = False
    width: int = DEFAULT_WIDTH
    prefix: str = ""  # the archive's path before every file name, cut from what is printed

    def text(self, value: object) -> str:
        """Untrusted text made printable, with the archive prefix of file names cut."""
        out = clean(value)
        return out.replace(self.prefix, "") if self.prefix else out

    def paint(self, text: str, style: str | None) -> str:
        if not self.colour or not style or not text:
            return text
        return f"\x1b[{STYLE.get(style, style)}m{text}\x1b[0m"

    def hanging(self, head: str, head_width: int, text: str, style: str | None = None) -> list[str]:
        """`head` (already painted, `head_width` columns on screen), then untrusted `text`
        wrapped to the width with its later lines under its first; each line of it painted."""
        lines = [ln[head_width:] for ln in self.wrap(text, " " * head_width)]
        return [
            (head if i == 0 else " " * head_width) + self.paint(ln, style)
            for i, ln in enumerate(lines)
        ]

    def wrap(self, text: str, indent: str, hang: str = "") -> list[str]:
        """Untrusted prose wrapped to the width; `hang` more indent after a paragraph's first line."""
        width = max(self.width - len(indent) - len(hang), 40)
        out: list[str] = []
        for para in self.text(text).split("\n"):
            lines = (
                wrap_wide(para, width)
                if any(_wide(ch) for ch in para)
                else textwrap.wrap(para, width, break_on_hyphens=False, break_long_words=False)
            )
            out.extend(
                (indent if i == 0 else indent + hang) + ln for i, ln in enumerate(lines or [""])
            )
        return out


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


_OPENING = "（「『【《“‘"
_CLOSING = "，。、；：？！）」』】》”’…"


def wrap_wide(text: str, width: int) -> list[str]:
    """Wrap text holding Chinese (two columns a character, a break allowed between any two of
    them) to `width` columns; runs of other characters break only at spaces. Closing punctuation
    never starts a line, nor does opening punctuation end one (it moves with its character).

    >>> wrap_wide("调度和注册都正常 ok then", 10)
    ['调度和注册', '都正常 ok', 'then']
    >>> wrap_wide("放不进任何一张卡。（见上）", 16)
    ['放不进任何一张', '卡。（见上）']
    """
    units = re.findall(rf"\s+|[{_OPENING}]*(?:[^\s\u1100-\uffff]+|.)[{_CLOSING}]*", text)
    lines, line, used = [], "", 0
    for unit in units:
        if unit.isspace():
            if line:
                line, used = line + " ", used + 1
            continue
        size = sum(2 if _wide(ch) else 1 for ch in unit)
        if used + size > width and line.strip():
            lines.append(line.rstrip())
            line, used = "", 0
        line, used = line + unit, used + size
    if line.strip():
        lines.append(line.rstrip())
    return lines


def snippet(text: str, span: tuple[int, int] | None, limit: int) -> tuple[str, tuple[int, int]]:
    """One evidence line in at most `limit` characters: whole when it fits, else the part around
    the match with `…` at each cut. The match itself is never cut (a longer match is shown
    whole). Returns the text and the match's span in it.

    >>> snippet("abc", (1, 2), 10)
    ('abc', (1, 2))
    >>> snippet("x" * 50 + "MATCH" + "y" * 50, (50, 55), 21)
    ('…xxxxxxxMATCHyyyyyyy…', (8, 13))
    >>> snippet("E0815 09:00:00.500001  412873 register.go:96] nvml Init err:  ERROR_LIBRARY", (45, 75), 50)
    ('…register.go:96] nvml Init err:  ERROR_LIBRARY', (16, 46))
    >>> snippet("head " + "m" * 30 + " tail", (5, 35), 10)[0]
    '…mmmmmmmmmmmmmmmmmmmmmmmmmmmmmm…'
    """
    text = text.replace("\n", " ").replace("\t", " ")
    a, b = span if span and 0 <= span[0] <= span[1] <= len(text) else (0, 0)
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    a, b = max(a - lead, 0), max(min(b - lead, len(text)), 0)
    if len(text) <= limit:
        return text, (a, b)
    body = limit - 2  # room for an ellipsis at each end
    if b - a >= body:
        start, end = a, b
    else:
        start = max(a - (body - (b - a)) // 2, 0)
        end = min(start + body, len(text))
        start = max(end - body, 0)
    if start > 0:  # cut between words where one is near
        space = text.find(" ", start, min(a, start + 8))
        start = space + 1 if space >= 0 else start
        while start < a and text[start] == " ":
            start += 1
    if end < len(text):
        space = text.rfind(" ", max(b, end - 8), end)
        end = space if space >= 0 else end
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return head + text[start:end] + tail, (a - start + len(head), b - start + len(head))


class TerminalReport:
    def __init__(self, report: Report, style: Style):
        self.report = report
        self.s = style

    # one line of evidence ------------------------------------------------------------------
    def _where(self, e: Evidence) -> str:
        if not e.file:
            return ""
        return self.s.text(f"{e.file}:{e.line}" if e.line else e.file)

    def _snippet(self, e: Evidence, where: str, indent: str) -> tuple[str, tuple[int, int]]:
        limit = max(self.s.width - len(indent) - len(where) - 2, 50)
        return snippet(self.s.text(e.text or ""), e.span, limit)

    def _log_lines(self, items: list[Evidence], indent: str) -> list[str]:
        """Lines that read the same once they are cut to fit (a message repeated every scan,
        which only its time tells apart) as one, with every line number."""
        runs: list[tuple[list[Evidence], str]] = []
        for e in items:
            shown = self._snippet(e, self._where(e), indent)[0]
            if runs and runs[-1][0][0].file == e.file and runs[-1][1] == shown:
                runs[-1][0].append(e)
            else:
                runs.append(([e], shown))
        out = []
        for run, _shown in runs:
            where = self._where(run[0]) + "".join(f", {x.line}" for x in run[1:])
            text, (a, b) = self._snippet(run[0], where, indent)
            if b > a:
                text = text[:a] + self.s.paint(text[a:b], "match") + text[b:]
            out.append(f"{indent}{self.s.paint(where, 'dim')}  {text}")
        return out

    def evidence(self, items: tuple[Evidence, ...], indent: str) -> list[str]:
        """Each line once; a signature's total count once, after its lines."""
        out: list[str] = []
        for group in grouped(items):
            out += self._log_lines([e for e in group.items if e.kind == "log"], indent)
            for e in group.items:
                if e.kind == "log":
                    continue
                if e.kind == "fact":
                    where = self._where(e)
                    value = "absent" if e.value is None else self.s.text(e.value).replace("\n", " ")
                    at = f"{self.s.paint(where, 'dim')}  " if where else ""
                    out.append(f"{indent}{at}{e.path} = {value}")
                else:
                    out.append(f"{indent}(absent) {self.s.text(e.text or '')}")
            if group.more:
                s = "s" if group.more > 1 else ""
                out.append(
                    f"{indent}{self.s.paint(f'… {group.more} more matching line{s}', 'dim')}"
                )
        return out

    # findings ------------------------------------------------------------------------------
    def _symbol(self, severity: str) -> str:
        return self.s.paint(SYMBOL.get(severity, "?"), severity)

    def finding(self, f: Finding) -> list[str]:
        head = f"{self._symbol(f.severity)} {self.s.paint(f'[{f.severity}]', f.severity)} "
        out = self.s.hanging(head, len(f"x [{f.severity}] "), f.title, "heading")
        out.append(f"    {f.rule_id} · {f.category} · {f.confidence} confidence")
        out += self.s.wrap(f.explanation, "    ")
        if f.evidence:
            out.append("    Evidence:")
            out += self.evidence(f.evidence, "      ")
        if f.remediation:
            out.append("    Fix:")
            for i, step in enumerate(f.remediation, 1):
                out += self.s.wrap(f"{i}. {step.text}", "      ", "   ")
                if step.command:
                    out.append(f"         $ {self.s.text(step.command)}")
        if f.consequences:
            out.append("    This cause also explains:")
            for c, new in fresh(f):
                out += self._titled(
                    f"      {self._symbol(c.severity)} ", 8, c.title, f"({c.rule_id}, {c.severity})"
                )
                out += self.evidence(new, "          ")
        return out

    def _titled(self, head: str, width: int, title: str, note: str) -> list[str]:
        """A title wrapped after its head, with a dim note (the rule id) after it."""
        lines = self.s.hanging(head, width, f"{title}  {note}")
        if lines[-1].endswith(note):
            lines[-1] = lines[-1][: -len(note)] + self.s.paint(note, "dim")
        return lines

    # a node --------------------------------------------------------------------------------
    def verdict(self, n: NodeReport) -> list[str]:
        p = n.primary
        if p.category in ("healthy", "inconclusive"):
            mark, label, style = (
                ("✓", "HEALTHY", "healthy")
                if p.category == "healthy"
                else ("?", "INCONCLUSIVE", "inconclusive")
            )
        else:
            mark, label, style = SYMBOL.get(p.severity, "?"), p.severity.upper(), p.severity
        likely = "likely " if p.likely else ""
        head = f"Verdict: {self.s.paint(f'{mark} {label}', style)} "
        out = self.s.hanging(
            head, len(f"Verdict: {mark} {label} "), f"{likely}{p.category}: {p.title}", "heading"
        )
        why = []
        if p.category != "inconclusive":
            why.append(
                f"{p.confidence} confidence"
                + (f": {self.s.text(p.confidence_reason)}" if p.confidence_reason else "")
            )
        elif p.confidence_reason:
            why.append(self.s.text(p.confidence_reason))
        if p.rule_id:
            why.append(f"rule {p.rule_id}")
        if why:
            out += self.s.wrap(" · ".join(why), "  ", "  ")
        if p.case:
            out += self.s.wrap(
                message("case", case=p.case, title=message(f"case-{p.case}")), "  ", "  "
            )
        return out

    def links(self, n: NodeReport) -> list[str]:
        """The three registration links of the HAMi guide, each in words."""
        out = ["Registration links:"]
        for ln in n.links:
            state = self.s.paint(LINK_STATE.get(ln.state, ln.state), ln.state)
            out.append(
                f"  {self.s.paint(LINK_SYMBOL.get(ln.state, '?'), ln.state)} "
                f"{ln.link:<9}{message(f'link-{ln.link}-what')}: {state}"
            )
            if ln.reason and ln.state != "ok":  # why, on its own lines under the link
                out += self.s.wrap(ln.reason, " " * 13, "")
        return out

    def node(self, n: NodeReport) -> list[str]:
        out = [
            self.s.paint(f"Node {self.s.text(n.node or '(unknown)')}", "heading")
            + f" · HAMi {self.s.text(n.version.summary)}"
        ]
        out += self.verdict(n)
        out.append("")
        out += self.links(n)
        for f in n.faults():
            out.append("")
            out += self.finding(f)
        normals = n.normals()
        if normals:
            out += ["", "Looks suspicious but is normal:"]
            for f in normals:
                out += self._titled("  • ", 4, f.title, f"({f.rule_id})")
        if n.collect:
            out += ["", "Collect next:"]
            for c in n.collect:
                where = " (on the node)" if c.where == "node" else ""
                needs = f"  [set {', '.join(c.needs)} first]" if c.needs else ""
                out += self.s.hanging("  • ", 4, f"{c.title}{where}{needs}")
                # one command a line (`collect` comes after the line that installs it)
                out += [f"      $ {line}" for line in self.s.text(c.command).splitlines()]
        if n.rule_errors:
            # diagnostics are quoted whole, one a line (searchable, copyable)
            out += ["", "Rule errors:"] + [f"  ! {self.s.text(x)}" for x in n.rule_errors]
        out += [""] + self.s.wrap(n.clock.how, "")
        return out

    def render(self) -> str:
        r = self.report
        out: list[str] = []
        archive, _ = r.archive
        if archive:
            out += [f"Bundle: {self.s.text(archive)} (file names below are inside it)", ""]
        if len(r.nodes) > 1:
            out.append(f"{len(r.nodes)} nodes in the bundle:")
            for n in r.nodes:
                p = n.primary
                mark = (
                    "✓"
                    if p.category == "healthy"
                    else "?"
                    if p.category == "inconclusive"
                    else SYMBOL.get(p.severity, "?")
                )
                out += self.s.hanging(
                    f"  {mark} ", 4, f"{n.node or '(unknown)'}: {p.category}: {p.title}"
                )
            out.append("")
        for n in r.nodes:
            if len(r.nodes) > 1 and not n.faults() and n is not r.worst:
                continue
            out += self.node(n)
            out.append("")
        if r.warnings:
            out.append("Input warnings:")
            out.extend(f"  ! {self.s.text(w)}" for w in r.warnings[:20])
            if len(r.warnings) > 20:
                out.append(f"  ... and {len(r.warnings) - 20} more")
            out.append("")
        return "\n".join(out)


def render_terminal(report: Report, colour: bool = False, width: int | None = None) -> str:
    _, prefix = report.archive
    return TerminalReport(report, Style(colour, width or DEFAULT_WIDTH, prefix)).render()
