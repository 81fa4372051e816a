"""GitHub issue text (Markdown, or the event JSON) into bundle files.

Users paste artefacts into fenced blocks (``` or ~~~, any length, any language tag), into
`<details>`/`<pre><code>` HTML, or as indented blocks, and a TOML config often with no fence at
all (its table headers and `key = value` lines say what it is); the prose around them may quote
the error or name the HAMi version. Each block becomes one in-memory file (recognised by content later,
and split if it holds several artefacts); the prose becomes one more file so error messages and
versions quoted outside code blocks are found too.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

import regex

from analyzer.bundle.text import LOG_LINE_RE, TOML_HEADER, TOML_KEY, TOML_OTHER, unframe
from analyzer.errors import BundleError
from analyzer.structured import ELISION_RE, PROSE_SHELL_PROMPT, load_json

_FENCE_OPEN = regex.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\n]*)$")
_TICK_LINE = regex.compile(r"^ {0,3}(`{1,2})\s*$")
_HEADING = regex.compile(r"^ {0,3}#{1,6}(?:\s|$)|^\*\*Comment by ")  # a section, a comment
_PRE_OPEN = regex.compile(r"<pre\b[^>\n]{0,200}>(?:\s{0,200}<code\b[^>\n]{0,200}>)?", regex.I)
_PRE_CLOSE = regex.compile(r"(?:</code>\s{0,200})?</pre>", regex.I)
# a tag's attributes never hold "<": an unclosed "<b" is left after the next "<", so a text of
# 131,072 "<b" is read in linear time (it was quadratic: 75 s for 256 KB)
_TAG_RE = regex.compile(
    r"</?(?:details|summary|p|br|div|b|strong|em|i|code|sub|sup|span)\b[^<>]*>", regex.I
)
MAX_ISSUE_BYTES = 4 << 20
# a file GitHub stores for an issue or comment: /user-attachments/files/ID/NAME, or (older)
# /OWNER/REPO/files/ID/NAME, NAME being one path segment; the host is matched by the caller
_ATTACHMENT_PATH = (
    r"/(?:user-attachments/files/\d{1,20}"
    r"|(?P<owner>[A-Za-z0-9][\w.-]{0,99})/(?P<repo>[\w.-]{1,100})/files/\d{1,20})"
    r"/(?P<name>[^\s()<>\[\]\"'`/\\?#]{1,255})"
)
_BAD_NAME = regex.compile(r"[/\\\p{Cc}]|^\.*$")  # decoded: no separator, control, `.`, `..`
_PCHAR = "!$&'()*+,;=:@-._~"  # kept as they are in a path segment (RFC 3986)


@dataclass
class IssueText:
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (name, text)
    prose: str = ""


def _take_pre_blocks(text: str) -> tuple[list[str], str]:
    """`<pre><code>` blocks out of the text (their content is HTML-escaped), in one pass: each
    search starts where the last block ended, and an opening tag with no closing one ends the
    scan, so a storm of `<pre>` tags costs linear time, not a rescan per tag."""
    blocks: list[str] = []
    rest: list[str] = []
    pos = 0
    while (opening := _PRE_OPEN.search(text, pos)) is not None:
        closing = _PRE_CLOSE.search(text, opening.end())
        if closing is None:
            break
        rest.append(text[pos : opening.start()])
        rest.append("\n")
        blocks.append(html.unescape(_TAG_RE.sub("", text[opening.end() : closing.start()])))
        pos = closing.end()
    rest.append(text[pos:])
    return blocks, "".join(rest)


def _tick_closes(lines: list[str]) -> dict[int, int]:
    """Each line that is one or two backticks alone, and the next line that is the same (an
    inline code span across lines: a paste GitHub shows as code, fenced by a single backtick).
    Only a span closed is one, and none holds a fence's line or a heading (two stray backticks
    sections apart are not a paste); each line is looked at once."""
    closes: dict[int, int] = {}
    opened: dict[str, int] = {}
    for i, line in enumerate(lines):
        if (m := _TICK_LINE.match(line)) is None:
            if _FENCE_OPEN.match(line) or _HEADING.match(line):
                opened.clear()
            continue
        ticks = m[1]
        if ticks in opened:
            closes[opened.pop(ticks)] = i
        else:
            opened[ticks] = i
    return closes


def _unfence(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    lines = text.split("\n")
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    ticked = _tick_closes(lines)
    i = 0
    while i < len(lines):
        if i in ticked:
            blocks.append(("txt", "\n".join(lines[i + 1 : ticked[i]])))
            prose.append("")
            i = ticked[i] + 1
            continue
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence, info, indent = m["fence"], m["info"].strip(), len(m["indent"])
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = lines[i].strip()
            if close.startswith(fence[0] * len(fence)) and set(close) <= {fence[0]}:
                break
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        i += 1  # closing fence (or end of text: an unclosed fence runs to the end)
        lang = info.split()[0].lower() if info else "txt"
        blocks.append((lang, "\n".join(body)))
        prose.append("")
    return blocks, prose


def _indented(prose_lines: list[str]) -> tuple[list[str], list[str]]:
    """Indented code blocks (4 spaces or a tab after a blank line) out of the prose."""
    blocks: list[str] = []
    rest: list[str] = []
    cur: list[str] = []
    prev_blank = True
    for line in prose_lines:
        is_code = (line.startswith("    ") or line.startswith("\t")) and (prev_blank or cur)
        if is_code and line.strip():
            cur.append(line[4:] if line.startswith("    ") else line[1:])
        else:
            if cur and line.strip() == "":
                cur.append("")
                prev_blank = True
                continue
            if cur:
                blocks.append("\n".join(cur).strip("\n"))
                cur = []
            rest.append(line)
        prev_blank = not line.strip()
    if cur:
        blocks.append("\n".join(cur).strip("\n"))
    return blocks, rest


_ARRAY_END = regex.compile(r"^\s*+\]\s*+$")
_TOML_LINE_MAX = 4096  # a config's lines are short; a longer line is prose


def _unfenced_tables(prose_lines: list[str]) -> tuple[list[str], list[str]]:
    """TOML pasted without a fence out of the prose: a run of table headers and keys, with the
    comments, array items and blank lines between them, holding two headers, or one and two
    keys (a sentence is neither). A run starts on a header or a key and ends on one or on an
    array's closing `]`: a Markdown heading or a blank line around it stays prose."""
    blocks: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(prose_lines):
        if not prose_lines[i].strip():  # a run opens on a header or a key, never a blank line
            rest.append(prose_lines[i])
            i += 1
            continue
        j, last, headers, keys = i, -1, 0, 0
        while j < len(prose_lines) and len(prose_lines[j]) <= _TOML_LINE_MAX:
            line = prose_lines[j]
            if TOML_HEADER.match(line):
                headers, last = headers + 1, j
            elif TOML_KEY.match(line):
                keys, last = keys + 1, j
            elif last < 0 or not (TOML_OTHER.match(line) or ELISION_RE.match(line)):
                break  # a run opens on a header or a key
            elif _ARRAY_END.match(line):
                last = j  # ... and may close on a multi-line array's end
            j += 1
        if headers >= 2 or (headers == 1 and keys >= 2):
            blocks.append("\n".join(prose_lines[i : last + 1]))
            rest.extend([""] * (last + 1 - i))
            i = last + 1
        else:  # a run starting later inside this one ends where it does, with fewer lines
            rest.extend(prose_lines[i : max(j, i + 1)])
            i = max(j, i + 1)
    return blocks, rest


# a line a log printed, pasted without a fence: one that carries its own log header
# (`LOG_LINE_RE`: klog, Go's log, a journal's, RFC 3339, logfmt's `time=`, the kernel's), or
# HAMi-core's prefix or logrus's `INFO[0000]`, which are not headers of a component's log
_PREFIXED_LINE = regex.compile(
    r"^\s{0,3}+(?:\[(?:HAMI-core|4pdvGPU)\s\w+[\s(]|(?:INFO|WARN|ERRO|DEBU|FATA|PANI|TRAC)\[\d+\])"
)
# a line that continues a log's message: indented (a stack's file, a wrapped value), a Go
# stack's goroutine or function line
_CONTINUATION = regex.compile(r"^(?:\s++\S|goroutine \d++ \[|(?:[\w~-]++[./])++[\w.*()~-]*?\()")
# the command whose output the log lines are (`user@host:~# nvidia-smi`, `$ python x.py`; not a
# bare `#`, which opens a Markdown heading)
_COMMAND_LINE = regex.compile(rf"^\s{{0,3}}{PROSE_SHELL_PROMPT}\s*\S")


def _unfenced_logs(prose_lines: list[str]) -> tuple[list[str], list[str]]:
    """Log lines pasted without a fence out of the prose: in a paragraph whose lines from its
    first log line to its last are at least half log lines or lines that continue them (a
    stack), those lines and the shell command just before them that printed them; a reporter's
    sentence, before, after or between them, stays prose."""
    blocks: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(prose_lines):
        if not prose_lines[i].strip():
            rest.append(prose_lines[i])
            i += 1
            continue
        j = i
        while j < len(prose_lines) and prose_lines[j].strip():
            j += 1
        logs = [k for k in range(i, j) if _is_log_line(prose_lines[k])]
        taken = set(logs)
        if logs:
            first, last = logs[0], logs[-1]
            taken.update(
                k for k in range(first, last + 1) if _shaped(_CONTINUATION, prose_lines[k])
            )
            after = last + 1  # a stack under the last log line
            while after < j and _shaped(_CONTINUATION, prose_lines[after]):
                taken.add(after)
                after += 1
            if first > i and _shaped(_COMMAND_LINE, prose_lines[first - 1]):
                taken.add(first - 1)
        if logs and 2 * len(taken) >= max(taken) - min(taken) + 1:
            blocks.append("\n".join(prose_lines[k] for k in sorted(taken)))
            rest.extend("" if k in taken else prose_lines[k] for k in range(i, j))
        else:
            rest.extend(prose_lines[i:j])
        i = j
    return blocks, rest


def _is_log_line(line: str) -> bool:
    return _shaped(_PREFIXED_LINE, line) or _shaped(LOG_LINE_RE, line)


def _shaped(pattern: regex.Pattern | re.Pattern[str], line: str) -> bool:
    return len(line) <= _TOML_LINE_MAX and pattern.match(line) is not None


def parse_issue(text: str, label: str = "issue") -> IssueText:
    """The blocks (named `LABEL-block-NN.EXT`, in order) and the prose of one post."""
    if len(text.encode("utf-8", errors="replace")) > MAX_ISSUE_BYTES:
        raise BundleError(f"issue text larger than {MAX_ISSUE_BYTES >> 20} MiB")
    out = IssueText()
    pres, text = _take_pre_blocks(unframe(text.replace("\r\n", "\n")))
    fenced, prose_lines = _unfence(text)
    # before the indented blocks: a config's nested tables are indented, and would be cut out
    tables, prose_lines = _unfenced_tables(prose_lines)
    indented, prose_lines = _indented(prose_lines)
    logs, prose_lines = _unfenced_logs(prose_lines)
    n = 0
    for lang, body in fenced:
        n += 1
        out.blocks.append((f"{label}-block-{n:02d}.{_ext(lang)}", body))
    for body in pres + indented:
        n += 1
        out.blocks.append((f"{label}-block-{n:02d}.txt", body))
    for body in tables:
        n += 1
        out.blocks.append((f"{label}-block-{n:02d}.toml", body))
    for body in logs:
        n += 1
        out.blocks.append((f"{label}-block-{n:02d}.log", body))
    prose = _TAG_RE.sub("", "\n".join(prose_lines))
    out.prose = html.unescape(prose)
    return out


def _ext(lang: str) -> str:
    lang = regex.sub(r"[^a-z0-9]", "", lang)[:8]
    return lang or "txt"


def issue_from_payload(raw: bytes) -> str:
    """Markdown text from an issue file: plain Markdown, or GitHub event/issue JSON."""
    text = raw.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = load_json(stripped)
        except ValueError as exc:
            raise BundleError(f"issue JSON is not valid JSON: {exc}") from None
        issue = doc.get("issue", doc) if isinstance(doc, dict) else {}
        if not isinstance(issue, dict) or not isinstance(issue.get("body", ""), str | type(None)):
            raise BundleError("issue JSON has no string issue.body")
        title = issue.get("title") or ""
        return (f"# {title}\n\n" if title else "") + (issue.get("body") or "")
    return text


@dataclass(frozen=True)
class AttachmentLink:
    url: str
    name: str  # the file name as uploaded (URL-decoded)


def attachment_links(
    text: str, server: str, repo: str, suffixes: tuple[str, ...]
) -> list[AttachmentLink]:
    """The files attached to a post: links on the GitHub server itself (`server`, such as
    https://github.com; never another host), under `user-attachments/files/` or this repository's
    `files/`, whose name ends with one of `suffixes`; each once, in order. The host is matched
    case-insensitively in ASCII only (Unicode folding would take `gİthub.com` for it) and each
    URL is rebuilt on `server` itself, so what is fetched is never a host the text spelled, and
    its name, one path segment, is percent-encoded in ASCII.

    >>> [a.name for a in attachment_links(
    ...     "[b.tgz](https://github.com/user-attachments/files/1/b.tgz) "
    ...     "https://github.com/o/r/files/2/dp%201.log. https://evil.example/o/r/files/3/x.log "
    ...     "https://github.com/other/repo/files/4/y.log https://github.com/o/r/files/5/a.png",
    ...     "https://github.com", "o/r", (".tgz", ".log"))]
    ['b.tgz', 'dp 1.log']
    """
    server = server.rstrip("/")
    out: dict[str, AttachmentLink] = {}
    for m in regex.finditer(regex.escape(server) + _ATTACHMENT_PATH, text, regex.I | regex.A):
        if m["owner"] and f"{m['owner']}/{m['repo']}".lower() != repo.lower():
            continue  # another repository's file: never fetched with this repository's token
        raw = m["name"].rstrip(".,;:!?")
        name = unquote(raw)
        if _BAD_NAME.search(name) or not name.lower().endswith(suffixes):
            continue  # `..`, an encoded `/`: never another path of the server
        url = server + m[0][len(server) : len(m[0]) - len(m["name"])] + quote(name, safe=_PCHAR)
        if url not in out:
            out[url] = AttachmentLink(url, name)
    return list(out.values())
