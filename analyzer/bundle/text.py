"""Bytes to clean text: BOMs, non-UTF-8 bytes, CRLF, ANSI colours, terminal frames and hard-wraps."""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

# an OSC sequence ends at BEL or ST (ESC \\) and never spans an ESC or a line: an unterminated
# one is left, so a log of 200,000 "ESC ]" is searched in linear time (it was quadratic: 65 s)
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)")
# Shared by the Python path (small files) and the polars path (big logs): Rust-regex compatible.
LINE_PREFIX_PATTERN = (
    r"^(?:\[pod/[^/\]\s]+/(?P<container>[^\]\s]+)\] )?"
    r"(?:(?P<rfc>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) "
    r"(?:(?:stdout|stderr) [FP] )?)?"
)
KLOG_HEADER_PATTERN = (
    r"^(?P<sev>[IWEF])(?P<mm>\d\d)(?P<dd>\d\d) (?P<clock>\d\d:\d\d:\d\d(?:\.\d{1,9})?)\s+"
    r"(?P<pid>\d+) (?P<src>[^\s\]]+?:\d+)\] ?(?P<msg>.*)$"
)
PREFIX_RE = re.compile(LINE_PREFIX_PATTERN)
# a count opening an item of a comma-separated list (kube-scheduler's reasons, "1 node(s) had
# taint {a: }, that the pod didn't tolerate, 3 node unregistered"): an item's own commas open no
# count, and "1/2 CardNotHealth" is a share, not a count
_ITEM_COUNT_RE = re.compile(r"(?:^|,)\s*(\d{1,9})\s+\S")  # a longer number is no count


def item_counts(text: str) -> list[int]:
    """The counts opening the items of a comma-separated list.

    >>> item_counts("1 1/2 CardNotHealth, 1/2 CardTimeSlicingExhausted, 1 NodeInsufficientDevice")
    [1, 1]
    """
    return [int(n) for n in _ITEM_COUNT_RE.findall(text)]


KLOG_RE = re.compile(KLOG_HEADER_PATTERN)
# a klog header's time anywhere near a line's start (after a journal's or a paste's prefix)
KLOG_TIME_RE = re.compile(
    r"(?<![\w.])[IWEF](?P<mmdd>\d{4}) (?P<clock>\d\d:\d\d:\d\d(?:\.\d{1,9})?)\s+\d+ "
)
# A line that carries its own log header (klog, Go std log, journald, RFC 3339, logrus, a JSON
# logger's record (zap, slog, logrus), vLLM's, the kernel's dmesg and dmesg -T): a decisive log line
# even when pasted among prose.
LOG_LINE_RE = re.compile(
    r"^\W{0,4}(?:[IWEF]\d{4} \d\d:\d\d:\d\d"
    r"|\d{4}[/-]\d\d[/-]\d\d[T ]\d\d:\d\d:\d\d"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.-]+(?:\[\d+\])?:"
    r"|time=\"\d{4}-"
    r"|\{\"(?:level|ts|time|timestamp|msg|severity)\":"
    r"|(?:\([^()\n]{1,60}pid=\d+\) )?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d "
    r"|[\w.-]+\[\d+\]: [IWEF]\d{4} "
    r"|[\w.]+\.go:\d+\] "
    r"|\s*\d+\.\d{6}\] "
    r"|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] )"
)
# a TOML table header alone on its line (`[plugins.cri.containerd.runtimes."nvidia"]`, containerd
# 2.x's `[plugins.'io.containerd.cri.v1.runtime']`, indented as `containerd config default` prints
# nested tables), a key's line, and what else a config's lines hold (a comment, an array's items
# and its end, a blank line). Possessive: a line that is almost a header fails in one pass
# (`[a."x"."x"...` without its `]` took minutes a megabyte).
_TOML_NAME = r"""(?:[\w-]++|"[^"\n]*+"|'[^'\n]*+')"""
TOML_HEADER = re.compile(rf"^\s*+\[{{1,2}}{_TOML_NAME}(?:\s*+\.\s*+{_TOML_NAME})*+\]{{1,2}}\s*+$")
TOML_KEY = re.compile(rf"^\s*+{_TOML_NAME}(?:\.{_TOML_NAME})*+\s*+=\s*+\S")
TOML_OTHER = re.compile(r"""^\s*+(?:#|\]|"[^"\n]*+",?\s*+$|'[^'\n]*+',?\s*+$|$)""")


def toml_line(line: str) -> bool:
    """Whether `line` is one a TOML config holds (a header, a key, a comment, an array's item or
    end, a blank): never a sentence."""
    return any(p.match(line) for p in (TOML_HEADER, TOML_KEY, TOML_OTHER))


# Text inside a shell command that echoes it is script, not log (`echo "Waiting for ..."`).
_SCRIPT_RE = re.compile(r"\becho\s+[\"'$]|\b(?:ba)?sh\s+-c\b|^\s*(?:Command|Args):")
_SCRIPT_WORDS = ("echo", "sh", "Command", "Args")  # every match of _SCRIPT_RE holds one


def in_script(text: str) -> bool:
    """`text` is (in) a shell command that echoes words, not a log line. The words the pattern
    needs are looked for first: `re` tries a pattern that starts with `\\b` at every position
    of a line, and this runs on every line of a recognised head and every matched line.

    >>> in_script('sh -c "echo $NODE_NAME"'), in_script("Waiting for nvml"), in_script("hash")
    (True, False, False)
    """
    return any(w in text for w in _SCRIPT_WORDS) and _SCRIPT_RE.search(text) is not None


def decode(data: bytes) -> tuple[str, list[str]]:
    """Decode bytes leniently; return the text and warnings about what had to be repaired."""
    warnings: list[str] = []
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), ["decoded as UTF-16"]
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        warnings.append("non-UTF-8 bytes replaced with U+FFFD")
    return text, warnings


# the control bytes `looks_binary` counts: C0 but tab, newline, VT, FF, CR and ESC
_CONTROLS = bytes(b for b in range(32) if b < 9 or (13 < b < 32 and b != 27))


def looks_binary(head: bytes) -> bool:
    """Binary junk: NUL bytes or a high share of control characters in the first block (counted
    as the bytes `translate` deletes: one C pass, where a generator over each byte cost every
    recognised file ~0.1 ms a KB)."""
    if not head:
        return False
    if b"\x00" in head[:8192]:
        return True
    sample = head[:8192]
    controls = len(sample) - len(sample.translate(None, _CONTROLS))
    return controls / len(sample) > 0.05


def clean(text: str) -> str:
    """Line endings to LF, ANSI escape sequences removed."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    return text


# a terminal UI's frame around copied lines (k9s's log view, a tmux pane): a vertical bar
# before each line, and one after it when the copy kept the right edge
_FRAME_CHARS = "\u2502\u2503\u2551"  # │ ┃ ║
_FRAME_ENDS = tuple(_FRAME_CHARS)
_FRAME_RE = re.compile(rf"^[ \t]{{0,8}}[{_FRAME_CHARS}] ?")
_FRAMED_LINE = re.compile(rf"(?m)^[ \t]{{0,8}}[{_FRAME_CHARS}]")
_BOX_DRAWING = re.compile("[\u2500-\u257f]")
_FRAME_RUN = 3  # fewer framed lines in a row are a drawing, not a copied pane


def unframe(text: str) -> str:
    r"""Text copied out of a terminal UI's frame without the frame: each run of at least three
    lines opening with a vertical bar loses that bar (and a closing one), so a log copied from
    k9s reads as the log it shows. A run whose lines hold more box drawing inside the frame (a
    `tree`, a table's inner bars, a frame within a frame) is a drawing and is left as it is, so
    a second pass changes nothing. Lines keep their number.

    >>> unframe("│ I0908 02:12:23.3 1 a.go:1] x │\n│ F0908 02:12:23.5 1 a.go:2] y\n│ z\nw")
    'I0908 02:12:23.3 1 a.go:1] x\nF0908 02:12:23.5 1 a.go:2] y\nz\nw'
    >>> unframe("│ a\n│ b\nc")
    '│ a\n│ b\nc'
    >>> unframe("├── bin\n│   ├── nvidia-smi\n│   ├── nvidia-debugdump\n│   └── nvidia-cuda-mps")
    '├── bin\n│   ├── nvidia-smi\n│   ├── nvidia-debugdump\n│   └── nvidia-cuda-mps'
    """
    if _FRAMED_LINE.search(text) is None:
        return text
    lines = text.split("\n")
    framed = [_FRAME_RE.match(line) is not None for line in lines]
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and framed[j]:
            j += 1
        if j - i >= _FRAME_RUN:
            bodies = []
            for k in range(i, j):
                body = _FRAME_RE.sub("", lines[k], count=1).rstrip()
                bodies.append(body[:-1].rstrip() if body.endswith(_FRAME_ENDS) else body)
            drawn = sum(1 for b in bodies if _BOX_DRAWING.search(b))
            if drawn * 4 <= len(bodies):
                lines[i:j] = bodies
        i = j + 1
    return "\n".join(lines)


def printable(text: object, keep: str = "\n\t") -> str:
    r"""Text safe to print on a terminal: every character that is not printable (ESC and the rest
    of C0, DEL, C1, format characters) becomes "?"; the characters of `keep` (newlines and tabs)
    stay. Everything a command prints that came from a bundle, a cluster or a command line goes
    through this one function. Lines that are printable already cost one C-level check each.

    >>> printable("pod\x1b]52;c;aGk=\x07\x9b1;31m\tok\n")
    'pod?]52;c;aGk=??1;31m\tok\n'
    >>> printable("a\tb\nc", keep="")
    'a?b?c'
    """
    tab = "\t" in keep

    def printable_as_is(line: str) -> bool:
        return (line.replace("\t", " ") if tab else line).isprintable()

    def safe(line: str) -> str:
        if printable_as_is(line):
            return line
        return "".join(ch if ch.isprintable() or ch in keep else "?" for ch in line)

    text = str(text)
    if "\n" not in keep:
        return safe(text)
    if printable_as_is(text.replace("\n", " ")):  # the whole text in one check (a report)
        return text
    return "\n".join(map(safe, text.split("\n")))


# A Go error chain broken right after an operation's colon ("dial unix /x.sock: connect:") whose
# next line is the system call's message (Go's syscall.Errno texts): one line wrapped by a
# terminal or a text box, never two lines of a log.
_OP_TAIL_RE = re.compile(
    r"(?:\bconnect|\bdial (?:unix|tcp\d?|udp) \S+|\bread|\bwrite|\bopen \S+):\s*$"
)
_ERRNO_HEAD_RE = re.compile(
    r"^\s*(?:connection refused|no such file or directory|permission denied|connection reset by peer"
    r"|i/o timeout|no route to host|broken pipe|too many open files)\b"
)


def printable_name(name: str) -> str:
    """A file name as text we can print anywhere: bytes that are not UTF-8 (kept by Python as
    surrogates) become U+FFFD and control characters (newlines and tabs too) become `?`.

    >>> printable_name("n\\udcf6de.yaml\\x1b[31m")
    'n\ufffdde.yaml?[31m'
    """
    return printable(name.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), keep="")


def rejoin_hard_wraps(
    lines: list[str], by_width: bool = True, record_start: regex.Pattern | None = None
) -> tuple[list[str], list[int], int]:
    """Undo fixed-width terminal wrapping (`by_width`: pasted logs, not prose), and a Go error
    wrapped before its errno. `record_start`: a line it matches opens a record (the catalogue's
    `record_start`), as a log line's header does.

    A terminal copy wraps every long line at the same column W, so several lines have exactly
    length W; the line after each of them is its continuation. Returns the joined lines, the
    1-based source line of each, and how many joins were made.

    >>> rejoin_hard_wraps(["Err: dial unix /d/p.sock: connect:", "connection refused.", "next"])
    (['Err: dial unix /d/p.sock: connect: connection refused.', 'next'], [1, 3], 1)
    """
    lines, numbers, joins = (
        _rejoin_width(lines, record_start)
        if by_width
        else (lines, list(range(1, len(lines) + 1)), 0)
    )
    if not any(_OP_TAIL_RE.search(x) for x in lines):
        return lines, numbers, joins
    out: list[str] = []
    nums: list[int] = []
    for line, n in zip(lines, numbers, strict=True):
        if out and _OP_TAIL_RE.search(out[-1]) and _ERRNO_HEAD_RE.match(line):
            out[-1] = f"{out[-1].rstrip()} {line.strip()}"
            joins += 1
            continue
        out.append(line)
        nums.append(n)
    return out, nums, joins


def _rejoin_width(
    lines: list[str], record_start: regex.Pattern | None
) -> tuple[list[str], list[int], int]:
    lengths: dict[int, int] = {}
    for line in lines:
        if len(line) >= 60:
            lengths[len(line)] = lengths.get(len(line), 0) + 1
    width = max(lengths, key=lambda w: (lengths[w], w), default=0)
    if not width or lengths[width] < 3 or lengths[width] * 4 < sum(lengths.values()):
        return lines, list(range(1, len(lines) + 1)), 0
    out: list[str] = []
    numbers: list[int] = []
    joins = 0
    i = 0
    while i < len(lines):
        cur, start = lines[i], i + 1
        while (
            len(lines[i]) == width
            and i + 1 < len(lines)
            and not _starts_record(lines[i + 1], record_start)
        ):
            i += 1
            cur += lines[i]
            joins += 1
        out.append(cur)
        numbers.append(start)
        i += 1
    return out, numbers, joins


def _starts_record(line: str, record_start: regex.Pattern | None) -> bool:
    """The line opens a record of its own, not the rest of the line above: a log line's header
    (klog, journald, a timestamp) or what `record_start` matches. Twenty lines of one length that
    each open with HAMi-core's tag are a message repeated, not one line wrapped twenty times.

    >>> import re
    >>> tag = re.compile(r"[ \\t]*\\[HAMI-core ")
    >>> _starts_record("[HAMI-core Msg(29:1:utils.c:27)]: unified_lock locked", tag)
    True
    >>> _starts_record("ection refused", tag), _starts_record("E0101 00:00:00.000000 1 a.go:1] x", None)
    (False, True)
    """
    if LOG_LINE_RE.match(line):
        return True
    return record_start is not None and record_start.match(line) is not None


_HUNK_RE = re.compile(r"(?m)^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_DIFF_HEADER_RE = re.compile(r"^(?:--- |\+\+\+ |@@ |diff |index |\\ No newline)")


def diff_after_side(text: str) -> str | None:
    """The state after the change a unified diff shows (its context and `+` lines), or None when
    the text is no unified diff. Removed lines and diff headers become blank lines, so every
    line keeps its number for citations.

    >>> diff_after_side("--- a.toml\\n+++ b.toml\\n@@ -1,2 +1,2 @@\\n [x]\\n-  v = 1\\n+  v = 2")
    '\\n\\n\\n[x]\\n\\n  v = 2'
    >>> diff_after_side("[x]\\n  v = 1") is None
    True
    """
    if not _HUNK_RE.search(text):
        return None
    out = []
    for line in text.split("\n"):
        if _DIFF_HEADER_RE.match(line) or line.startswith("-"):
            out.append("")
        elif line.startswith(("+", " ")):
            out.append(line[1:])
        else:
            out.append(line)
    return "\n".join(out)


def line_prefix(line: str) -> re.Match[str]:
    """The line's kubectl/CRI prefix: every part of the pattern is optional, so it matches every
    line (an empty match when there is no prefix)."""
    m = PREFIX_RE.match(line)
    assert m is not None  # an all-optional pattern anchored at ^ always matches
    return m
