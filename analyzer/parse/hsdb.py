"""Hyperscan's side of a big log's byte scan: signature regexes in its byte mode, the scan's plan
and its databases (compiled, kept in the cache folder), and a scanner with a scratch per thread.

Neither numpy nor polars is imported here: the command line's process plans a big log's scan and
checks that Hyperscan takes its patterns with this module, while its scan processes, forked
before the analysis's modules were imported, import numpy for the chunks
(analyzer/parse/bytescan.py)."""

from __future__ import annotations

import functools
import hashlib
import pickle
import platform
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from analyzer.cache import cache_dir, kept
from analyzer.parse.batch import KLOG_HEADER
from analyzer.parse.literals import leading_superset, misses_lines_starting

hyperscan: ModuleType | None
try:  # a binary wheel on the usual platforms; without it the line reader scans every log
    import hyperscan
except ImportError:  # pragma: no cover - exercised on platforms without a wheel
    hyperscan = None

# a literal of fewer bytes than this is looked for by a database of its own: one two-byte literal
# (a character outside ASCII that ignoring case matches to a letter, such as LONG S) in the main
# database doubled what every one of its ~590 literals costs (Hyperscan's literal matcher on
# 16 MiB: 24 -> 51 ms; alone, the short ones cost ~4 ms)
SHORT_ALONE = 3
SECOND_TAIL = 16  # characters of a counted text's end that stand for its second occurrence

SPACE = r"\t\x0b\x0c\r "  # \s without the newline
_UNSUPPORTED_ESCAPES = set("pPXRhHvVKkgGQEzZAN0123456789xuUc")
_COMPILED: dict[tuple, Any] = {}  # Hyperscan databases (None: refused)


def line_pattern(pattern: str) -> str | None:
    """A signature's regex for Hyperscan's byte mode, where nothing may cross a line's end:
    negated classes and `\\s` leave the newline out, and a character outside ASCII is its UTF-8
    bytes (in a class, one more branch: `[:：]` reads `(?:[:]|\\xef\\xbc\\x9a)`; a negated class
    leaves it out, and reads its bytes as `.` reads a multi-byte character, one byte at a time).
    None when the byte mode cannot read it the same way: such a character where case is ignored
    or in a range, Unicode classes, back-references, dot-all or verbose mode, or a set inside a
    set.

    >>> line_pattern(r'"Scheduling pod" podName="(?P<pod>[^"]+)" \\S+\\s+x')
    '"Scheduling pod" podName="(?:[^\\\\n"]+)" \\\\S+[\\\\t\\\\x0b\\\\x0c\\\\r ]+x'
    >>> print(line_pattern("version[:=\\uff1a] ‘x’"))
    version(?:[:=]|\\xef\\xbc\\x9a) (?:\\xe2\\x80\\x98)x(?:\\xe2\\x80\\x99)
    >>> line_pattern(r"GPU\\p{L}"), line_pattern("[a-é]"), line_pattern("(?i)café")
    (None, None, None)
    """
    if _CASELESS.search(pattern) and any(c.lower() != c.upper() for c in pattern if ord(c) > 127):
        return None
    out: list[str] = []
    wide: list[str] = []  # the class's members outside ASCII, as bytes
    i, in_class, class_at, negated = 0, False, 0, False
    while i < len(pattern):
        c = pattern[i]
        if ord(c) > 127:
            if not in_class:
                out.append(f"(?:{bytes_literal(c)})")
            elif "-" in (pattern[i - 1], pattern[i + 1 : i + 2]):
                return None  # a range would read a byte of it
            elif not out[class_at].startswith("[^"):
                wide.append(bytes_literal(c))
            # a negated class reads each byte of the character it leaves out, as `.` reads a byte
            i += 1
            continue
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or nxt in _UNSUPPORTED_ESCAPES:
                return None
            if nxt == "s":
                out.append(SPACE if in_class else f"[{SPACE}]")
            elif nxt == "n":  # a line holds no newline: it matches nothing there
                if not in_class:
                    out.append(NO_BYTE)
            elif nxt in "DW" and not in_class:
                out.append(rf"[^\n\{nxt.lower()}]")
            elif nxt in "SDW" and in_class:
                return None  # the class would take the newline
            else:
                out.append(c + nxt)
            i += 2
            continue
        if in_class:
            if c == "[":
                return None
            out.append(c)
            if c == "]":
                in_class = False
                members = "".join(out[class_at:])
                if not negated and members != "[]" and _takes_newline(members):  # `[\t-\r]`
                    return None
                ascii_part = [members] if members != "[]" else []  # `[\n]`: none in a line
                out[class_at:] = (
                    ["(?:", "|".join([*ascii_part, *wide]), ")"]
                    if wide
                    else ascii_part or [NO_BYTE]
                )
                wide = []
            i += 1
            continue
        if c == "{" and pattern.startswith(",", i + 1):  # `{,n}`: Hyperscan reads the text
            out.append("{0")
            i += 1
            continue
        if c == "[":
            negated = pattern.startswith("[^", i)
            class_at = len(out)
            out.append(r"[^\n" if negated else "[")
            i += 2 if negated else 1
            if pattern.startswith("]", i):  # a leading ] is a member
                out.append(r"\]")
                i += 1
            in_class = True
            continue
        if pattern.startswith("(?", i):
            rest = pattern[i + 2 :]
            if rest.startswith(("P<", "<")) and not rest.startswith(("<=", "<!")):
                i = pattern.index(">", i) + 1
                out.append("(?:")
                continue
            flags = rest.split(")", 1)[0].split(":", 1)[0]
            if rest.startswith("P=") or "s" in flags or "x" in flags:
                return None
        out.append(c)
        i += 1
    return None if in_class else "".join(out)


_CASELESS = re.compile(r"\(\?[a-zA-Z-]*i")  # an inline flag group that ignores case


def _takes_newline(members: str) -> bool:
    """Whether a class (as `line_pattern` writes it) holds the newline (a range across it)."""
    try:
        return re.fullmatch(members.encode(), b"\n") is not None
    except re.error:
        return True


def line_counter(pattern: str) -> str | None:
    """A pattern with one match per line that a signature's regex matches (at the line's end,
    past its newline), or None when Hyperscan's byte mode cannot read the regex the same way.
    Whether Hyperscan compiles it (a look-behind it refuses) is `accepted`'s question.

    Hyperscan refuses an end anchor with more pattern after it, as `$` followed by the rest of
    the line would be: a regex whose `$` is the last thing its match reads (`\\s*$`, `(?:\\.
    Retrying|$)`) is counted as two branches, the match through a `$`, which then reads the
    newline instead, and the match through the other branches (each `$` made an atom no byte
    matches), which reads on to the line's end. Both end past the newline, where Hyperscan
    reports a pattern once; the first also ends mid-line where the regex matches without its
    `$`, which the scan drops (`bytescan.past_newlines`: the second reports that line). A `$`
    with more to read after it is None.

    >>> print(line_counter(r"done\\s*$"))
    (?:done[\\t\\x0b\\x0c\\r ]*\\n)|(?:done[\\t\\x0b\\x0c\\r ]*[^\\x00-\\xff])[^\\n]*\\n
    >>> line_counter(r"(?:a$|b)c") is None
    True
    """
    line = line_pattern(pattern)
    if hyperscan is None or line is None:
        return None
    anchors = end_anchors(line)
    if anchors is None:
        return None
    if not anchors:
        return f"(?:{line})[^\\n]*\\n"
    through = _replaced_at(line, anchors, "\\n")
    elsewhere = _replaced_at(line, anchors, NO_BYTE)
    return f"(?:{through})|(?:{elsewhere})[^\\n]*\\n"


NO_BYTE = r"[^\x00-\xff]"  # an atom no byte matches (Hyperscan takes no `(?!)`)


def end_anchors(line: str) -> list[int] | None:
    """Where a line pattern (`line_pattern`'s) has an end anchor `$`, or None when one of them
    is not the last thing its match reads: only closing groups, optional ones (`)?`), and the
    other branches of its groups may follow it.

    >>> end_anchors(r"a\\s*$"), end_anchors(r"x(?:, y|$)?"), end_anchors(r"[$]\\$")
    ([4], [8], [])
    >>> end_anchors(r"(?:a$)+"), end_anchors(r"a$\\s*")
    (None, None)
    """
    anchors: list[int] = []
    for i, c in _outside_classes(line):
        if c == "$":
            if not _nothing_after(line, i + 1):
                return None
            anchors.append(i)
    return anchors


def _outside_classes(line: str, i: int = 0) -> Iterator[tuple[int, str]]:
    """(index, character) of the pattern's characters from `line[i]` on that are neither
    escaped nor in a class."""
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
        elif c == "[":
            i = _class_end(line, i)
        else:
            yield i, c
            i += 1


def _nothing_after(line: str, i: int) -> bool:
    """Whether a match can read nothing more from `line[i]` on: groups close (at most
    optionally repeated once) and other branches are skipped, to the pattern's end."""
    while i < len(line):
        if line[i] == ")":
            i += 1
            if line.startswith("?", i):
                i += 2 if line.startswith(("??", "?+"), i) else 1
        elif line[i] == "|":
            i = _group_close(line, i)
        else:
            return False
    return True


def _group_close(line: str, i: int) -> int:
    """The index of the `)` closing the group `line[i]` is in (the pattern's end at the top)."""
    depth = 0
    for at, c in _outside_classes(line, i):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return at
            depth -= 1
    return len(line)


def _class_end(line: str, i: int) -> int:
    """The index past the class that opens at `line[i]` (its leading `]` is escaped there)."""
    i += 2 if line.startswith("[^", i) else 1
    while i < len(line) and line[i] != "]":
        i += 2 if line[i] == "\\" else 1
    return i + 1


def _replaced_at(line: str, at: list[int], text: str) -> str:
    """`line` with the one character at each of `at` replaced by `text`."""
    out, prev = [], 0
    for i in at:
        out += [line[prev:i], text]
        prev = i + 1
    return "".join([*out, line[prev:]])


@functools.lru_cache(maxsize=256)
def accepted(counter: str) -> bool:
    """Hyperscan compiles this multi-line pattern on its own: asked only when a scan's database
    does not compile (a compile per hot signature would cost every big log 10 ms; the answer is
    not kept in the cache folder, where a file per signature would push the databases out)."""
    assert hyperscan is not None
    return compile_database([counter], [hyperscan.HS_FLAG_MULTILINE]) is not None


_BYTE_ESCAPES = [
    chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\x{b:02x}" for b in range(256)
]


def bytes_literal(text: str) -> str:
    """A literal as a Hyperscan pattern: every byte that is not a letter or digit as \\xHH."""
    return "".join(map(_BYTE_ESCAPES.__getitem__, text.encode("utf-8")))


class Scanner:
    """A compiled database and each thread's scratch space (one scan at a time may use one)."""

    def __init__(self, database: Any):
        self.database = database
        self._local = threading.local()

    def scan(
        self, data: bytes | bytearray | memoryview, bins: list[list[int]], base: int = 0
    ) -> None:
        """Append each match's end offset (plus `base`) to its pattern's bin (patterns may share
        a bin), in the order of the ends."""

        def on_match(pattern: int, _start: int, end: int, _flags: int, _context: object) -> None:
            bins[pattern].append(base + end)

        self.database.scan(data, match_event_handler=on_match, scratch=self._scratch())

    def scan_lines(self, data: memoryview, start: int, end: int, bins: list[list[int]]) -> None:
        """`scan` of data[start:end], whole lines, with the byte after them (the next line's
        first, or a NUL at the data's end), each end past `end` dropped: Hyperscan 5.4 misses
        some matches that end where its data ends (a counter through `.*?` and an optional
        group, on the last line: `sch-encoded-node-devices` lost a line per block of ~1 MiB)."""
        limit = end - start
        after = data[start : end + 1] if end < len(data) else bytes(data[start:end]) + b"\0"

        def on_match(pattern: int, _start: int, at: int, _flags: int, _context: object) -> None:
            if at <= limit:
                bins[pattern].append(start + at)

        self.database.scan(after, match_event_handler=on_match, scratch=self._scratch())

    def _scratch(self) -> Any:
        assert hyperscan is not None
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self.database)
        return scratch


@dataclass(frozen=True)
class Databases:
    """A plan's compiled databases: the main one and how many patterns it has; the prefilters no
    klog line matches (run on the other lines only) and how many; the literals shorter than
    SHORT_ALONE, how many, and whether each holds a byte outside ASCII (as the characters
    folding to ASCII letters do: a block of ASCII then holds none)."""

    main: Any
    size: int
    aside: tuple[Any, int] | None
    short: tuple[Any, int, bool] | None
    tally: Any | None = None  # the counters of the tallied hot signatures


@dataclass(frozen=True)
class ScanPlan:
    """What a scan process builds its scanner from (sent with each chunk; built once per
    process). `reported`: (hot signature, `line_counter`) whose lines Hyperscan reports;
    `counted`: (hot signature, text) of plain ones that `bytes.count` counts (a line reported
    costs a call into Python, a quarter of a microsecond: a periodic line is a third of some
    logs); `tallied`: (hot signature, `line_counter`) whose lines are counted by their
    distinct digit-blind texts in a chunk that repeats itself (`parse.tally`), else reported;
    `literals` and `caseless` (ASCII case ignored): what makes a line a candidate, as
    written (each process cuts them, `bytescan.rare_endings`); `inline` and `aside`: the line
    patterns of the signatures without a literal, run everywhere or on the lines that are not
    klog lines only; `sample`: the log's first lines (`logs.PROFILE_BYTES`), where the literals
    are cut, until a scan process has cut them (`cut`, sent instead: `lightened`)."""

    reported: tuple[tuple[str, str], ...]
    counted: tuple[tuple[str, str], ...]
    tallied: tuple[tuple[str, str], ...]
    literals: tuple[str, ...]
    caseless: tuple[str, ...]
    inline: tuple[str, ...]
    aside: tuple[str, ...]
    sample: bytes
    # the log's lines start with kubectl/CRI prefixes: each chunk is scanned without them
    # (`parse.prefixes`), as the line reader reads its lines
    prefixed: bool = False
    key: str = field(default="", compare=False)  # a digest of the rest: a process's memo key
    cut: tuple[str, ...] | None = field(default=None, compare=False)  # the literals as cut

    def lightened(self, cut: Sequence[str]) -> ScanPlan:
        """This plan with its literals as a scan process cut them instead of the sample they
        were cut in: the same databases, a thirteenth of the bytes to send with each chunk (a
        quarter of a MiB pickled and piped per chunk cost a 1 GB log ~0.1 s of CPU)."""
        return replace(self, sample=b"", cut=tuple(cut))

    def recut(self, cut: Sequence[str]) -> ScanPlan:
        """This plan with its literals looked for as `cut` (a start of each, or it whole) instead
        of as a scan process would cut them: a plan of its own (its databases are others)."""
        key = hashlib.sha256(pickle.dumps((self.key, tuple(cut)))).hexdigest()
        return replace(self, sample=b"", cut=tuple(cut), key=key)

    @classmethod
    def of(
        cls,
        reported: list[tuple[str, str]],
        counted: list[tuple[str, str]],
        literals: list[str],
        caseless: list[str],
        prefilters: list[str],
        sample: bytes = b"",
        tallied: Sequence[tuple[str, str]] = (),
        prefixed: bool = False,
    ) -> ScanPlan | None:
        """The plan, with `prefilters`, the regexes of the signatures without a literal (found
        by a superset of their matches); None when one cannot be read in byte mode or Hyperscan
        is missing."""
        if hyperscan is None:
            return None
        # a superset of each one's lines: Hyperscan anchors a regex on a literal inside it, which
        # can be on most lines (".go:" of a stack frame's path is in every klog line's header)
        supersets = [leading_superset(p) or p for p in prefilters]
        read = [line_pattern(x) for x in supersets]
        lines = [p for p in read if p is not None]
        if len(lines) < len(read):
            return None
        # one that no klog line can match (a stack frame's `^[\w.~-]+/`) would run at the start
        # of every line: it is looked for in the other lines, a few where klog lines are most
        off_klog = [misses_lines_starting(x, KLOG_HEADER) for x in supersets]
        inline = tuple(p for p, off in zip(lines, off_klog, strict=True) if p and not off)
        aside = tuple(p for p, off in zip(lines, off_klog, strict=True) if p and off)
        parts = (
            tuple(reported),
            tuple(counted),
            tuple(tallied),
            tuple(literals),
            tuple(caseless),
            inline,
            aside,
        )
        key = hashlib.sha256(pickle.dumps((*parts, sample, prefixed))).hexdigest()
        return cls(*parts, sample, prefixed, key)

    def databases(self, literals: list[str]) -> Databases | None:
        """The databases that find these literals (the plan's, or starts of them) with the rest
        of the plan; None when Hyperscan refuses a pattern."""
        assert hyperscan is not None
        multiline = hyperscan.HS_FLAG_MULTILINE
        expressions = [p for _, p in self.reported]
        # lines where `bytes.count` may have counted a text twice: the text, then its last
        # bytes further on in the line (a superset of a second occurrence: `_Lines.extra`
        # counts each such line again), which Hyperscan finds for half of what the text twice
        # costs (its whole length stays active through each line the text is on)
        expressions += [
            f"{bytes_literal(x)}[^\\n]*{bytes_literal(x[-SECOND_TAIL:])}" for _, x in self.counted
        ]
        flags = [multiline] * len(expressions)
        short: list[tuple[str, int]] = []  # (literal, flag): those shorter than SHORT_ALONE
        for texts, flag in ((literals, 0), (self.caseless, hyperscan.HS_FLAG_CASELESS)):
            for x in texts:
                if len(x.encode()) < SHORT_ALONE:
                    short.append((x, flag))
                else:
                    expressions.append(bytes_literal(x))
                    flags.append(flag)
        prefilter = multiline | hyperscan.HS_FLAG_PREFILTER
        expressions += self.inline
        flags += [prefilter] * len(self.inline)
        main = database(expressions, flags)
        aside = database(list(self.aside), [prefilter] * len(self.aside)) if self.aside else None
        short_database = (
            database([bytes_literal(x) for x, _ in short], [f for _, f in short]) if short else None
        )
        tally = (
            database([p for _, p in self.tallied], [multiline] * len(self.tallied))
            if self.tallied
            else None
        )
        if (
            main is None
            or (self.aside and aside is None)
            or (short and short_database is None)
            or (self.tallied and tally is None)
        ):
            return None
        return Databases(
            main,
            len(expressions),
            (aside, len(self.aside)) if self.aside else None,
            (short_database, len(short), all(not x.isascii() for x, _ in short)) if short else None,
            tally,
        )


def database(expressions: list[str], flags: list[int]) -> Any:
    """The compiled block-mode database, or None when Hyperscan refuses a pattern (kept per
    pattern set: a batch worker scans many big logs with one catalogue; and between runs in the
    cache folder, since compiling takes as long as scanning 100 MB)."""
    key = (tuple(expressions), tuple(flags))
    if key not in _COMPILED:
        if len(_COMPILED) > 32:
            _COMPILED.clear()
        _COMPILED[key] = cached_database(expressions, flags, "scan")
    return _COMPILED[key]


CACHED_DATABASES = 16  # kept in the cache folder


def cached_database(expressions: list[str], flags: list[int], use: str) -> Any:
    """The database from the cache folder (checksummed: a damaged file is compiled again), or
    compiled and saved there; `use` names the files of one user of the folder."""
    assert hyperscan is not None
    key = repr((hyperscan.__version__, platform.machine(), expressions, flags)).encode()

    def read(data: bytes) -> Any:  # a damaged file, or one for another CPU, is compiled again
        if hashlib.sha256(data[32:]).digest() != data[:32]:
            return None
        return hyperscan.loadb(data[32:], hyperscan.HS_MODE_BLOCK)

    def write(database: Any) -> bytes | None:
        if database is None:
            return None
        payload = hyperscan.dumpb(database)
        return hashlib.sha256(payload).digest() + payload

    return kept(
        cache_dir("hyperscan"),
        f"{use}-{hashlib.sha256(key).hexdigest()[:32]}.db",
        (f"{use}-*.db", CACHED_DATABASES),
        read,
        lambda: compile_database(expressions, flags),
        write,
    )


def compile_database(expressions: list[str], flags: list[int]) -> Any:
    """A block-mode Hyperscan database of these patterns (ids: their positions), or None when
    Hyperscan refuses one."""
    assert hyperscan is not None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(
            expressions=[x.encode() for x in expressions],
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=flags,
        )
    except hyperscan.error:  # CompilerError and the like
        return None
    return database
