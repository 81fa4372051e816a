"""The byte scan of big plain logs (Hyperscan over chunks) against the line reader (polars over
lines): the same counts, severities, kept rows and signatures on every shape of log, whatever the
chunk size; the translation of signature regexes into Hyperscan's byte mode."""

from __future__ import annotations

import dataclasses
import itertools
import mmap
import os
import re
import signal
import sys
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analyzer.bundle import recognise as recognise_mod
from analyzer.parse import bigscan, bytescan, hsdb, literals, scanplan, workers
from analyzer.parse import logs as logs_mod
from analyzer.parse import tally as tally_mod
from analyzer.parse.batch import KLOG_HEADER
from analyzer.parse.literals import leading_superset, misses_lines_starting
from conftest import parse_texts

NUMA = '"failed to get numa information from sysfs"'
VOCABULARY = [
    f"E0815 10:00:00.000001  412873 register.go:168] {NUMA} idx=0",
    f"E0815 10:00:00.000001  412873 register.go:168] {NUMA} idx=0 again {NUMA}",  # two in a line
    "I0815 10:00:00.000002  412873 register.go:302] Updating node annotations with 2 device(s)",
    "E0815 10:00:00.000003  412873 register.go:302] Updating node annotations with no device(s)",
    "I0815 10:00:00.000004  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND",
    "I0815 10:00:00.000005  1 notes.go:1] running HAMI V2.7.1 on this node",
    "W0815 10:00:00.000006  1 plugin.go:9] Device info unchanged, skipping annotation update",
    "E0815 10:00:00.000007  412873 other.go:1] unmatched error",
    "F0815 10:00:00.000008  1 main.go:1] fatal: nothing matches this",
    "E0815 10:00:00.0000",  # cut off after the header
    "E08",  # too short to be klog
    "",
    "goroutine 1 [running]:",
    "k8s.io/kubernetes/pkg/kubelet.(*Kubelet).Run(0xc000)",
    "\t/go/src/k8s.io/kubernetes/pkg/kubelet/kubelet.go:1500 +0x1a5",
    "plain text without a header, HAMi v2.6.0 mentioned",
    "I0815 10:00:00.000009  1 x.go:1] caf\u00e9 \u00fcber \u4e2d\u6587 unicode text",
    "I0815 10:00:00.000010  1 x.go:1] a very long line " + "x" * 3000,
    # once, and its last characters again later: a second occurrence to the scan's superset
    f"E0815 10:00:00.000011  412873 register.go:168] {NUMA} from {NUMA[-hsdb.SECOND_TAIL :]}",
]


def _scan_both(ruleset, monkeypatch, content: bytes, chunk: int):
    """The same big log through the byte scan and through the line reader (the patches undone
    on return: hypothesis runs many examples in one test)."""
    with monkeypatch.context() as patch:
        patch.setattr(recognise_mod, "SMALL_FILE", 1)
        patch.setattr(logs_mod, "BATCH_ROWS", 700)
        patch.setattr(logs_mod, "POOL_BYTES", 20_000)
        patch.setattr(bigscan, "CHUNK_BYTES", chunk)
        used = []
        real = scanplan.byte_scan

        def spy(*args, **kwargs):
            scan = real(*args, **kwargs)
            used.append(scan)
            return scan

        patch.setattr(scanplan, "byte_scan", spy)
        by_bytes = parse_texts(ruleset, {"device-plugin.log": content}).logs[0]
        patch.setattr(scanplan, "byte_scan", lambda *args, **kwargs: None)
        by_lines = parse_texts(ruleset, {"device-plugin.log": content}).logs[0]
    assert by_bytes.artefact.text is None and by_lines.artefact.text is None
    return by_bytes, by_lines, used


def _taken(scans) -> list[bool]:
    """Per big log read, whether the byte scan read it."""
    return [scan is not None for scan in scans]


def _same(a, b) -> None:
    for key in ("lines", "klog_lines", "severities", "sig_counts", "first_clock", "last_clock"):
        assert getattr(a.stats, key) == getattr(b.stats, key), key
    cols = ["line", "text", "sigs", "sev", "msg"]
    assert a.frame.select(cols).equals(b.frame.select(cols))


def _log(lines: list[str], repeat: int, ending: str = "\n", last_newline: bool = True) -> bytes:
    text = ending.join(lines * repeat)
    return (text + (ending if last_newline else "")).encode()


@pytest.mark.parametrize(
    "shape",
    [
        "klog",
        "rare-errors",
        "crlf",
        "no-final-newline",
        "mostly-prose",
        "invalid-utf8",
        "long-lines",
    ],
)
@pytest.mark.parametrize("chunk", [4 << 10, 64 << 10])
def test_the_byte_scan_reads_a_log_as_the_line_reader_does(ruleset, monkeypatch, shape, chunk):
    lines = VOCABULARY
    content = {
        "klog": lambda: _log(lines, 40),  # E, W and F on many lines: counted in bytes
        # E, W and F on few lines: each reported by Hyperscan
        "rare-errors": lambda: _log([lines[2]] * 200 + lines, 10),
        "crlf": lambda: _log(lines, 40, ending="\r\n"),
        "no-final-newline": lambda: _log(lines, 40, last_newline=False),
        # a log of few klog lines: the klog lines are counted, not the others
        "mostly-prose": lambda: _log(["plain prose line"] * 30 + lines[:3], 30),
        "invalid-utf8": lambda: _log(lines, 40) + b"E0815 10:00:00.1  1 x.go:1] bad \xff\xfe\n",
        "long-lines": lambda: _log([*lines, "I0815 10:00:00.1  1 x.go:1] " + "y" * 9000], 20),
    }[shape]()
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, chunk)
    assert _taken(used) == [True]  # the path under test
    _same(by_bytes, by_lines)
    counts = by_bytes.stats.sig_counts
    if shape not in ("mostly-prose", "rare-errors"):
        assert counts["dp-numa-sysfs-benign"] == 120 if shape != "long-lines" else 60
        assert by_bytes.stats.severities["F"] > 0


def _prefixed(lines: list[str], style: str) -> list[str]:
    """The lines as `kubectl logs --timestamps` (RFC 3339 with nanoseconds, trailing zeros
    dropped) or a node's CRI log files print them."""
    out = []
    for k, line in enumerate(lines):
        fraction = f".{k * 7919 % 10**9:09d}".rstrip("0") if k % 7 else ""
        zone = "+08:00" if style == "offset" else "Z"
        stamp = f"2024-11-11T05:{k // 60 % 60:02d}:{k % 60:02d}{fraction.rstrip('.')}{zone} "
        if style == "cri":
            stamp += ("stderr" if k % 3 else "stdout") + (" P " if k % 11 == 0 else " F ")
        if style == "mixed" and k % 5 == 0:  # a line without: a wrapped one, a pasted one
            stamp = "" if k % 10 else stamp[:19] + " "
        if style == "late-pods" and k > 60 and k % 37 == 0:  # kubectl --prefix, past the head
            stamp = "[pod/dp-x/plugin] " + stamp
        if style == "unicode-digits" and k % 13 == 0:
            stamp = stamp.replace("1", "\u0661", 1)  # Arabic-Indic one: a digit to the pattern
        out.append(stamp + line)
    return out


@pytest.mark.parametrize(
    "style", ["timestamps", "offset", "cri", "mixed", "late-pods", "unicode-digits", "crlf"]
)
@pytest.mark.parametrize("chunk", [4 << 10, 64 << 10])
def test_the_byte_scan_reads_a_prefixed_log_as_the_line_reader_does(
    ruleset, monkeypatch, style, chunk
):
    """A log whose lines start with a time (`kubectl logs --timestamps`, what `collect` runs) or
    a CRI prefix is scanned without them, as the line reader reads it: the same counts, rows,
    texts without their prefixes and raw lines with them (their times and containers). Lines the
    scan cannot settle eight bytes at a time (kubectl's `[pod/...]`) are read by the pattern; a
    time whose digits are not ASCII (polars' Unicode tables decide) sends the log to the line
    reader."""
    monkeypatch.setattr(logs_mod, "PROFILE_BYTES", 4 << 10)  # the `[pod/` lines past the head
    streams = []  # whether each pass over the log may take the byte scan
    real_stream = logs_mod._stream
    monkeypatch.setattr(
        logs_mod, "_stream", lambda *a: streams.append(a[5:] != (False,)) or real_stream(*a)
    )
    lines = _prefixed(VOCABULARY * 40, "timestamps" if style == "crlf" else style)
    lines.append("I0815 10:00:00.1  1 x.go:1] bad \udcff byte, no prefix")
    content = "\n".join(lines).replace("\n", "\r\n" if style == "crlf" else "\n") + "\n"
    by_bytes, by_lines, used = _scan_both(
        ruleset, monkeypatch, content.encode("utf-8", "surrogateescape"), chunk
    )
    assert _taken(used) == [True]  # the path under test
    assert used[0].plan.prefixed
    assert (False in streams) == (style == "unicode-digits")  # read again by the line reader
    _same(by_bytes, by_lines)
    cols = ["line", "raw", "text", "rfc", "container"]
    assert by_bytes.frame.select(cols).equals(by_lines.frame.select(cols))
    assert by_bytes.frame["rfc"].drop_nulls().len() > 0
    assert by_bytes.stats.sig_counts["dp-numa-sysfs-benign"] == 120


def test_kubectl_pod_prefixes_in_the_head_send_a_log_to_the_line_reader(ruleset, monkeypatch):
    """`kubectl logs --prefix` names each line's pod and container: such a log is read by the
    line reader (the byte scan would match every prefix a line at a time)."""
    lines = ["[pod/dp-x/plugin] " + x for x in _prefixed(VOCABULARY * 20, "timestamps")]
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, _log(lines, 1), 4 << 10)
    assert used == []  # never asked for
    assert by_bytes.stats.containers == ["plugin"]
    _same(by_bytes, by_lines)


def test_a_plain_hot_text_is_counted_where_dense_and_its_lines_reported_where_sparse(
    ruleset, monkeypatch
):
    """Dense (once in 2 KiB or more often): counted by `bytes.count` (a line holding it twice, or
    once and its last characters again, counted once); sparse: each line reported. Both give the
    line reader's counts."""
    # the numa text once in ~140 bytes, "Device info" once in ~4 KB
    dense = _log(VOCABULARY[:11] + [VOCABULARY[0]] * 20 + [VOCABULARY[4]] * 20, 40)
    # both on many lines, but once in 3 KB or less often: long lines between them
    sparse = _log(VOCABULARY + [VOCABULARY[17]] * 3, 10)
    for content, counted, reported in (
        (dense, ["dp-numa-sysfs-benign"], {"dp-annotation-unchanged"}),
        (sparse, [], {"dp-numa-sysfs-benign", "dp-annotation-unchanged"}),
    ):
        by_bytes, by_lines, (scan,) = _scan_both(ruleset, monkeypatch, content, 4 << 10)
        assert [sid for sid, _ in scan.counted] == counted
        assert reported <= set(scan.reported)
        _same(by_bytes, by_lines)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    picks=st.lists(st.integers(0, len(VOCABULARY) - 1), min_size=1, max_size=400),
    chunk=st.sampled_from([512, 4 << 10, 32 << 10]),
)
def test_any_mix_of_lines_reads_the_same_both_ways(ruleset, monkeypatch, picks, chunk):
    head = [VOCABULARY[0], VOCABULARY[2], VOCABULARY[6]]  # a device plugin's log, recognised
    content = _log(head + [VOCABULARY[i] for i in picks], 3)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, chunk)
    assert _taken(used) == [True]
    _same(by_bytes, by_lines)


@pytest.mark.parametrize("missing", ["hyperscan", "numpy"])
def test_without_hyperscan_or_numpy_the_line_reader_scans_every_log(ruleset, monkeypatch, missing):
    if missing == "hyperscan":
        monkeypatch.setattr(hsdb, "hyperscan", None)
    else:
        monkeypatch.setattr(bigscan, "numpy_found", lambda: False)
    content = _log(VOCABULARY, 40)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 64 << 10)
    assert _taken(used) == [False]
    _same(by_bytes, by_lines)


def test_loose_errors_are_the_unmatched_among_the_first_error_lines(ruleset, monkeypatch):
    """Each E/F line is checked on its own: only the file's first ERROR_EXAMINED are (both
    readers), and of those the first ERROR_LINE_CAP unmatched are kept."""
    monkeypatch.setattr(logs_mod, "ERROR_EXAMINED", 30)
    monkeypatch.setattr(bigscan, "ERROR_EXAMINED", 30)
    lines = [f"E0815 10:00:00.000001  1 x.go:1] {NUMA}"] * 5
    lines += ["E0815 10:00:00.000002  1 y.go:2] unmatched error"]
    content = _log(lines, 20)  # 120 E lines, of which 20 unmatched
    by_bytes, by_lines, _used = _scan_both(ruleset, monkeypatch, content, 4 << 10)
    _same(by_bytes, by_lines)
    loose = by_bytes.frame.filter(pl.col("msg") == "unmatched error")
    assert loose["line"].to_list() == [6, 12, 18, 24, 30]  # among the first 30 E lines


@pytest.mark.parametrize("reader", ["bytes", "lines"])
def test_a_candidate_no_signature_takes_is_loose_only_among_the_first_error_lines(
    ruleset, monkeypatch, reader
):
    """An E/F line that is a candidate (it holds a literal's start, or a case-insensitive
    literal's window, which the readers' prefilters find differently) but that no signature
    takes is kept as an unmatched error line only among the file's first ERROR_EXAMINED E/F
    lines, as the other unmatched ones are: the kept rows do not depend on how loose a
    reader's prefilter is."""
    monkeypatch.setattr(logs_mod, "ERROR_EXAMINED", 30)
    monkeypatch.setattr(bigscan, "ERROR_EXAMINED", 30)
    # the head: "err:" on most lines, so the scan looks for a start of "nvml GetDeviceCount err:"
    head = [f"I0815 10:00:00.0000{i:02d}  1 x.go:1] parse err: bad value {i}" for i in range(90)]
    early = "E0815 10:00:00.000030  1 x.go:1] nvml GetDeviceCount errXYZ early"
    late = "E0815 10:00:00.000031  1 x.go:1] nvml GetDeviceCount errXYZ late"
    errors = ["E0815 10:00:00.000032  1 y.go:2] unmatched error"] * 40
    content = _log([*head, early, *errors, late], 1)
    by_bytes, by_lines, _used = _scan_both(ruleset, monkeypatch, content, 4 << 10)
    _same(by_bytes, by_lines)
    kept = (by_bytes if reader == "bytes" else by_lines).frame["text"].to_list()
    assert early in kept and late not in kept  # the 1st E line is examined, the 42nd not


@pytest.mark.parametrize(
    ("pattern", "translated"),
    [
        (r"podName=\"(?P<pod>[^\"]+)\"", r"podName=\"(?:[^\n\"]+)\""),
        (r"a\s+b\S", r"a[\t\x0b\x0c\r ]+b\S"),
        (r"[\s:]x", r"[\t\x0b\x0c\r :]x"),
        (r"x\D\W", r"x[^\n\d][^\n\w]"),
        (r"[]a]", r"[\]a]"),
        (r"(?i)\bhami\b", r"(?i)\bhami\b"),
        ("caf\u00e9+", r"caf(?:\xc3\xa9)+"),  # a character outside ASCII is its bytes
        ("v[:=\uff1a]?1", r"v(?:[:=]|\xef\xbc\x9a)?1"),  # in a class, a branch of its own
        ("[\u2018\u2019]x", r"(?:\xe2\x80\x98|\xe2\x80\x99)x"),
        # a negated class leaves it out: its bytes are read one at a time, as `.` reads them
        ('[^"\u201c\u201d\\s]+', r'[^\n"\t\x0b\x0c\r ]+'),
        (r"a{,3}b", r"a{0,3}b"),  # Hyperscan reads `{,3}` as its text, Python as a repeat
    ],
)
def test_regexes_are_read_line_by_line_in_byte_mode(pattern, translated):
    assert hsdb.line_pattern(pattern) == translated


@pytest.mark.parametrize(
    "pattern",
    [
        r"caf\u00e9",  # regex's escape, not the character
        "(?i)caf\u00e9",  # byte mode ignores the case of ASCII letters only
        "[a-\u00e9]",
        r"\p{L}",
        r"(a)\1",
        r"(?s)a.b",
        r"(?x) a",
        r"[[:alpha:]]",
        r"[^\S]",
        r"a\Z",
        r"a[\t-\r]x",  # a range over the newline: a match would read on into the next line
        r"[\x00-\x7f]",
    ],
)
def test_what_byte_mode_cannot_read_the_same_way_is_refused(pattern):
    assert hsdb.line_pattern(pattern) is None


@pytest.mark.parametrize(
    "counter",
    [None, r"(?<=a)numa[^\n]*\n"],
    ids=["byte mode cannot read it", "Hyperscan refuses its counter"],
)
def test_a_hot_signature_byte_mode_cannot_take_is_a_candidate_like_any_other(
    ruleset, monkeypatch, counter
):
    """A frequent signature whose regex byte mode cannot read, or whose counter Hyperscan
    refuses (a look-behind, found only when the whole database does not compile): its lines are
    candidates attributed by its own regex, and counted the same."""
    assert hsdb.line_counter(r"(?<=a)numa") is not None
    assert not hsdb.accepted(hsdb.line_counter(r"(?<=a)numa"))
    monkeypatch.setattr(hsdb, "line_counter", lambda pattern: counter)
    content = _log(VOCABULARY, 40)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 64 << 10)
    assert _taken(used) == [True]
    _same(by_bytes, by_lines)


LINE_WORDS = st.lists(
    st.sampled_from(
        ["done", "Failed:", "x", "y", "z", " ", "  ", ". Retrying", "\u00e9", "\t", ":"]
    ),
    max_size=8,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(LINE_WORDS, min_size=1, max_size=12))
@pytest.mark.parametrize(
    "pattern",
    [
        r"done\s*$",
        r"Failed: (?P<err>.*?)(?:\. Retrying|$)",
        r"x(?:y|z$)?",
        r"^\s*x\s*$",  # (a regex matching an empty line: Hyperscan misses some, so would its count)
        r"(?:^|\s)x \[?y\]?\s*$|Failed",
        r"y(?:(?:z|$))?",
        "(?:done|\u00e9)[:x\uff1a]",
        r"Failed: ?(?P<e>[^\n]*[^\n.\s])\.[ \t]*(?:\n|$)",  # `\n`: no line holds one
        r"(?:done|Failed:) (?:x\S*?:)(?: y.*)?\s*$",  # one Hyperscan misses at the data's end
    ],
)
def test_a_counter_reports_each_line_the_regex_matches_once_past_its_newline(lines, pattern):
    """Hyperscan's count of a hot signature's lines, for regexes it takes only as rewritten: an
    end anchor last in its match (read as the newline in one branch and as nothing in the
    other, its ends mid-line dropped), a character outside ASCII (its bytes); on lines of these
    words, where byte mode reads as Python's regex does."""
    counter = hsdb.line_counter(pattern)
    assert counter is not None and hsdb.accepted(counter)
    data = "".join(line + "\n" for line in lines).encode()
    ends: list[list[int]] = [[]]
    database = hsdb.compile_database([counter], [hsdb.hyperscan.HS_FLAG_MULTILINE])
    hsdb.Scanner(database).scan_lines(memoryview(data), 0, len(data), ends)
    reported = bytescan.past_newlines(data, ends[0])
    newlines = [i + 1 for i, b in enumerate(data) if b == 10]
    assert set(reported) <= set(newlines) and len(reported) == len(set(reported))
    expected = [newlines[i] for i, line in enumerate(lines) if re.search(pattern, line)]
    assert sorted(reported) == expected


def test_a_match_that_ends_where_the_scanned_lines_end_is_reported():
    """Hyperscan 5.4 misses `sch-encoded-node-devices`'s counter on the last line of the data
    it scans (`Scanner.scan_lines` gives it the byte after): one line a block of ~1 MiB."""
    counter = hsdb.line_counter(
        r"(?:Encoded node Devices|Reporting devices) (?P<register>(?:GPU|MIG)-\S.*?:)"
        r"(?: in \d{4}-\d\d-\d\d .*)?\s*$"
    )
    line = b"I0504 12:19:17.014777 1 util.go:112] Encoded node Devices GPU-8c,10,NVIDIA RTX A5000,false:\n"
    scanner = hsdb.Scanner(hsdb.compile_database([counter], [hsdb.hyperscan.HS_FLAG_MULTILINE]))
    data = b"x\n" + line + line
    plain: list[list[int]] = [[]]
    scanner.scan(data, plain)
    assert plain[0] == [len(line) + 2]  # what Hyperscan alone reports: the last line is missed
    for start, end in [(0, len(data)), (0, len(line) + 2), (2, len(data))]:
        ends: list[list[int]] = [[]]
        scanner.scan_lines(memoryview(data), start, end, ends)
        assert ends[0] == [e for e in (len(line) + 2, len(data)) if start < e <= end]


@pytest.mark.parametrize("pattern", [r"(?:a$|b)c", r"(?:a$)+", r"a$\s*", r"a$b"])
def test_an_end_anchor_with_more_to_read_after_it_gets_no_counter(pattern):
    assert hsdb.end_anchors(hsdb.line_pattern(pattern)) is None
    assert hsdb.line_counter(pattern) is None


def test_a_signature_frequent_only_after_the_head_is_counted_once_the_scan_meets_it(
    ruleset, monkeypatch
):
    """A log quiet at its start, then in a loop: the first chunk whose candidates are mostly the
    loop's asks for a plan that counts its signature, and that chunk and those under way are
    scanned again with it (their candidates would be attributed one by one); the counts, the
    kept rows and the loose lines are still the line reader's."""
    quiet = [VOCABULARY[2], VOCABULARY[6]]
    loop = [VOCABULARY[4], VOCABULARY[7], VOCABULARY[4]]  # nvml init fails, an unmatched error
    content = _log(quiet, 200) + _log(loop, 500)
    monkeypatch.setattr(logs_mod, "PROFILE_BYTES", 4 << 10)  # the head sees no loop
    monkeypatch.setattr(bigscan, "REPLAN_MIN", 20)
    scanned = _spied(monkeypatch, bytescan, "scan_chunk", lambda args, _: args[0].key)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _no_semaphores)  # threads: seen here
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 8 << 10)
    loop_sid = max(by_lines.stats.sig_counts, key=by_lines.stats.sig_counts.get)
    first, later = used[0], [s for s in used[1:] if s is not None]
    assert loop_sid not in first.hot and any(loop_sid in s.hot for s in later)
    assert len(set(scanned)) == 2  # the head's plan, then one with the loop's signature
    assert len(scanned) > len(_chunks(content, 8 << 10))  # a chunk scanned again
    _same(by_bytes, by_lines)


def test_a_hot_regex_of_plain_text_with_escaped_punctuation_is_counted_as_text(
    ruleset, monkeypatch
):
    """`Successfully registered annotation\\. Next check in 30s seconds` matches its text and
    only it: where dense, `bytes.count` counts its lines (a line holding it twice once), as it
    counts a regex without any escape, and the line reader's count is the same."""
    line = "I0815 10:00:00.000012  1 register.go:213] Successfully registered annotation. Next check in 30s seconds"
    twice = f"{line} ... Successfully registered annotation. Next check in 30s seconds"
    content = _log([line, VOCABULARY[2], twice, VOCABULARY[6]], 150)
    by_bytes, by_lines, (scan,) = _scan_both(ruleset, monkeypatch, content, 8 << 10)
    assert ("dp-old-registered-annotation", line.split("] ", 1)[1]) in scan.counted
    assert by_bytes.stats.sig_counts["dp-old-registered-annotation"] == 300
    _same(by_bytes, by_lines)


def test_a_signature_without_literal_whose_stand_in_holds_most_lines_is_counted(
    ruleset, monkeypatch
):
    """Go's `log` format (`2018/06/06 12:40:11 ...`, the NVIDIA plugin's before klog) starts
    every line as a stack frame's path does (`leading_superset` of go-stack-frame: `^[...]+/`):
    looked for by that stand-in, every line was a candidate; counted as a hot signature by its
    own regex, the frames are found and counted as the line reader finds them."""
    lines = [
        "2018/06/06 12:40:11 Loading NVML",
        "2018/06/06 12:40:16 Could not register device plugin: context deadline exceeded",
        "2018/06/06 12:40:16 Starting to serve on /var/lib/kubelet/device-plugins/nvidia.sock",
        "k8s.io/kubernetes/pkg/kubelet.(*Kubelet).Run(0xc000)",
        "\t/go/src/k8s.io/kubernetes/pkg/kubelet/kubelet.go:1500 +0x1a5",
    ]
    content = _log(lines, 300)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 8 << 10)
    assert "go-stack-frame" in used[0].hot
    assert by_bytes.stats.sig_counts["go-stack-frame"] == 600
    _same(by_bytes, by_lines)


def _chunks(content: bytes, size: int) -> list[tuple[int, int]]:
    path = Path(tempfile.mkdtemp()) / "log"
    path.write_bytes(content)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bigscan, "CHUNK_BYTES", size)
        return list(bigscan._ranges(path))


def test_a_line_longer_than_the_cap_is_read_as_several(ruleset, monkeypatch):
    """Memory stays bounded by the chunk and the line cap whatever the file: a 100 KiB line read
    with a 16 KiB cap is several lines, and the lines around it are counted as before."""
    monkeypatch.setattr(bigscan, "LINE_CAP", 16 << 10)
    long = "I0815 10:00:00.1  1 x.go:1] " + "z" * (100 << 10)
    content = _log([VOCABULARY[0], long, VOCABULARY[0]], 5)
    with monkeypatch.context() as patch:
        patch.setattr(recognise_mod, "SMALL_FILE", 1)
        patch.setattr(bigscan, "CHUNK_BYTES", 4 << 10)
        log = parse_texts(ruleset, {"device-plugin.log": content}).logs[0]
    assert log.artefact.text is None
    assert log.stats.sig_counts["dp-numa-sysfs-benign"] == 10
    assert log.stats.lines > 15  # each long line is several


LINE_BYTES = st.lists(
    st.sampled_from([b"I", b"E", b"W", b"F", b"0", b"8", b"1", b" ", b"x", b"\r", b"\xff", b"\n"]),
    max_size=60,
)


def test_an_ending_a_few_lines_hold_is_kept_so_two_slices_of_a_log_cut_alike():
    """The database is compiled once per set of cuts: an ending on one line in a few hundred is
    as good as absent, so a log's slice with one more such line cuts its literals alike."""
    periodic = b"I0815 10:00:00.000004  1 plugin.go:9] Device info unchanged, skipping update\n"
    one_slice = periodic * 300
    another = one_slice + b"E0815 10:00:00.000005  1 x.go:1] parse err: once\n"
    literal = "nvml GetDeviceCount err:"
    assert bytescan.rare_endings([literal], one_slice) == [literal]
    assert bytescan.rare_endings([literal], another) == [literal]


@settings(max_examples=200, deadline=None)
@given(parts=LINE_BYTES, block=st.sampled_from([1, 7, 64, 4096]), lines=st.integers(1, 80))
def test_the_line_table_classes_lines_as_the_klog_regex_does(parts, block, lines):
    """numpy's count of lines, klog lines, severities and line numbers against Python's regex
    over the same bytes (a chunk always ends with a newline), added in blocks of whole lines of
    any size, their newlines found in pieces of any size."""
    chunk = b"".join(parts) + b"\n"
    table = bytescan.LineTable(chunk, bytescan.np.empty(block, bool))
    blocks = list(bytescan.line_blocks(chunk, lines))
    assert blocks[0][0] == 0 and blocks[-1][1] == len(chunk)
    assert all(a < b and chunk[b - 1] == 10 for a, b in blocks)
    assert all(b == a2 for (_, b), (a2, _) in itertools.pairwise(blocks))
    for a, b in blocks:
        table.add(a, b)
    starts = [0] + [i + 1 for i, b in enumerate(chunk[:-1]) if b == 10]
    klog = re.compile(logs_mod.KLOG_START.encode())
    heads = [chunk[s] for s in starts if klog.match(chunk, s)]
    assert table.lines == chunk.count(b"\n") == len(starts)
    assert table.klog_lines == len(heads)
    assert table.severities == {x: heads.count(ord(x)) for x in "EWF"}
    errors = [s for s in starts if klog.match(chunk, s) and chunk[s] in b"EF"]
    assert table.error_starts(len(errors) + 1) == errors
    assert table.numbers(starts) == {s: chunk.count(b"\n", 0, s) for s in starts}


GO_FRAME = (
    r"^(?P<pkg>[A-Za-z0-9_.~-]+(?:/[A-Za-z0-9_.~-]+)+)\.(?:\(\*?[^)\s]+\)\.)?[^\s(]+\("
    r"|^\s+(?P<path>/[^\s:]+\.go):\d+"
)


@pytest.mark.parametrize(
    ("pattern", "superset"),
    [
        (GO_FRAME, r"^(?:[A-Za-z0-9_\.\~\-]+/|[\s]+/)"),
        (r"err(?:or)?: \d+ devices? (lost|gone)", r"err(?:or)?:\ [\d]+\ "),
        (r"x(?:a|b+c)d", r"x(?:ad|b+c)"),
        (r"^panic: .*", None),  # nothing after the unbounded repeat: nothing cut
        (r"(?i)^\s+x", None),  # flags: not written back
    ],
)
def test_a_pattern_without_literal_is_scanned_for_its_leading_part(pattern, superset):
    assert leading_superset(pattern) == superset


ATOMS = [r"[A-Za-z0-9_.~-]+", r"\d", r"\d{4}", "[IWEF]", "I", " ", "/", r"\s+", "[^ ]", ".", "x?"]


@st.composite
def anchored_patterns(draw) -> str:
    """Alternatives of atoms, each after `^` (or not, now and then)."""
    ways = draw(st.lists(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=7), min_size=1))
    anchor = draw(st.sampled_from(["^", "^", ""]))
    return "|".join(anchor + "".join(way) for way in ways)


@settings(max_examples=400, deadline=None)
@given(
    pattern=anchored_patterns(),
    header=st.from_regex(logs_mod.KLOG_START, fullmatch=True),
    rest=st.text(alphabet="IWE0123456789 /.:_-~abx\t", max_size=20),
)
def test_a_pattern_said_to_miss_klog_lines_matches_none(pattern, header, rest):
    """`misses_lines_starting` is what lets the byte scan look for a prefilter in a klog log's
    other lines only: no line starting with a klog header may hold a match."""
    if misses_lines_starting(pattern, KLOG_HEADER):
        assert re.search(pattern, header + rest, re.MULTILINE) is None


def test_a_stack_trace_in_a_klog_log_is_found_on_its_few_lines(ruleset, monkeypatch):
    """A prefilter no klog line matches (the Go frame's) runs on the other lines of a block,
    copied together where they are few: the same rows as the line reader's."""
    assert misses_lines_starting(leading_superset(GO_FRAME), KLOG_HEADER)
    klog = [VOCABULARY[0], VOCABULARY[2], VOCABULARY[6], VOCABULARY[4]] * 60
    trace = VOCABULARY[11:15]  # "", goroutine 1 [running]:, a frame, its file
    content = _log(klog + trace + klog, 3)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 64 << 10)
    assert _taken(used) == [True]
    _same(by_bytes, by_lines)
    assert by_bytes.stats.sig_counts["go-stack-frame"] == 6


@settings(max_examples=300, deadline=None)
@given(
    line=st.text(alphabet="ab/._(): \t0123456789gox*", max_size=40),
    pattern=st.sampled_from(
        [GO_FRAME, r"a+b\d", r"(?:ab|b+o)+x", r"^\s*a.*b", r"(a|b)*c?d+:", r"[^a:]+\.go"]
    ),
)
def test_every_match_of_a_pattern_starts_with_a_match_of_its_leading_part(line, pattern):
    superset = leading_superset(pattern)
    if superset is not None and re.search(pattern, line):
        assert re.search(superset, line)


def test_compiled_databases_are_kept_between_runs_and_a_damaged_one_is_compiled_again(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    compiles = []
    real = hsdb.compile_database

    def counting(expressions, flags):
        compiles.append(expressions)
        return real(expressions, flags)

    monkeypatch.setattr(hsdb, "compile_database", counting)

    def found(database) -> list[int]:
        ends: list[list[int]] = [[]]
        hsdb.Scanner(database).scan(b"x numa y numa\n", ends)
        return ends[0]

    first = hsdb.cached_database(["numa"], [0], "test")
    again = hsdb.cached_database(["numa"], [0], "test")
    assert len(compiles) == 1 and found(first) == found(again) == [6, 13]
    (saved,) = (tmp_path / "hami-bundle-analyzer" / "hyperscan").glob("test-*.db")
    data = saved.read_bytes()
    saved.write_bytes(data[:40] + bytes(255 - b for b in data[40:60]) + data[60:])
    assert found(hsdb.cached_database(["numa"], [0], "test")) == [6, 13]
    assert len(compiles) == 2


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.integers(0, 40), max_size=60),
    chunk=st.integers(1, 64),
    cap=st.integers(1, 32),
    final_newline=st.booleans(),
)
def test_the_chunks_tile_the_file_and_end_at_line_ends(
    tmp_path_factory, lines, chunk, cap, final_newline
):
    """Each chunk ends where a line does, or at the file's end, or where an overlong line is cut
    at the cap; together they are the file, in order."""
    content = b"\n".join(b"x" * n for n in lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("ranges") / "log"
    path.write_bytes(content)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bigscan, "CHUNK_BYTES", chunk)
        patch.setattr(bigscan, "LINE_CAP", cap)
        ranges = list(bigscan._ranges(path))
    edges = [0, *(end for _, end in ranges)]
    assert ranges == list(itertools.pairwise(edges)) and edges[-1] == len(content)
    for start, end in ranges:
        assert start < end
        piece = content[start:end]
        if end < len(content) and not piece.endswith(b"\n"):
            assert end - start == chunk + cap  # cut at the cap: no newline after the chunk
            assert b"\n" not in content[start + chunk - 1 : end]
        buffer = bytearray(b"left over from another chunk" * 3)
        bytescan._read_range(str(path), start, end, buffer)
        assert buffer == piece + (b"" if piece.endswith(b"\n") else b"\n")


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.integers(0, 9000), min_size=1, max_size=12), final_newline=st.booleans())
def test_a_range_of_whole_lines_is_mapped_from_its_page_and_any_other_is_read(
    tmp_path_factory, lines, final_newline
):
    """A scan process maps a chunk from the page its first byte is on: the map holds the chunk
    at `origin`, after a newline (its backward searches stop there); a range that does not end
    with a newline or start after one, or that runs past the file's end, is not mapped."""
    content = b"\n".join(b"x" * n for n in lines) + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("maps") / "log"
    path.write_bytes(content)
    starts = [0, *(k + 1 for k, byte in enumerate(content) if byte == 10)]
    for start, end in itertools.pairwise(starts):
        mapped = bytescan.mapped_range(str(path), start, end)
        assert mapped is not None
        chunk, origin = mapped
        assert chunk[origin:] == content[start:end] and (origin == 0 or chunk[origin - 1] == 10)
        assert (start - origin) % mmap.ALLOCATIONGRANULARITY == 0
        chunk.close()
    if not final_newline:  # the last line, without its newline
        assert bytescan.mapped_range(str(path), starts[-1], len(content)) is None
    if len(content) > 2 and content[1] != 10:  # a start inside a line
        assert bytescan.mapped_range(str(path), 1, starts[1] if len(starts) > 1 else 2) is None
    assert bytescan.mapped_range(str(path), 0, len(content) + 1) is None


@settings(max_examples=150, deadline=None)
@given(
    haystack=st.text(alphabet='ab\n"f', max_size=400).map(str.encode) | st.binary(max_size=400),
    needle=st.sampled_from([b"a", b"aa", b"aba", b"\n", b'"f', NUMA.encode()])
    | st.binary(min_size=1, max_size=3),
    cut=st.tuples(st.integers(0, 400), st.integers(0, 400)),
    simd=st.booleans(),
)
@example(haystack=b"baaaab", needle=b"aa", cut=(0, 6), simd=True)  # overlapping: twice, not 3
@example(haystack=b"xaby", needle=b"ab", cut=(0, 2), simd=True)  # across the end: not counted
@example(haystack=b"xaby", needle=b"ab", cut=(2, 4), simd=True)  # across the start: neither
def test_a_text_is_counted_as_bytes_count_counts_it_in_every_kind_of_chunk(
    tmp_path_factory, haystack, needle, cut, simd
):
    """`count` (StringZilla's search, or the copy's `bytes.count` without it) gives what
    `bytes.count` gives on the slice, overlapping texts included (`aa` in `aaa` once), in a
    chunk read, in a buffer and in a map; the map can be closed after it (no view is left)."""
    start, end = min(cut), max(cut)
    want = haystack[start:end].count(needle)
    path = tmp_path_factory.mktemp("counts") / "log"
    path.write_bytes(haystack or b"\n")
    with pytest.MonkeyPatch.context() as patch:
        if not simd:
            patch.setattr(bytescan, "stringzilla", None)
        assert bytescan.count(haystack, needle, start, end) == want
        assert bytescan.count(bytearray(haystack), needle, start, end) == want
        if haystack:
            with path.open("rb") as fh:
                chunk = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
            assert bytescan.count(chunk, needle, start, end) == want
            chunk.close()


def test_stringzilla_counts_where_the_suite_runs():
    """The SIMD count is what the byte scan uses where its wheel installs (pyproject lists it):
    the fallback alone would leave the property above comparing `bytes.count` with itself."""
    assert bytescan.stringzilla is not None


@pytest.mark.skipif(sys.platform != "linux", reason="scan processes are forked on Linux only")
def test_a_log_cut_short_under_a_scan_process_leaves_the_scan_to_threads_that_read(
    ruleset, monkeypatch, tmp_path
):
    """A log truncated while a scan process maps it (logrotate's copytruncate): the process
    that reads the lost pages dies (SIGBUS), leaving no core file where the user is (core files
    allowed here, in a folder of the test's own), and the command goes on in threads, which read
    what is left and never map (the map's SIGBUS would end the command)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    monkeypatch.chdir(tmp_path)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    try:
        _cut_short(ruleset, monkeypatch)
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))
    assert not list(tmp_path.glob("core*"))


def _cut_short(ruleset, monkeypatch) -> None:
    content = _log(VOCABULARY, 60)
    whole = _scan_log(ruleset, monkeypatch, content).stats.lines
    parent, real = os.getpid(), bytescan.mapped_range
    mapped_here = []

    def truncated_once_mapped(path, start, end):
        mapped = real(path, start, end)
        if os.getpid() == parent:
            mapped_here.append(start)
        elif mapped is not None and start > 0:
            os.truncate(path, start - mapped[1])  # the map's first page and all after it gone
        return mapped

    monkeypatch.setattr(bytescan, "mapped_range", truncated_once_mapped)
    cut = _scan_log(ruleset, monkeypatch, content)
    assert 0 < cut.stats.lines < whole
    assert mapped_here == []


def _scan_log(ruleset, monkeypatch, content: bytes):
    with monkeypatch.context() as patch:
        patch.setattr(recognise_mod, "SMALL_FILE", 1)
        patch.setattr(bigscan, "CHUNK_BYTES", 4 << 10)
        return parse_texts(ruleset, {"device-plugin.log": content}).logs[0]


def test_the_chunks_are_scanned_in_processes_and_threads_alike(ruleset, monkeypatch):
    """Forked scan processes (Linux) and threads (elsewhere, in a batch worker, or where
    processes cannot start) read the same."""
    content = _log(VOCABULARY, 60)
    started = []
    real = workers.fork_pool
    monkeypatch.setattr(workers, "fork_pool", lambda *a: started.append(real(*a)) or started[-1])
    in_processes = _scan_log(ruleset, monkeypatch, content)
    if sys.platform == "linux":
        assert started and started[0] is not None
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _no_semaphores)
    in_threads = _scan_log(ruleset, monkeypatch, content)
    assert workers.fork_pool(None, 2) is None
    _same(in_processes, in_threads)


def test_the_plan_goes_with_its_sample_until_a_scan_process_has_cut_its_literals(
    ruleset, monkeypatch
):
    """The log's first lines go with the plan only until a scan process has cut the literals
    in them; later chunks get the cut literals instead, and a process that meets the plan
    first in that form builds the same databases: the reading is the line reader's."""
    sent = []
    real = workers.Workers.submit

    def spy(self, plan, *args):
        sent.append(plan)
        return real(self, plan, *args)

    monkeypatch.setattr(workers.Workers, "submit", spy)
    content = _log(VOCABULARY, 60)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 4 << 10)
    _same(by_bytes, by_lines)
    assert _taken(used) == [True] and len(sent) > 10
    first, last = sent[0], sent[-1]
    assert first.sample and first.cut is None
    assert not last.sample and last.cut is not None and last.key == first.key
    assert len({plan.key for plan in sent}) == 1
    # the cut is the literals' rarest endings in the sample, as a process that had it made them
    assert list(last.cut) == sorted(set(bytescan.rare_endings(list(first.literals), first.sample)))
    # a process that meets the plan first in either form builds its databases of the same
    # literals, and finds the same in a chunk
    built = []
    databases = hsdb.ScanPlan.databases
    monkeypatch.setattr(
        hsdb.ScanPlan, "databases", lambda plan, x: built.append(list(x)) or databases(plan, x)
    )
    heads = dict.fromkeys([s for s, _ in (*first.reported, *first.tallied, *first.counted)], 5)
    found = []
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(content)
        fh.flush()
        for plan in (first, last):
            bytescan._SCANNERS.clear()  # a process that has not met the plan
            found.append(bytescan.scan_chunk(plan, fh.name, 0, len(content), heads, 10, 100))
    bytescan._SCANNERS.clear()
    assert built == [list(last.cut)] * 2
    assert found[0].cut == last.cut and found[1].cut is None  # sent back where it was not given
    assert dataclasses.replace(found[0], cut=None) == found[1]


def _no_semaphores(*args, **kwargs):
    raise OSError(38, "Function not implemented")  # a container without /dev/shm


@pytest.mark.skipif(sys.platform != "linux", reason="scan processes are forked on Linux only")
def test_a_scan_process_that_dies_leaves_its_chunks_to_threads(ruleset, monkeypatch):
    """The out-of-memory killer takes a scan process: the scan goes on in threads, the same."""
    content = _log(VOCABULARY, 60)
    expected = _scan_log(ruleset, monkeypatch, content)
    parent, real = os.getpid(), bytescan.scan_chunk

    def dies_in_a_child(plan, path, start, *args):
        if os.getpid() != parent and start > 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(plan, path, start, *args)

    monkeypatch.setattr(bytescan, "scan_chunk", dies_in_a_child)
    _same(_scan_log(ruleset, monkeypatch, content), expected)


def test_a_line_holding_a_literal_only_through_a_character_folding_to_ascii_is_a_candidate(
    ruleset, monkeypatch
):
    """The literals shorter than SHORT_ALONE (LONG S, CAPITAL I WITH DOT: two bytes each) are
    looked for by a database of their own; a line that a case-insensitive signature matches only
    through one of them is found as the line reader finds it (once, past the log's head: not a
    hot signature)."""
    folded = "I0815 10:00:00.000013  1 x.go:1] conflict: the name\u017fpaceSelector is managed by"
    content = _log(VOCABULARY, 40) + (folded + "\n").encode() + _log(VOCABULARY, 40)
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 4 << 10)
    assert _taken(used) == [True] and used[0].short
    _same(by_bytes, by_lines)
    assert by_bytes.stats.sig_counts["txt-namespace-selector-conflict"] == 1


# a literal the head holds the ending of on most lines ("err:"), a decoy holding its every start
CUT_LITERAL = "nvml GetDeviceCount err:"
NOISY = [f"E0815 10:00:00.0000{i:02d}  1 x.go:1] parse err: bad value {i}" for i in range(90)]
DECOY = "I0815 10:00:00.000030  1 x.go:1] nvml GetDeviceCount errXYZ holds its every start"
FOUND = f"E0815 10:00:00.000031  1 metrics.go:226] Failed to collect GPU info: {CUT_LITERAL} 999"


def _spied(monkeypatch, module, name: str, keep) -> list:
    """What `keep` makes of each call of module.name (its arguments, its result), in order."""
    seen: list = []
    real = getattr(module, name)

    def spy(*args):
        result = real(*args)
        seen.append(keep(args, result))
        return result

    monkeypatch.setattr(module, name, spy)
    return seen


def test_a_literal_is_looked_for_up_to_its_ending_rarest_in_the_head_and_checked_whole(
    ruleset, monkeypatch
):
    """Hyperscan's literal matcher costs per place where a literal's last bytes are; the scan
    looks for each literal up to its ending the log's head holds least (here "err:" is on most
    lines). A line holding that start but not the literal is a candidate that no signature
    takes: the counts and rows are the line reader's."""
    literal, noisy, decoy, found = CUT_LITERAL, NOISY, DECOY, FOUND
    cuts = _spied(monkeypatch, bytescan, "rare_endings", lambda _, cut: cut)
    monkeypatch.setattr(workers, "fork_pool", lambda *a: None)  # the cuts are made here
    # the decoy on 3 of the head's ~740 lines: under RARE_SHARE, its start as good as absent
    content = (
        _log(noisy + VOCABULARY, 1)
        + _log(VOCABULARY, 27)
        + _log([decoy, *VOCABULARY], 3)
        + _log([found], 3)
    )
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 4 << 10)
    assert _taken(used) == [True]
    starts = [x for x in cuts[0] if literal.startswith(x)]  # what the database looked for
    assert starts and all(x != literal and x in decoy for x in starts)
    _same(by_bytes, by_lines)
    # the lines holding the whole literal, and only those
    assert by_bytes.stats.sig_counts["hami-vgpu-monitor-nvml-error"] == 3


def test_a_literal_whose_start_is_common_in_the_head_is_looked_for_whole(ruleset, monkeypatch):
    """A start cut at the ending the head holds least may be common itself (`fail` of `failed
    to ...` on a plugin's every `"failOnInitError": false` line): every line holding it would
    be a candidate that no signature takes (140,000 of a 268 MB CRI log's). Where the head holds
    the start on more than RARE_SHARE of its lines and more often than the literal, the literal
    is looked for whole: no decoy is a candidate, and the counts are the line reader's."""
    literal, noisy, decoy, found = CUT_LITERAL, NOISY, DECOY, FOUND
    cuts = _spied(monkeypatch, bytescan, "rare_endings", lambda _, cut: cut)
    monkeypatch.setattr(workers, "fork_pool", lambda *a: None)  # the cuts are made here
    # the decoy on 30 of the head's ~740 lines
    content = _log(noisy + VOCABULARY, 1) + _log([decoy, *VOCABULARY], 30) + _log([found], 3)
    handed = _spied(monkeypatch, bigscan._Candidates, "add", lambda args, _: args[2])  # texts
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, content, 4 << 10)
    assert _taken(used) == [True]
    assert [x for x in cuts[0] if literal.startswith(x)] == [literal]
    assert not [x for texts in handed for x in texts if "errXYZ" in x]
    _same(by_bytes, by_lines)
    assert by_bytes.stats.sig_counts["hami-vgpu-monitor-nvml-error"] == 3


def test_a_cut_start_on_every_line_of_a_later_loop_has_its_literals_looked_for_whole(
    ruleset, monkeypatch
):
    """The head says where to cut a literal; a loop starting later may hold that start on every
    line and no literal (a plugin's config dump, each restart): no signature is frequent among
    the candidates, so no hot one helps. The chunk asks for a plan that looks for the literals
    that start whole: no line of the loop is a candidate from then on (that chunk and those
    under way scanned again), and the counts and rows are the line reader's."""
    literal, noisy, decoy, found = CUT_LITERAL, NOISY, DECOY, FOUND
    head = _log(noisy + VOCABULARY, 1)
    monkeypatch.setattr(logs_mod, "PROFILE_BYTES", len(head))  # the head sees no loop
    monkeypatch.setattr(bigscan, "REPLAN_MIN", 20)
    content = head + _log([decoy, decoy, VOCABULARY[2]], 400) + _log([found], 3)
    handed = _spied(monkeypatch, bigscan._Candidates, "add", lambda args, _: args[2])  # texts
    scanned = _spied(monkeypatch, bytescan, "scan_chunk", lambda args, _: args[0])
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _no_semaphores)  # threads: seen here
    by_bytes, by_lines, _ = _scan_both(ruleset, monkeypatch, content, 8 << 10)
    plans = list({plan.key: plan for plan in scanned}.values())
    assert len(plans) == 2 and plans[0].reported == plans[1].reported  # no hot signature more
    cut = [x for x in plans[1].cut if literal.startswith(x)]
    assert literal in cut and not [x for x in cut if x in decoy]
    assert not [x for texts in handed for x in texts if "errXYZ" in x]
    _same(by_bytes, by_lines)
    assert by_bytes.stats.sig_counts["hami-vgpu-monitor-nvml-error"] == 3


def test_candidates_that_are_hits_of_several_signatures_ask_for_no_plan(ruleset, monkeypatch):
    """Chunks whose candidates are many (3 % of their lines) but each signature's hits few (1 %
    each: none is hot), and all of them real: they hold a literal's cut start, but the literal
    too, so looking for it whole would take none out. No plan is asked for: each chunk is
    scanned once (a replan scans the chunks under way again)."""
    noisy, found = NOISY, FOUND
    third = "E0815 10:00:00.000032  1 x.go:1] Failed to initialize NVML: Unknown Error"
    filler = [f"I0815 10:00:00.000099  1 x.go:1] all good here {i}" for i in range(117)]
    head = _log(noisy + VOCABULARY, 1)
    content = head + _log([*filler, VOCABULARY[4], third, found], 150)
    monkeypatch.setattr(logs_mod, "PROFILE_BYTES", len(head))  # the head sees none of them
    monkeypatch.setattr(bigscan, "REPLAN_MIN", 20)
    scanned = _spied(monkeypatch, bytescan, "scan_chunk", lambda args, _: args[0].key)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _no_semaphores)  # threads: seen here
    by_bytes, by_lines, _ = _scan_both(ruleset, monkeypatch, content, 64 << 10)
    assert len(set(scanned)) == 1 and len(scanned) == len(_chunks(content, 64 << 10))
    assert by_lines.stats.sig_counts["hami-vgpu-monitor-nvml-error"] == 150
    _same(by_bytes, by_lines)


@settings(max_examples=200, deadline=None)
@example(literals=["ababa"], sample="abab\n" * 10 + " baba" * 20)  # a common start: whole
@given(
    literals=st.lists(st.text(alphabet="ab:é中 ", min_size=1, max_size=12), max_size=6),
    # up to ~500 lines: an ending held a few times may be rare enough (RARE_SHARE)
    sample=st.tuples(st.text(alphabet="ab:é中 \n", max_size=200), st.integers(0, 500)).map(
        lambda text_and_lines: text_and_lines[0] + "\n" * text_and_lines[1]
    ),
)
def test_a_literal_is_cut_at_its_longest_rare_ending(literals, sample):
    """Each literal becomes its longest start, cut between characters and at least
    MIN_LITERAL bytes, whose last RARE_END bytes the sample holds at most once in a hundred
    lines (RARE_SHARE; else the longest it holds least), unless the sample holds that start
    itself more often than that and than the literal (it stays whole); a literal too short to
    cut stays whole."""
    data = sample.encode()
    n = bytescan.RARE_END
    rare = bytescan.RARE_SHARE * (data.count(b"\n") + 1)

    def held(b: bytes) -> int:
        count = sum(data[i : i + n] == b for i in range(len(data)))
        return 0 if count <= rare else count

    for literal, cut in zip(literals, bytescan.rare_endings(literals, data), strict=True):
        whole = literal.encode()
        starts = [
            literal[:k].encode()
            for k in range(1, len(literal) + 1)
            if len(literal[:k].encode()) >= bytescan.MIN_LITERAL
        ]
        if not starts or len(data) < n:
            assert cut == literal
            continue
        fewest = min(held(s[-n:]) for s in starts)
        chosen = max((s for s in starts if held(s[-n:]) == fewest), key=len)
        if data.count(chosen) > max(rare, data.count(whole)):  # a common start: whole
            assert cut == literal
        else:
            assert cut.encode() == chosen


def _loop(n: int, kinds: int = 4, unique_from: int | None = None) -> bytes:
    """A device plugin in a loop: each round re-patches its node, answers an allocation (an error
    line), logs the benign numa error and its version, the same lines but for their clocks and
    counts (the first `kinds` of these lines a round); from line `unique_from` on, each line also
    names a device of its own (the log stops repeating)."""
    out = []
    for i in range(n):
        clock = f"10:{i // 6000 % 60:02d}:{i // 100 % 60:02d}.{i * 37 % 1000000:06d}"
        own = (
            f" dev-{format(i * 2654435761 % (1 << 32), 'x')}z"
            if unique_from and i >= unique_from
            else ""
        )
        round_ = [
            f"I0815 {clock}  412873 register.go:302] Updating node annotations with {i % 9} device(s){own}",
            f'E0815 {clock}  {i % 77} plugin.go:1] "Allocate" request=&AllocateRequest{{{i}}}{own}',
            f"E0815 {clock}  412873 register.go:168] {NUMA} idx={i % 8}{own}",
            f"I0815 {clock}  1 notes.go:1] running HAMI V2.7.{i % 3} on this node{own}",
        ]
        out += round_[:kinds]
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("chunk", [4 << 10, 64 << 10])
def test_a_log_in_a_loop_is_tallied_by_its_distinct_lines_as_the_line_reader_counts(
    ruleset, monkeypatch, chunk
):
    """Hot signatures whose regex cannot tell digits apart, in a log that repeats itself but for
    its numbers: each chunk's lines counted by their distinct digit-blind texts (no line
    reported); a hot signature with a digit in its regex (the HAMi version) is still reported.
    The counts, the kept rows (first and last lines of each) and the loose errors are the line
    reader's."""
    tallies = []
    real = tally_mod.tally
    monkeypatch.setattr(bytescan, "tally", lambda *a: tallies.append(real(*a)) or tallies[-1])
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _no_semaphores)  # threads: seen here
    by_bytes, by_lines, (scan,) = _scan_both(ruleset, monkeypatch, _loop(3000), chunk)
    assert tallies and None not in tallies  # every chunk tallied
    tallied = {sid for sid, _ in scan.plan.tallied}
    assert {"dp-annotation-updated", "hami-device-plugin-allocate-request"} <= tallied
    assert "txt-hami-version" in scan.reported and "txt-hami-version" not in tallied
    assert by_bytes.stats.sig_counts["dp-annotation-updated"] == 3000
    _same(by_bytes, by_lines)


def test_a_chunk_that_stops_repeating_itself_reports_its_lines_of_the_tallied_signatures(
    ruleset, monkeypatch
):
    """The plan tallies (the log's head is a loop), but later chunks hold a different device
    name on each line: those chunks are not tallied, their lines of the tallied signatures are
    reported one by one, and the whole log still reads as the line reader reads it."""
    tallies = []
    real = tally_mod.tally
    monkeypatch.setattr(bytescan, "tally", lambda *a: tallies.append(real(*a)) or tallies[-1])
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _no_semaphores)  # threads: seen here
    by_bytes, by_lines, (scan,) = _scan_both(
        ruleset, monkeypatch, _loop(3000, unique_from=1500), 16 << 10
    )
    assert scan.plan.tallied
    assert None in tallies and any(t is not None for t in tallies)
    _same(by_bytes, by_lines)


@pytest.mark.parametrize("mapped", [False, True])
@pytest.mark.parametrize("simd", [True, False])
def test_a_tallied_chunk_is_what_the_same_chunk_reported_line_by_line_is(
    ruleset, monkeypatch, mapped, simd
):
    """The same chunk scanned by one plan with its hot signatures tallied and by that plan with
    them reported: the same counts, first and last lines, candidates and loose lines. Read, and
    mapped as a scan process maps it: from the page before its first line, which the tally
    must not read (lines of the chunk before); made blind to digits by StringZilla, and
    without it."""
    if not simd:
        monkeypatch.setattr(tally_mod, "stringzilla", None)
    head = _log([VOCABULARY[7]], 3)
    content = head + _loop(2000) + _log([VOCABULARY[7]], 3)
    plans = []
    real = scanplan.byte_scan
    monkeypatch.setattr(
        scanplan, "byte_scan", lambda *a, **k: plans.append(real(*a, **k)) or plans[-1]
    )
    monkeypatch.setattr(scanplan, "TALLIED_SHARE", 0.3)  # a few unmatched errors among them
    with monkeypatch.context() as patch:  # the plan, made as a big log's
        patch.setattr(recognise_mod, "SMALL_FILE", 1)
        parse_texts(ruleset, {"device-plugin.log": content})
    plan = plans[-1].plan
    assert plan.tallied
    reported = dataclasses.replace(
        plan, reported=plan.reported + plan.tallied, tallied=(), key=plan.key + "-reported"
    )
    maps, tallies = [], []
    real_map, real_tally = bytescan.mapped_range, tally_mod.tally
    monkeypatch.setattr(bytescan, "_MAPS", [mapped])
    monkeypatch.setattr(bytescan, "mapped_range", lambda *a: maps.append(real_map(*a)) or maps[-1])
    monkeypatch.setattr(bytescan, "tally", lambda *a: tallies.append(real_tally(*a)) or tallies[-1])
    start = len(head) - len(head.splitlines(keepends=True)[-1])  # the head's last line on
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(content)
        fh.flush()
        heads = dict.fromkeys([s for s, _ in (*plan.reported, *plan.tallied, *plan.counted)], 5)
        a = bytescan.scan_chunk(plan, fh.name, start, len(content), heads, 10, 100)
        b = bytescan.scan_chunk(reported, fh.name, start, len(content), heads, 10, 100)
    assert len(tallies) == 1 and tallies[0] is not None
    if mapped:
        assert [m is not None and m[1] == start for m in maps] == [True, True]
    assert sorted(a.hot) == sorted(b.hot)
    assert (a.lines, a.klog_lines, a.severities) == (b.lines, b.klog_lines, b.severities)
    assert (a.loose, a.candidates) == (b.loose, b.candidates)
    assert any(n == 2000 for _sid, _first, _last, n in a.hot)


@pytest.mark.parametrize(
    ("pattern", "blind"),
    [
        (r"Updating node annotations with (?P<n>\d+) device\(s\)", True),
        (r"[^\s\]]+ \S+ \w+\b.*$", True),
        (r"[0-9a-f]{8}-[0-9A-F]+", True),
        (r"(?i)hami\b.{0,24}?v?(?P<v>2\.\d{1,2})", False),  # a digit written
        (r"[3-9]\d\d", False),  # a class of some digits only
        (r"[\D0]", False),
        (r"(\w+) \1", False),  # a back-reference compares what was taken
        (r"(?(1)a|b)", False),
        (r"\p{L}+", False),  # not read by Python's parser: not known, so not blind
    ],
)
def test_a_regex_is_digit_blind_when_no_digit_and_no_class_of_some_digits_is_in_it(pattern, blind):
    assert literals.digit_blind(pattern) is blind
    if blind:  # what it says of the regex holds of texts: a match, and the digits made 0
        for text in (
            "Updating node annotations with 12 device(s)",
            "x ab1 c7_9 9",
            "deadbeef-12AF",
        ):
            blinded = text.translate(str.maketrans("0123456789", "0" * 10))
            assert (re.search(pattern, text) is None) == (re.search(pattern, blinded) is None)


LOOP_LINES = [  # a loop's lines, a `{}` where their numbers change
    "I0815 10:00:{}.000001  412873 register.go:302] Updating node annotations with {} device(s)",
    'E0815 10:00:{}.000002  {} plugin.go:1] "Allocate" request=&AllocateRequest{{}}',
    "I0815 10:00:{}.000003  1 plugin.go:1] Allocate pod name is ns-{}/pod-{}, devices x",
    f"E0815 10:00:{{}}.000004  412873 register.go:168] {NUMA} idx={{}}",
    "I0815 10:00:{}.000005  1 notes.go:1] running HAMI V2.7.{} on this node",
    "E0815 10:00:{}.000006  412873 other.go:1] unmatched error {}",
    "plain text {} without a header",
    "",
]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    picks=st.lists(
        st.tuples(st.integers(0, len(LOOP_LINES) - 1), st.integers(0, 10**6)),
        min_size=1,
        max_size=60,
    ),
    repeat=st.integers(5, 40),
    chunk=st.sampled_from([512, 4 << 10, 32 << 10]),
)
def test_any_loop_reads_the_same_tallied_as_by_the_line_reader(
    ruleset, monkeypatch, picks, repeat, chunk
):
    """A loop of any of these lines, each time with other numbers: tallied wherever its head
    repeats itself (the other thresholds lowered), it reads as the line reader reads it."""
    monkeypatch.setattr(scanplan, "TALLIED_SHARE", 0.01)
    monkeypatch.setattr(scanplan, "TALLIED_EVERY", 1 << 20)
    monkeypatch.setattr(scanplan, "TALLIED_MIN_LINES", 20)
    head = [LOOP_LINES[0].format(0, 2), LOOP_LINES[1].format(0, 1)]  # a device plugin's log
    rounds = [[(0, 0), *picks]] * repeat  # each round re-patches the node (a tallied signature)
    lines = [
        LOOP_LINES[k].format(*[(n + r) % (7 + k) for _ in range(3)])
        for r, round_ in enumerate(rounds)
        for k, n in round_
    ]
    by_bytes, by_lines, used = _scan_both(ruleset, monkeypatch, _log(head + lines, 1), chunk)
    assert _taken(used) == [True]
    _same(by_bytes, by_lines)


def _table(chunk: bytes) -> bytescan.LineTable:
    table = bytescan.LineTable(chunk)
    table.add(0, len(chunk))
    return table


def _counters(ruleset, sids: list[str]) -> hsdb.Scanner:
    counters = [hsdb.line_counter(ruleset.signatures[sid].pattern) for sid in sids]
    return hsdb.Scanner(hsdb.database(counters, [hsdb.hyperscan.HS_FLAG_MULTILINE] * len(sids)))


def test_a_chunk_of_another_loop_is_not_tallied_and_rare_lines_are_found_at_both_ends(ruleset):
    """A chunk that repeats itself but holds the tallied signatures on few of its lines is not
    tallied (the reports cost less). Where they are on many, the first and last lines of each,
    among them a few lines far apart that each appear once, are those one pass in order finds."""
    sids = ["dp-annotation-updated", "hami-device-plugin-allocate-request"]
    scanner = _counters(ruleset, sids)
    other = _log([VOCABULARY[7], VOCABULARY[6], VOCABULARY[7]], 400)  # a loop of other lines
    assert tally_mod.tally(scanner, other, [5, 5], 5, 0, _table(other)) is None
    lines = _loop(600, kinds=2).decode().splitlines()
    for k, at in enumerate((3, 450, 900, 1190)):  # four allocations, each a line of its own
        lines.insert(at, f"I0815 10:00:00.1  1 plugin.go:1] Allocate pod name is ns/{'abcd'[k]}x")
    chunk = ("\n".join(lines) + "\n").encode()
    got = tally_mod.tally(scanner, chunk, [2, 3], 3, 0, _table(chunk))
    assert got is not None
    starts = [0, *itertools.accumulate(len(x) + 1 for x in lines)]
    for i, sid in enumerate(sids):
        pattern = re.compile(ruleset.signatures[sid].pattern)
        mine = [starts[k] for k, line in enumerate(lines) if pattern.search(line)]
        assert got.counts[i] == len(mine)
        assert got.firsts[i] == mine[: [2, 3][i]] and got.lasts[i] == mine[-3:]


ODD_LINES = {  # lines a loop's chunk may hold now and then
    "allocation": "I0815 10:00:00.1  1 plugin.go:1] Allocate pod name is ns/{}x",  # tallied
    "plain": "plain text {} without a header",
    "empty": "",
}


# what the examples below share: a loop of one line in a chunk with one line before its origin,
# counted by its lines where it can be
LOOP_EXAMPLE = {
    "kinds": 1,
    "rounds": 50,
    "lead": False,
    "odd": [],
    "before": 1,
    "probed": 20,
    "whole": 8,
    "simd": True,
}


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.integers(1, 4),
    rounds=st.integers(50, 120),
    lead=st.booleans(),
    odd=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(sorted(ODD_LINES))), max_size=4),
    before=st.integers(0, 3),
    probed=st.integers(20, 40),  # rounds: a probe holds a tenth as many distinct lines
    whole=st.sampled_from([0, tally_mod.WHOLE_LINES]),
    simd=st.booleans(),
    heads=st.tuples(st.integers(0, 6), st.integers(0, 6)),
    tail=st.integers(1, 6),
    block=st.sampled_from([256, 4 << 10, bytescan.SCAN_BLOCK]),
)
@example(  # a loop of one line, its first line one of them: counted, found from both ends
    **{**LOOP_EXAMPLE, "before": 2, "heads": (6, 6), "tail": 6, "block": 256}
)
@example(  # an allocation first, once: found from the end where no newline is before it
    **{**LOOP_EXAMPLE, "lead": True, "heads": (2, 2), "tail": 3, "block": bytescan.SCAN_BLOCK}
)
@example(  # an allocation first and one after the probe: the lines split and counted
    **{
        **LOOP_EXAMPLE,
        "kinds": 2,
        "rounds": 60,
        "lead": True,
        "odd": [(10**6, "allocation")],
        "heads": (3, 3),
        "tail": 2,
        "block": 4 << 10,
    }
)
def test_a_tallied_chunk_holds_what_its_signatures_regexes_find_line_by_line(
    ruleset, monkeypatch, kinds, rounds, lead, odd, before, probed, whole, simd, heads, tail, block
):
    """A loop's chunk, its lines from `origin` on (lines of the chunk before it ahead, as a map
    holds them; the line table made a block at a time), a few other lines after its probe: each tallied signature's count, first and
    last lines are those its regex finds line by line, whether the chunk's lines are all its
    probe's (counted by them) or not (split and counted), with StringZilla or without."""
    sids = ["dp-annotation-updated", "hami-device-plugin-allocate-request"]
    scanner = _counters(ruleset, sids)
    lines = _loop(rounds, kinds).decode().splitlines()
    for at, kind in odd:  # after the probe's rounds
        where = probed * kinds + at % (len(lines) - probed * kinds + 1)
        lines.insert(where, ODD_LINES[kind].format(f"{at:x}"))
    ahead = lines[:before]  # the chunk before: lines the tally must not count
    if lead:  # a line of its own first: found from the end too, though no newline is before it
        lines.insert(0, ODD_LINES["allocation"].format("lead"))
    text = "".join(line + "\n" for line in ahead + lines).encode()
    origin = sum(len(line) + 1 for line in ahead)
    table = bytescan.LineTable(text)
    for start, end in bytescan.line_blocks(text, block, origin):  # as the scan adds them
        table.add(start, end)
    found, real_found = [], tally_mod._found
    with monkeypatch.context() as patch:  # undone for the next example
        patch.setattr(tally_mod, "PROBE_BYTES", sum(len(x) + 1 for x in lines[: probed * kinds]))
        patch.setattr(tally_mod, "WHOLE_LINES", whole)
        if not simd:
            patch.setattr(tally_mod, "stringzilla", None)
        patch.setattr(tally_mod, "_found", lambda *a: found.append(a) or real_found(*a))
        got = tally_mod.tally(scanner, text, list(heads), tail, origin, table)
    assert got is not None
    probe = {line.translate(tally_mod.BLIND) for line in map(str.encode, lines[: probed * kinds])}
    every = {line.translate(tally_mod.BLIND) for line in map(str.encode, lines)}
    assert bool(found) == (simd and len(probe) <= whole and every <= probe)  # counted by them
    starts = list(itertools.accumulate((len(x) + 1 for x in lines[:-1]), initial=origin))
    for i, sid in enumerate(sids):
        pattern = re.compile(ruleset.signatures[sid].pattern)
        mine = [at for at, line in zip(starts, lines, strict=True) if pattern.search(line)]
        assert got.counts[i] == len(mine)
        assert got.firsts[i] == mine[: heads[i]] and got.lasts[i] == mine[-tail:]
