"""A text dense with a redactor's values, redacted run by run (analyzer/redact/runs.py): the
same bytes, tokens and counts as matching line by line, which every test here compares."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from random import Random
from unittest import mock

import polars as pl
import pytest
import regex
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import analyzer.redact.engine as engine_module
import analyzer.redact.runs as runs_module
from analyzer.redact.engine import Learner, Redaction
from analyzer.redact.redactors import RedactorError, builtin_file, load_redactors, runs_class
from analyzer.redact.runs import anchored, as_column, distinct_runs, rust_class
from analyzer.redact.tokens import TokenMap
from conftest import run_cli

CATALOGUE = load_redactors()
WITH_RUNS = [r for r in CATALOGUE if r.runs is not None]
DECLARED = {
    e["id"]: e["runs"]
    for e in yaml.safe_load(builtin_file().read_text())["redactors"]
    if "runs" in e
}

# pieces of text around the values: the characters a run is made of and those that end one,
# other scripts' digits and letters (which Python's `\d` and `\w` read), and values, kept ones
# too, of each redactor declaring runs
FRAGMENTS = [
    *(x for r in WITH_RUNS for x in (*r.examples_redact, *r.examples_keep)),
    "10.1.2.3", "1.2.3.45", "127.0.0.1", "0.0.0.0", "256.1.1.1", "1.2.3.4.5", "\u0661.\u0662.3.4",
    "harbor.acme.io:5000/a/b:v1", "docker.io/x:1", "10.0.0.7:5000/x@sha256:" + "a" * 64,
    "db01.acme.internal", "ip-10-0-1-2.ec2.internal", "a.corp.example", "x.svc.cluster.local",
    "/", ".", ":", "-", "_", "@", " ", '"', "=", "\t", "é", "\u00a0", "\uff15", "x", "9", "\n",
    # a digit and a letter Python's regex knows and Rust's does not (a newer Unicode)
    "\U00011de7", "\u0558",
]  # fmt: skip


def without_runs(redactors):
    return [replace(r, runs=None) for r in redactors]


@contextmanager
def dense_everywhere():
    """Every selected line counts as dense, and runs always pay: the runs are used even on a
    small text."""
    with (
        mock.patch.object(engine_module, "PLANNED_MAX", 0),
        mock.patch.object(runs_module, "DISTINCT_MAX", 1.0),
    ):
        yield


def pipeline(redactors, text: str) -> tuple[str, dict, Counter, dict]:
    """Both passes over one text: the redacted text, the token map, the counts and the names."""
    learner = Learner(redactors)
    learner.text(text, "t")
    run = Redaction(redactors, learner.names, TokenMap(learner.reserved))
    return run.text(text, "t"), run.tokens.mapping(), run.counts, learner.names


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([r.id for r in WITH_RUNS]),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40),
)
def test_property_a_runs_redactor_redacts_run_by_run_as_line_by_line(rid, fragments):
    """The runs a redactor declares hold every character its matches and look-arounds read: a
    text redacted run by run, each run alone, is the text redacted line by line (the first pass
    reading the runs for the values too)."""
    r = next(x for x in WITH_RUNS if x.id == rid)
    text = "".join(fragments)
    want = pipeline(without_runs([r]), text)
    listed: list[object] = []

    def listing(*args):
        listed.append(found := distinct_runs(*args))
        return found

    with dense_everywhere(), mock.patch.object(engine_module, "distinct_runs", listing):
        got = pipeline([r], text)
    assert got == want, text
    if pl.Series([text]).str.contains(str(r.prefilter))[0]:  # the runs were read, not given up
        assert listed and all(found is not None for found in listed)


def test_the_runs_of_rust_hold_every_character_of_the_declared_class():
    """Rust's class (ASCII as declared, and every other character) holds every character the
    declared class holds in Python's regex: its runs are never cut shorter than Python's."""
    chars = [chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000]
    for rid, declared in DECLARED.items():
        python = regex.compile(declared)
        members = [c for c in chars if python.fullmatch(c)]
        rust = next(r.runs for r in WITH_RUNS if r.id == rid)
        assert pl.Series(members).str.contains(f"^{rust}$").all(), rid


def test_each_declared_runs_class_is_as_written():
    """ipv4 reads a word character or a dot; the registry also a path's `/`, a port's `:` and a
    digest's `@`; a private host name a word character, a dot or a dash."""
    assert DECLARED == {
        "private-registry": r"[\w./@:-]",
        "internal-hostname": r"[\w.-]",
        "ipv4": r"[\w.]",
    }


def dense_log(lines: int, seed: int, distinct: int = 300) -> bytes:
    """A log with an address and an image of a private registry on most lines, names of
    nodes, public images and kept addresses among them."""
    random = Random(seed)
    addresses = [
        f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{k % 250 + 1}"
        for k in range(distinct)
    ]
    hosts = ["harbor.acme.io:5000", "reg.acme.example", "10.0.0.7:5000", "docker.io"]
    out = []
    for i in range(lines):
        pod = f"default/web-{i % 40}"
        kind = random.random()
        if kind < 0.45:
            line = f'I0815 09:00:00.{i:06d} 1 proxier.go:1] "Endpoint" endpoint="{random.choice(addresses)}:8080" pod="{pod}"'
        elif kind < 0.9:
            image = f"{random.choice(hosts)}/team/app{random.randint(0, 30)}:v1.{i % 7}"
            line = f'I0815 09:00:00.{i:06d} 1 kuberuntime.go:2] "Pulling image" image="{image}" pod="{pod}"'
        elif kind < 0.95:
            line = f'I0815 09:00:00.{i:06d} 1 scheduler.go:3] "Bind" nodeName="gpu-node-{i % 3}" via 127.0.0.1'
        else:
            line = (
                f"I0815 09:00:00.{i:06d} 1 x.go:4] lookup db{i % 5}.acme.internal on 10.96.0.10:53"
            )
        out.append(line)
    return ("\n".join(out) + "\n").encode()  # fmt: skip


def both_passes(redactors, raw: bytes, forked: bool = False) -> tuple[bytes, dict, Counter]:
    learner = Learner(redactors)
    lesson = learner.prepare(raw, "t", forked=forked)
    if forked:
        lesson = learner.complete(lesson, raw, "t")
    plan = learner.take(lesson)
    run = Redaction(redactors, learner.names, TokenMap(learner.reserved))
    return run.piece(raw, "t", plan), run.tokens.mapping(), run.counts


@pytest.mark.parametrize("size", [40_000, 130_000])  # polars' selection, then Hyperscan's
def test_a_dense_piece_redacts_as_line_by_line(size):
    """A piece whose addresses and registries are on more lines than a plan holds: each such
    redactor reads the whole piece run by run, in both passes, and the result is that of
    reading the lines its prefilter selects one by one: the same bytes, tokens and counts."""
    raw = dense_log(size, seed=size)
    assert (len(raw) >= 8 << 20) == (size > 100_000)
    learner = Learner(CATALOGUE)
    lesson = learner.prepare(raw, "t")
    assert lesson.plan is not None  # the dense lines are not planned
    assert lesson.plan.dense >= {"ipv4", "private-registry"}
    got = both_passes(CATALOGUE, raw)
    assert got == both_passes(without_runs(CATALOGUE), raw)
    out = got[0].decode()
    assert "10.0.0.7" not in out and "harbor.acme" not in out and "gpu-node-" not in out
    assert "docker.io/team" in out and "127.0.0.1" in out
    assert regex.search(r"\b10\.\d+\.\d+\.\d+\b", out) is None


@pytest.mark.parametrize("key", [False, True])
def test_a_crowded_piece_has_its_names_cut_ahead_unless_a_whole_text_redactor_rewrites_it(key):
    """A crowded piece's names are cut by `prepare` (the thread that reads ahead), beside the
    last piece's redaction; where a whole-text redactor selects a line of it (a private key),
    that redactor rewrites the text first and the names are cut from what it leaves. Either way
    the piece comes out as when nothing is cut ahead: the same bytes, tokens and counts."""
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\n"
    raw = dense_log(40_000, seed=5) + (pem.encode() if key else b"")
    learner = Learner(CATALOGUE)
    plan = learner.take(learner.prepare(raw, "t"))
    assert plan is not None and plan.dense and learner.names
    run = Redaction(CATALOGUE, learner.names, TokenMap(learner.reserved))
    assert (run.prepare(raw, plan).ahead is None) is key
    got = both_passes(CATALOGUE, raw)
    with mock.patch.object(Redaction, "_crowded_as_is", lambda *_: False):
        assert got == both_passes(CATALOGUE, raw)
    out = got[0].decode()
    assert "gpu-node-" not in out and "MIIEpAIBAAKCAQEA7" not in out


@pytest.mark.parametrize(
    "line",
    [
        # a value a name's replacement reveals (`gpu_a.` is none; `node-1.` starts a host name)
        "lookup gpu_a.prod.acme.internal; pull gpu_a.acme.io:5000/team/img:v1",
        # an address in digits Rust does not know, beside one it does
        "peer 10.96.0.1 forwarded from 10.1.1.\U00011de7",
        # a registry whose path holds a letter Rust's `\w` does not know
        'Pulling image "secret.example.org/team\u0558/img:v1" after "harbor.acme.io:5000/x:1"',
    ],
)
def test_a_dense_piece_redacts_its_other_lines_as_line_by_line(line):
    """Beside a dense redactor the other per-line redactors read every line they select (as in
    a piece the second pass plans itself), and the runs listed are those holding a prefilter
    match or a character outside ASCII (where Python's Unicode is newer than Rust's): the
    result of reading the lines one by one. (A review found each of the three leaked.)"""
    lines = ['nodeName="gpu_a"', line] + [f"conn 10.0.0.{i % 7 + 1} ok" for i in range(1000)]
    raw = ("\n".join(lines) + "\n").encode()
    with mock.patch.object(engine_module, "PLANNED_MAX", 100):
        lesson = Learner(CATALOGUE).prepare(raw, "t")
        assert lesson.plan is not None and lesson.plan.dense == {"ipv4"}
        got = both_passes(CATALOGUE, raw)
        assert got == both_passes(without_runs(CATALOGUE), raw)
    out = got[0].decode()
    assert "acme" not in out and "secret.example" not in out and "10.1.1." not in out


@pytest.mark.parametrize("crlf", [False, True])
def test_a_forked_worker_leaves_the_dense_values_to_its_caller(crlf):
    """A forked process must not run polars: its lesson leaves the values of a dense redactor
    to the caller (`Lesson.deferred`), which reads them from the piece (without its `\r`, as
    the worker did); the lesson completed is the one studied in one place."""
    raw = dense_log(40_000, seed=3)
    raw = raw.replace(b"\n", b"\r\n") if crlf else raw
    learner = Learner(CATALOGUE)
    forked = learner.prepare(raw, "t", forked=True)
    assert forked.deferred and all(not forked.found[k] for k, _, _ in forked.deferred)
    assert learner.complete(forked, raw, "t") == learner.prepare(raw, "t")
    assert both_passes(CATALOGUE, raw, forked=True) == both_passes(CATALOGUE, raw)


def test_runs_that_are_mostly_distinct_are_matched_line_by_line():
    """An address never seen twice: listing the runs saves nothing (DISTINCT_MAX), the lines
    are read as without runs, to the same result."""
    random = Random(4)
    lines = [
        f"conn from 10.{i // 65536}.{i // 256 % 256}.{i % 256} port {random.randint(1, 9)}"
        for i in range(20_000)
    ]
    raw = ("\n".join(lines) + "\n").encode()
    ipv4 = next(r for r in CATALOGUE if r.id == "ipv4")
    column = as_column(raw)
    assert column is not None and distinct_runs(ipv4.runs, ipv4.prefilter, column) is None
    assert both_passes(CATALOGUE, raw) == both_passes(without_runs(CATALOGUE), raw)


def test_a_big_dense_log_is_redacted_by_forked_workers(tmp_path):
    """The CLI on a log past the size its first pass forks workers for, dense with addresses
    and registries: every one replaced, each distinct value by one token."""
    from analyzer.redact.discover import FORK_MIN

    raw = dense_log(20_000, seed=8)
    log = tmp_path / "kubelet.log"
    with log.open("wb") as fh:
        for _ in range(FORK_MIN // len(raw) + 2):
            fh.write(raw)
    out, tokens = tmp_path / "out", tmp_path / "map.json"
    proc = run_cli("redact", str(log), "-o", str(out), "--map", str(tokens))
    assert proc.returncode == 0, proc.stderr
    text = (out / "kubelet.log").read_text()
    assert regex.search(r"\b10\.\d+\.\d+\.\d+\b", text) is None and "harbor.acme" not in text
    assert text.count("\n") == log.read_bytes().count(b"\n")
    mapping = TokenMap.load(tokens).mapping()
    addresses = set(regex.findall(rb"\b10\.\d+\.\d+\.\d+\b", raw)) - {b"10.0.0.7"}
    registry = b"10.0.0.7:5000"  # a registry's host, which that redactor replaces first
    assert {v.encode() for v in mapping.values() if v.startswith("10.")} == {*addresses, registry}


@pytest.mark.parametrize(
    ("entry", "mode", "message"),
    [
        ({"runs": "[\\w.]", "prefilter": "a"}, "keys", "for a per-line 'pattern' redactor"),
        ({"runs": "[\\w.]", "prefilter": "a", "multiline": True}, "pattern", "per-line"),
        ({"runs": "[\\w.]", "prefilter": "^a"}, "pattern", "matches wherever its text is"),
        ({"runs": "[\\w.]", "prefilter": "a\\b"}, "pattern", "matches wherever its text is"),
        ({"runs": "[\\w.]"}, "pattern", "matches wherever its text is"),
        ({"runs": "[\\w\\n]", "prefilter": "a"}, "pattern", "must not hold a line end"),
        ({"runs": "ab", "prefilter": "a"}, "pattern", "must be a character class"),
        ({"runs": "[a]+", "prefilter": "a"}, "pattern", "must be a character class"),
        ({"runs": "[", "prefilter": "a"}, "pattern", "is not a regex"),
    ],
)
def test_a_runs_declaration_is_checked(entry, mode, message):
    with pytest.raises(ValueError, match=regex.escape(message)):
        runs_class(builtin_file(), entry, mode, ())


def test_runs_are_for_the_built_in_redactors_only(tmp_path):
    """A class missing a character its pattern reads leaks, and only on a big dense text that
    a user's examples cannot show: a user's file may not declare one."""
    user = tmp_path / "r.yaml"
    user.write_text(
        "redactors:\n  - {id: x, description: d, token: t, pattern: 'a\\d', prefilter: 'a',"
        " runs: '[a-z0-9]', examples: {redact: [a1]}}\n"
    )
    with pytest.raises(RedactorError, match="'runs' is for the built-in redactors"):
        load_redactors([user])


def test_anchored_prefilters_are_told():
    assert not anchored(r"\d\.\d{1,3}\.\d{1,3}\.\d") and not anchored(r"[\w.-]+/x")
    assert anchored("^x") and anchored("x$") and anchored(r"\bx") and anchored("(?m)x")


def test_rust_class_keeps_ascii_as_declared():
    rust = rust_class(r"[\w.]")
    members = [chr(c) for c in range(128) if pl.Series([chr(c)]).str.contains(f"^{rust}$")[0]]
    assert "".join(members) == ".0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


def test_a_redactor_of_two_regexes_numbers_its_tokens_as_line_by_line():
    """Lines are redacted by a redactor's first regex, then its second: so are the runs, each
    regex over every run before the next, and the tokens are numbered alike (the second
    regex's value, first in the text, comes after the first regex's)."""
    ipv4 = next(r for r in WITH_RUNS if r.id == "ipv4")
    two = replace(
        ipv4,
        id="two",
        patterns=(
            regex.compile(r"(?<![\w.])b\d(?![\w.])"),
            regex.compile(r"(?<![\w.])a\d(?![\w.])"),
        ),
        prefilter="[ab][0-9]",
        keep=None,
    )
    text = "\n".join(["a1 then b2", "b3 a1"] * 40)
    want = pipeline(without_runs([two]), text)
    with dense_everywhere():
        got = pipeline([two], text)
    assert got == want
    assert got[0].startswith("ip-3 then ip-1\nip-2 ip-3")


ADDRESS = regex.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w]|\.\d)")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(["gpu-a", "gpu-a.1.2.3", ".1.2.3", "10.0.0.1", "1.2.3.4", " ", "\n", "x"]),
        max_size=30,
    )
)
def test_property_beside_names_a_dense_piece_only_replaces_more(fragments):
    """The one difference from the lines' path (docs/redaction.md): a dense redactor reads the
    whole text the names left, so an address a name's token makes (`node-1.1.2.3`) is replaced
    there even on a line that held no address before. It only adds: no address the lines' path
    replaces is left."""
    text = 'nodeName="gpu-a"\n' + "".join(fragments)
    want = pipeline(without_runs(CATALOGUE), text)[0]
    with dense_everywhere():
        got = pipeline(CATALOGUE, text)[0]
    assert set(ADDRESS.findall(got)) <= set(ADDRESS.findall(want)), text
