"""Conformance table for the rule condition language (analyzer/rules/conditions.py).

Written from the documented semantics, not from printed output: comparisons are strict about
types (a value of the wrong type never matches; a bool is not a number), `ne`, `not_in` and
`not_contains` are the complements of `eq`, `in` and `contains`, a known-absent value (None)
matches only the negations and `exists: false`, and every node is tri-state with Kleene logic
(UNKNOWN is never evidence of absence).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest

from analyzer.facts.model import FactSet, Match, Where
from analyzer.facts.registry import sources_of
from analyzer.rules.conditions import (
    COMPARATORS,
    LINE_KEY,
    AgeCond,
    AllOf,
    AnyOf,
    FactCond,
    FactRef,
    Not,
    ParseProblems,
    SignatureCond,
    Tri,
    compare,
    parse_condition,
)

T0 = dt.datetime(2024, 8, 15, 9, 0, tzinfo=dt.UTC)


@dataclass
class Ctx:
    """The smallest EvalContext: a FactSet, a collection time and canned signature matches."""

    facts: FactSet = field(default_factory=FactSet)
    collected_at: dt.datetime | None = None
    found: dict[str, list[Match]] = field(default_factory=dict)
    scanned: frozenset[str] = frozenset()  # signatures whose absence is known

    def matches(self, sig: str) -> list[Match]:
        return self.found.get(sig, [])

    def count(self, sig: str) -> int:
        return len(self.matches(sig))

    def absence_known(self, sig: str, kinds: frozenset[str] = frozenset()) -> bool:
        return sig in self.scanned

    def sources(self, sig: str, kinds: frozenset[str] = frozenset()) -> frozenset[str]:
        return frozenset({"scheduler-log"})

    def kind_matches(self, kind: str, kinds: frozenset[str]) -> bool:
        return kind in kinds

    def meaning(self, sig: str) -> str:
        return "the probe line"


def fact(path: str, **ops) -> FactCond:
    return FactCond(path, tuple(ops.items()))


# ---- compare(): every comparator against match, mismatch, None, wrong type, empty list --------
P = pytest.param
COMPARE_TABLE = [
    # eq
    P("eq", "gpu", "gpu", True, id="eq-match"),
    P("eq", "gpu", "cpu", False, id="eq-mismatch"),
    P("eq", None, "gpu", False, id="eq-absent"),
    P("eq", "10", 10, False, id="eq-str-vs-int"),
    P("eq", True, 1, False, id="eq-bool-vs-int"),
    P("eq", 1, True, False, id="eq-int-vs-bool"),
    P("eq", 0, False, False, id="eq-zero-vs-false"),
    # ne: the complement of eq
    P("ne", "gpu", "cpu", True, id="ne-match"),
    P("ne", "gpu", "gpu", False, id="ne-mismatch"),
    P("ne", None, "gpu", True, id="ne-absent"),
    P("ne", "10", 10, True, id="ne-str-vs-int"),
    P("ne", True, 1, True, id="ne-bool-vs-int"),
    # ordering: numbers only, a bool is not a number
    P("gt", 11, 10, True, id="gt-match"),
    P("gt", 10, 10, False, id="gt-mismatch"),
    P("gt", None, 10, False, id="gt-absent"),
    P("gt", "11", 10, False, id="gt-str-vs-int"),
    P("gt", 11, "10", False, id="gt-int-vs-str"),
    P("gt", True, 0, False, id="gt-bool-vs-int"),
    P("gt", 10.5, 10, True, id="gt-float-vs-int"),
    P("gt", [], 0, False, id="gt-empty-list"),
    P("ge", 10, 10, True, id="ge-match"),
    P("ge", 9, 10, False, id="ge-mismatch"),
    P("ge", None, 0, False, id="ge-absent"),
    P("ge", "10", 10, False, id="ge-str-vs-int"),
    P("ge", True, 1, False, id="ge-bool-vs-int"),
    P("lt", 9, 10, True, id="lt-match"),
    P("lt", 10, 10, False, id="lt-mismatch"),
    P("lt", None, 10, False, id="lt-absent"),
    P("lt", "9", 10, False, id="lt-str-vs-int"),
    P("lt", False, 1, False, id="lt-bool-vs-int"),
    P("le", 10, 10, True, id="le-match"),
    P("le", 11, 10, False, id="le-mismatch"),
    P("le", None, 10, False, id="le-absent"),
    P("le", "10", 10, False, id="le-str-vs-int"),
    P("le", True, 1, False, id="le-bool-vs-int"),
    # in / not_in
    P("in", "b", ["a", "b"], True, id="in-match"),
    P("in", "c", ["a", "b"], False, id="in-mismatch"),
    P("in", None, ["a"], False, id="in-absent"),
    P("in", "10", [10], False, id="in-str-vs-int-list"),
    P("in", True, [1, 2], False, id="in-bool-vs-int-list"),
    P("in", "a", [], False, id="in-empty-list"),
    P("not_in", "c", ["a", "b"], True, id="not_in-match"),
    P("not_in", "a", ["a", "b"], False, id="not_in-mismatch"),
    P("not_in", None, ["a"], True, id="not_in-absent"),
    P("not_in", "10", [10], True, id="not_in-str-vs-int-list"),
    P("not_in", True, [1, 2], True, id="not_in-bool-vs-int-list"),
    P("not_in", "a", [], True, id="not_in-empty-list"),
    # matches: strings only
    P("matches", "NVIDIA L40S", "^NVIDIA", True, id="matches-match"),
    P("matches", "AMD MI300", "^NVIDIA", False, id="matches-mismatch"),
    P("matches", None, ".*", False, id="matches-absent"),
    P("matches", 10, "10", False, id="matches-int-value"),
    P("matches", ["NVIDIA"], "NVIDIA", False, id="matches-list-value"),
    P("matches", [], ".*", False, id="matches-empty-list"),
    # contains / not_contains: lists and strings
    P("contains", ["cdi", "legacy"], "cdi", True, id="contains-match-list"),
    P("contains", "nvidia.com/gpu", "gpu", True, id="contains-match-substring"),
    P("contains", ["legacy"], "cdi", False, id="contains-mismatch"),
    P("contains", None, "cdi", False, id="contains-absent"),
    P("contains", "123", 1, False, id="contains-int-in-str"),
    P("contains", 123, 1, False, id="contains-int-value"),
    P("contains", [1, 2], "1", False, id="contains-str-in-int-list"),
    P("contains", [1, 2], True, False, id="contains-bool-in-int-list"),
    P("contains", [], "cdi", False, id="contains-empty-list"),
    P("not_contains", ["legacy"], "cdi", True, id="not_contains-match"),
    P("not_contains", ["cdi"], "cdi", False, id="not_contains-mismatch"),
    P("not_contains", None, "cdi", True, id="not_contains-absent"),
    P("not_contains", "123", 1, True, id="not_contains-int-in-str"),
    P("not_contains", 123, 1, True, id="not_contains-int-value"),
    P("not_contains", [1, 2], "1", True, id="not_contains-str-in-int-list"),
    P("not_contains", [1, 2], True, True, id="not_contains-bool-in-int-list"),
    P("not_contains", [], "cdi", True, id="not_contains-empty-list"),
    # exists: None and [] are absent; any other value (0, False, "x") exists
    P("exists", "x", True, True, id="exists-match"),
    P("exists", "x", False, False, id="exists-mismatch"),
    P("exists", None, True, False, id="exists-absent"),
    P("exists", None, False, True, id="exists-false-absent"),
    P("exists", 0, True, True, id="exists-zero"),
    P("exists", False, True, True, id="exists-false-value"),
    P("exists", [], True, False, id="exists-empty-list"),
    P("exists", [], False, True, id="exists-false-empty-list"),
]


@pytest.mark.parametrize(("op", "value", "want", "expected"), COMPARE_TABLE)
def test_compare(op, value, want, expected):
    """compare(op, value, want) follows the strict-type table."""
    assert compare(op, value, want) is expected


def test_compare_table_covers_every_comparator():
    """Each comparator has a matching, a non-matching and an absent (None) row."""
    rows = [p.values for p in COMPARE_TABLE]
    for op in COMPARATORS:
        mine = [r for r in rows if r[0] == op]
        assert any(r[3] is True for r in mine), op
        assert any(r[3] is False for r in mine), op
        assert any(r[1] is None for r in mine), op


# ---- FactCond on a FactSet ----------------------------------------------------------------------
def node_facts() -> FactSet:
    fs = FactSet()
    fs.put("node.allocatable.gpu", 10, Where("node.yaml", 12))
    fs.put("node.ready", True)
    fs.mark_known("node.labels.")
    return fs


def test_known_fact_true_cites_the_fact():
    """A known fact that satisfies the comparison is TRUE with the fact (value, file, line) as evidence."""
    o = fact("node.allocatable.gpu", gt=0).evaluate(Ctx(node_facts()))
    assert o.state is Tri.TRUE
    [ev] = o.evidence
    assert (ev.kind, ev.path, ev.value, ev.file, ev.line) == (
        "fact",
        "node.allocatable.gpu",
        10,
        "node.yaml",
        12,
    )


def test_known_fact_false():
    """A known fact that fails the comparison is FALSE, with no evidence and nothing missing."""
    o = fact("node.allocatable.gpu", gt=10).evaluate(Ctx(node_facts()))
    assert (o.state, o.evidence, o.missing) == (Tri.FALSE, (), frozenset())


def test_every_comparison_of_a_condition_must_hold():
    """Several comparisons on one fact are a conjunction (ge 1 and le 8 on 10 is FALSE)."""
    ctx = Ctx(node_facts())
    assert fact("node.allocatable.gpu", ge=1, le=16).evaluate(ctx).state is Tri.TRUE
    assert fact("node.allocatable.gpu", ge=1, le=8).evaluate(ctx).state is Tri.FALSE


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        P({"eq": "on"}, Tri.FALSE, id="eq"),
        P({"ne": "on"}, Tri.TRUE, id="ne"),
        P({"exists": True}, Tri.FALSE, id="exists-true"),
        P({"exists": False}, Tri.TRUE, id="exists-false"),
    ],
)
def test_known_absent_fact(ops, expected):
    """A path in a family that was read but not produced is absent (None), not UNKNOWN."""
    o = fact("node.labels.gpu", **ops).evaluate(Ctx(node_facts()))
    assert o.state is expected and o.missing == frozenset()


@pytest.mark.parametrize(
    ("path", "missing"),
    [
        P("handshake.state", {"node"}, id="node-sourced"),
        P("lease.holder", {"lease"}, id="lease"),
        P("cdi.default_kind_uuid_names", {"cdi-spec", "toolkit-config"}, id="two-sources"),
        P("config.helm-values.devicePlugin.deviceSplitCount", {"helm-values"}, id="config-kind"),
    ],
)
def test_unknown_fact_names_its_sources(path, missing):
    """A fact whose family was never marked known is UNKNOWN; `missing` names registry sources."""
    o = fact(path, exists=True).evaluate(Ctx(FactSet()))
    assert o.state is Tri.UNKNOWN
    assert o.missing == frozenset(missing) == frozenset(sources_of(path))
    assert o.evidence == ()


def test_unknown_fact_stays_unknown_under_negation():
    """`ne` and `exists: false` on an UNKNOWN fact are UNKNOWN, never TRUE."""
    ctx = Ctx(FactSet())
    assert fact("lease.holder", ne="x").evaluate(ctx).state is Tri.UNKNOWN
    assert fact("lease.holder", exists=False).evaluate(ctx).state is Tri.UNKNOWN


def pod_facts(**extra) -> FactSet:
    fs = FactSet()
    fs.put("pod.limits.nvidia.com/gpumem", 30000, Where("pod.yaml", 20))
    fs.mark_known("pod.limits.")
    for path, value in extra.items():
        fs.put(path.replace("__", "."), value, Where("node.yaml", 5))
    return fs


def test_factref_unknown_is_unknown():
    """An operand {fact: other} whose fact is UNKNOWN makes the condition UNKNOWN (its sources)."""
    cond = fact("pod.limits.nvidia.com/gpumem", gt=FactRef("register.max_devmem"))
    o = cond.evaluate(Ctx(pod_facts()))
    assert o.state is Tri.UNKNOWN
    assert o.missing == frozenset({"node"})


def test_factref_true_cites_both_facts():
    """A TRUE comparison against {fact: other} cites both the compared fact and the operand fact."""
    cond = fact("pod.limits.nvidia.com/gpumem", gt=FactRef("register.max_devmem"))
    o = cond.evaluate(Ctx(pod_facts(register__max_devmem=24564)))
    assert o.state is Tri.TRUE
    cited = {(e.path, e.value, e.file) for e in o.evidence}
    assert cited == {
        ("pod.limits.nvidia.com/gpumem", 30000, "pod.yaml"),
        ("register.max_devmem", 24564, "node.yaml"),
    }


def test_factref_false():
    """A known operand fact that the value does not satisfy is FALSE."""
    cond = fact("pod.limits.nvidia.com/gpumem", gt=FactRef("register.max_devmem"))
    assert cond.evaluate(Ctx(pod_facts(register__max_devmem=81920))).state is Tri.FALSE


def test_failed_comparison_decides_despite_an_unknown_operand():
    """Kleene: a comparison that is FALSE makes the condition FALSE even if another's operand is UNKNOWN."""
    # as parsed from {fact: ..., ne: {fact: register.max_devmem}, lt: 100}: ops in COMPARATORS order
    cond = FactCond(
        "pod.limits.nvidia.com/gpumem", (("ne", FactRef("register.max_devmem")), ("lt", 100))
    )
    o = cond.evaluate(Ctx(pod_facts()))
    assert o.state is Tri.FALSE


# ---- AgeCond ----------------------------------------------------------------------------------
def handshake_ctx(collected_at) -> Ctx:
    fs = FactSet()
    fs.put("handshake.time", T0, Where("node.yaml", 9))
    return Ctx(fs, collected_at)


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        P((("gt", 300.0),), Tri.TRUE, id="older-than-5m"),
        P((("gt", 3600.0),), Tri.FALSE, id="not-older-than-1h"),
        P((("ge", 600.0), ("le", 600.0)), Tri.TRUE, id="exactly-10m"),
    ],
)
def test_age_of_against_collection_time(ops, expected):
    """age_of compares collection time minus the fact's time (10 minutes here) with durations."""
    o = AgeCond("handshake.time", ops).evaluate(handshake_ctx(T0 + dt.timedelta(minutes=10)))
    assert o.state is expected


def test_age_of_without_collection_time_is_unknown():
    """Without an inferred collection time an age cannot be decided: UNKNOWN."""
    o = AgeCond("handshake.time", (("gt", 1.0),)).evaluate(handshake_ctx(None))
    assert o.state is Tri.UNKNOWN and o.missing


def test_age_of_unknown_fact_is_unknown():
    """age_of on an UNKNOWN fact is UNKNOWN, naming the fact's sources."""
    o = AgeCond("handshake.time", (("gt", 1.0),)).evaluate(Ctx(FactSet(), T0))
    assert (o.state, o.missing) == (Tri.UNKNOWN, frozenset({"node"}))


# ---- combinators: Kleene truth tables ---------------------------------------------------------
LEAF_FACTS = FactSet()
LEAF_FACTS.put("node.ready", True, Where("node.yaml", 3))
LEAVES = {
    "T": fact("node.ready", eq=True),
    "F": fact("node.ready", eq=False),
    "U": fact("lease.holder", exists=True),  # no lease in the bundle: UNKNOWN, missing {lease}
}
STATE = {"T": Tri.TRUE, "F": Tri.FALSE, "U": Tri.UNKNOWN}
ALL_TABLE = ["TTT", "TFF", "TUU", "FTF", "FFF", "FUF", "UTU", "UFF", "UUU"]
ANY_TABLE = ["TTT", "TFT", "TUT", "FTT", "FFF", "FUU", "UTT", "UFU", "UUU"]


def test_leaves_have_the_states_the_tables_assume():
    """The T, F and U leaves evaluate to TRUE, FALSE and UNKNOWN."""
    ctx = Ctx(LEAF_FACTS)
    assert {k: c.evaluate(ctx).state for k, c in LEAVES.items()} == STATE


@pytest.mark.parametrize("row", ALL_TABLE, ids=lambda r: f"all({r[0]},{r[1]})={r[2]}")
def test_all_truth_table(row):
    """all: FALSE if any is FALSE, else UNKNOWN if any is UNKNOWN, else TRUE."""
    o = AllOf((LEAVES[row[0]], LEAVES[row[1]])).evaluate(Ctx(LEAF_FACTS))
    assert o.state is STATE[row[2]]
    assert o.missing == (frozenset({"lease"}) if row[2] == "U" else frozenset())


@pytest.mark.parametrize("row", ANY_TABLE, ids=lambda r: f"any({r[0]},{r[1]})={r[2]}")
def test_any_truth_table(row):
    """any: TRUE if any is TRUE, else UNKNOWN if any is UNKNOWN, else FALSE."""
    o = AnyOf((LEAVES[row[0]], LEAVES[row[1]])).evaluate(Ctx(LEAF_FACTS))
    assert o.state is STATE[row[2]]
    assert o.missing == (frozenset({"lease"}) if row[2] == "U" else frozenset())


@pytest.mark.parametrize("row", ["TF", "FT", "UU"], ids=lambda r: f"not({r[0]})={r[1]}")
def test_not_truth_table(row):
    """not swaps TRUE and FALSE and keeps UNKNOWN (with its missing sources)."""
    o = Not(LEAVES[row[0]]).evaluate(Ctx(LEAF_FACTS))
    assert o.state is STATE[row[1]]
    assert o.missing == (frozenset({"lease"}) if row[1] == "U" else frozenset())


def test_true_combinators_carry_the_true_branches_evidence():
    """all(T, T) cites both leaves; any(F, T, U) cites the TRUE leaf only."""
    ctx = Ctx(LEAF_FACTS)
    both = AllOf((LEAVES["T"], fact("node.ready", exists=True))).evaluate(ctx)
    assert [e.path for e in both.evidence] == ["node.ready", "node.ready"]
    one = AnyOf((LEAVES["F"], LEAVES["T"], LEAVES["U"])).evaluate(ctx)
    assert one.state is Tri.TRUE and [e.path for e in one.evidence] == ["node.ready"]


def test_nested_unknown_propagates_through_all_and_not():
    """not(all(T, U)) is UNKNOWN and still names the missing source."""
    o = Not(AllOf((LEAVES["T"], LEAVES["U"]))).evaluate(Ctx(LEAF_FACTS))
    assert (o.state, o.missing) == (Tri.UNKNOWN, frozenset({"lease"}))


# ---- signatures: absence is evidence only when the log that would print it is there -----------
def probe_match() -> Match:
    return Match("probe", "scheduler.log", 7, "probe line", None, {}, (0, 5), "scheduler-log")


def test_signature_unmatched_without_its_log_is_unknown():
    """No matching line and no log where it would appear: UNKNOWN, missing names the log kinds."""
    o = SignatureCond("probe").evaluate(Ctx())
    assert (o.state, o.missing) == (Tri.UNKNOWN, frozenset({"scheduler-log"}))
    assert Not(SignatureCond("probe")).evaluate(Ctx()).state is Tri.UNKNOWN


def test_signature_unmatched_with_its_log_is_false_and_its_negation_true():
    """No matching line in a log that would print it: FALSE, and `not` is TRUE on absence evidence."""
    ctx = Ctx(scanned=frozenset({"probe"}))
    assert SignatureCond("probe").evaluate(ctx).state is Tri.FALSE
    o = Not(SignatureCond("probe")).evaluate(ctx)
    assert o.state is Tri.TRUE and [e.kind for e in o.evidence] == ["absence"]


def test_a_reporter_not_saying_something_is_a_guard_not_evidence():
    """`not:` a symptom (the reporter's words) that was not said is TRUE without evidence and
    without weight: `all: [a log line, not: symptom]` stays as strong as its log line."""
    ctx = Ctx(found={"probe": [probe_match()]}, scanned=frozenset({"probe", "sym"}))
    guard = Not(SignatureCond("sym", symptom=True)).evaluate(ctx)
    assert (guard.state, guard.evidence, guard.strength) == (Tri.TRUE, (), "high")
    both = AllOf((SignatureCond("probe"), Not(SignatureCond("sym", symptom=True)))).evaluate(ctx)
    assert both.strength == SignatureCond("probe").evaluate(ctx).strength


def test_signature_match_is_true_with_the_line():
    """A matching line makes the signature TRUE and is cited as log evidence (file, line)."""
    ctx = Ctx(found={"probe": [probe_match()]}, scanned=frozenset({"probe"}))
    o = SignatureCond("probe").evaluate(ctx)
    assert o.state is Tri.TRUE
    assert [(e.kind, e.file, e.line) for e in o.evidence] == [("log", "scheduler.log", 7)]
    assert SignatureCond("probe", count_ge=2).evaluate(ctx).state is Tri.FALSE


@pytest.mark.parametrize(
    ("captures", "agree"),
    [
        ({"n": "3", "n_nodes": "3"}, True),
        ({"n": "2", "n_nodes": "3"}, False),
        ({"node": "gpu-1"}, False),  # the signature's other form: neither count captured
        ({"n": "3"}, False),
        ({"n": "", "n_nodes": ""}, False),
    ],
)
def test_equal_needs_every_capture_made_and_agreeing(captures, agree):
    """`equal: [n, n_nodes]` selects a line only where both were captured with one value; two
    absent captures once counted as equal, and `0/N nodes: N unregistered` fired on the
    extender's per-node "node unregistered" line."""
    m = Match("probe", "scheduler.log", 7, "probe line", None, captures, (0, 5), "scheduler-log")
    ctx = Ctx(found={"probe": [m]}, scanned=frozenset({"probe"}))
    state = SignatureCond("probe", equal=("n", "n_nodes")).evaluate(ctx).state
    assert state is (Tri.TRUE if agree else Tri.FALSE)


@pytest.mark.parametrize(
    ("reasons", "n_nodes", "tallies"),
    [
        P(
            "1 node unregistered, 1 node(s) had taint {node.kubernetes.io/unreachable: }, "
            "that the pod didn't tolerate",
            "2",
            True,
            id="every-node-counted",
        ),
        # HAMi up to v2.4 gives no reason for a node that did not fit: three nodes uncounted
        P(
            "1 node unregisterd, 6 node(s) didn't match Pod's node affinity/selector",
            "10",
            False,
            id="nodes-uncounted",
        ),
        P(
            "1 1/2 CardNotHealth, 1/2 CardTimeSlicingExhausted, 1 NodeInsufficientDevice",
            "2",
            True,
            id="a-share-is-no-count",
        ),
        P("3 node unregistered", "N", False, id="redacted-total"),
        P("", "0", False, id="no-items"),
    ],
)
def test_tally_adds_the_counts_opening_each_item(reasons, n_nodes, tallies):
    """`tally: {of, equals}` selects a summary whose items' counts account for every node."""
    captures = {"reasons": reasons, "n_nodes": n_nodes}
    m = Match("probe", "scheduler.log", 7, "probe line", None, captures, (0, 5), "scheduler-log")
    ctx = Ctx(found={"probe": [m]}, scanned=frozenset({"probe"}))
    state = SignatureCond("probe", tally=("reasons", "n_nodes")).evaluate(ctx).state
    assert state is (Tri.TRUE if tallies else Tri.FALSE)


def _line(sig: str, line: int, text: str, ts=None, file: str = "kubelet.log") -> Match:
    return Match(sig, file, line, text, ts, {}, (0, 5), "kubelet-log")


_EOF = 'kubelet[1]: E0818 16:33:56.754985  176281 client.go:90] "ListAndWatch ended" err="EOF"'
_REG = 'kubelet[1]: I0818 16:33:59.143225  176281 server.go:160] "Got registration request"'


@pytest.mark.parametrize(
    ("eof", "reg", "later"),
    [
        P(_line("eof", 1, "eof"), _line("reg", 2, "reg"), True, id="by-line-in-one-file"),
        P(_line("eof", 2, "eof"), _line("reg", 1, "reg"), False, id="earlier-line"),
        P(_line("eof", 1, "eof"), _line("reg", 2, "reg", file="b.log"), False, id="two-files"),
        # a journal read newest first (journalctl -r): the klog times decide, not the lines
        P(_line("eof", 6, _EOF), _line("reg", 3, _REG), True, id="klog-times-reversed"),
        P(
            _line("eof", 3, _REG.replace("16:33:59", "16:34:10")),
            _line("reg", 6, _REG),
            False,
            id="klog-time-earlier",
        ),
        P(
            _line("eof", 9, "eof", dt.datetime(2025, 8, 18, 16, 33, 56, tzinfo=dt.UTC)),
            _line("reg", 1, "reg", dt.datetime(2025, 8, 18, 16, 33, 59)),
            True,
            id="times-naive-and-aware",
        ),
    ],
)
def test_after_selects_lines_later_than_the_last_of_another_signature(eof, reg, later):
    """`after:` orders two lines by their times, by their klog times, or within one file."""
    ctx = Ctx(found={"eof": [eof], "reg": [reg]}, scanned=frozenset({"eof", "reg"}))
    state = SignatureCond("reg", after="eof").evaluate(ctx).state
    assert state is (Tri.TRUE if later else Tri.FALSE)


def test_after_reads_the_last_line_of_the_other_signature():
    """A registration between two stream ends is not after the last one."""
    eofs = [_line("eof", 1, "eof"), _line("eof", 3, "eof")]
    ctx = Ctx(
        found={"eof": eofs, "reg": [_line("reg", 2, "reg")]}, scanned=frozenset({"eof", "reg"})
    )
    assert SignatureCond("reg", after="eof").evaluate(ctx).state is Tri.FALSE
    no_eof = Ctx(found={"reg": [_line("reg", 2, "reg")]}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof").evaluate(no_eof).state is Tri.FALSE


def test_after_with_same_reads_only_the_lines_of_that_value():
    """`after: {signature, same: [resource]}`: another resource's stream ending says nothing."""

    def line(sig, n, resource):
        return Match(sig, "k.log", n, sig, None, {"resource": resource}, (0, 3), "kubelet-log")

    eofs = [line("eof", 1, "a"), line("eof", 3, "b")]
    ctx = Ctx(found={"eof": eofs, "reg": [line("reg", 2, "a")]}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof").evaluate(ctx).state is Tri.FALSE
    tied = SignatureCond("reg", after="eof", same=("resource",))
    assert tied.evaluate(ctx).state is Tri.TRUE


def test_after_finds_the_last_line_once_for_each_value(monkeypatch):
    """Thousands of stream ends and registrations of one resource (a paste of a loop): the last
    line of the other signature is found once for that resource, not once for each line (it was
    quadratic: a 512 KiB issue took minutes)."""
    import analyzer.rules.conditions as conditions

    def line(sig, n, resource):
        return Match(sig, "k.log", n, sig, None, {"resource": resource}, (0, 3), "kubelet-log")

    calls = []
    real = conditions._last
    monkeypatch.setattr(conditions, "_last", lambda ms: calls.append(len(ms)) or real(ms))
    eofs = [line("eof", 2 * n, "a") for n in range(2000)]
    regs = [line("reg", 2 * n + 1, "a") for n in range(2000)] + [line("reg", 9000, "")]
    ctx = Ctx(found={"eof": eofs, "reg": regs}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof", same=("resource",)).evaluate(ctx).state is Tri.TRUE
    assert len(calls) == 2  # one for resource "a", one for the line without a resource


def test_a_line_without_the_capture_is_tied_to_any():
    """The kubelet's older wording puts the resource elsewhere: its stream end still counts."""

    def line(sig, n, caps):
        return Match(sig, "k.log", n, sig, None, caps, (0, 3), "kubelet-log")

    old_eof = line("eof", 1, {"resource_old": "nvidia.com/gpu"})
    reg = line("reg", 2, {"resource": "nvidia.com/gpu"})
    ctx = Ctx(found={"eof": [old_eof], "reg": [reg]}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof", same=("resource",)).evaluate(ctx).state is Tri.TRUE


def test_a_year_the_log_states_orders_lines_far_apart():
    """Half a year apart with a real year: their times say which is later, not their places."""
    jul = _line("eof", 1, "eof", dt.datetime(2025, 7, 1, tzinfo=dt.UTC))
    jan = _line("reg", 2, "reg", dt.datetime(2025, 1, 1, tzinfo=dt.UTC))  # newest first
    ctx = Ctx(found={"eof": [jul], "reg": [jan]}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof").evaluate(ctx).state is Tri.FALSE


def test_lines_far_apart_in_one_file_are_ordered_by_their_places():
    """Times half a year apart in one file: a year given wrongly across new year (Dec 31, Jan 1)."""
    dec = _line("eof", 1, "eof", dt.datetime(2000, 12, 31, 23, 59, tzinfo=dt.UTC))
    jan = _line("reg", 2, "reg", dt.datetime(2000, 1, 1, 0, 1, tzinfo=dt.UTC))
    ctx = Ctx(found={"eof": [dec], "reg": [jan]}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof").evaluate(ctx).state is Tri.TRUE
    by_klog = (
        _line("eof", 1, _EOF.replace("E0818", "E1231")),
        _line("reg", 2, _REG.replace("I0818", "I0101")),
    )
    ctx = Ctx(found={"eof": [by_klog[0]], "reg": [by_klog[1]]}, scanned=frozenset({"eof", "reg"}))
    assert SignatureCond("reg", after="eof").evaluate(ctx).state is Tri.TRUE


# ---- parse errors -----------------------------------------------------------------------------
FILE, RULE = "rules/probe.yaml", "probe-rule"


def parse(raw, line: int = 4, signatures=None):
    problems = ParseProblems(FILE, RULE)
    cond = parse_condition(raw, line, problems, signatures or {})
    return cond, problems.items


@pytest.mark.parametrize(
    ("raw", "line", "fragment"),
    [
        P("node.ready", 4, "must be a mapping", id="non-mapping"),
        P(
            {"all": [{"fact": "node.ready", "eq": True}], "fact": "node.ready", LINE_KEY: 7},
            7,
            "'all' must stand alone",
            id="all-with-extra-keys",
        ),
        P({"any": [], LINE_KEY: 8}, 8, "'any' needs a non-empty list", id="empty-any"),
        P({"fact": "node.bogus", "eq": 1, LINE_KEY: 9}, 9, "unknown fact path", id="unknown-fact"),
        P(
            {"fact": "node.ready", "eq": {"fact": "node.bogus"}, LINE_KEY: 9},
            9,
            "unknown fact path 'node.bogus'",
            id="unknown-fact-operand",
        ),
        P({"signature": "no-such-sig", LINE_KEY: 10}, 10, "unknown signature id", id="unknown-sig"),
        P(
            {"fact": "node.ready", "equals": True, LINE_KEY: 11},
            11,
            "unknown comparison(s) ['equals']",
            id="unknown-comparator",
        ),
    ],
)
def test_parse_error_names_file_line_and_rule(raw, line, fragment):
    """A malformed condition records `file:line: rule id: message` and does not raise."""
    _cond, problems = parse(raw)
    assert any(p.startswith(f"{FILE}:{line}: rule {RULE}: ") and fragment in p for p in problems), (
        problems
    )


def test_parse_error_in_a_nested_item_names_the_items_line():
    """A bad item inside `any` is reported at the item's own line, and the whole is unparsed."""
    raw = {"any": [{"fact": "node.ready", "eq": True}, {"bogus": 1, LINE_KEY: 15}], LINE_KEY: 14}
    cond, problems = parse(raw)
    assert cond is None
    assert problems == [
        f"{FILE}:15: rule {RULE}: a condition needs one of all, any, not, signature, fact, age_of"
    ]


def test_parse_of_a_well_formed_condition_records_nothing(ruleset):
    """A valid nested condition parses to typed nodes and records no problem."""
    raw = {
        "all": [
            {"fact": "node.ready", "eq": True},
            {"not": {"signature": "sch-node-added"}},
            {"age_of": "handshake.time", "gt": "5m"},
        ]
    }
    cond, problems = parse(raw, signatures=ruleset.signatures)
    assert problems == []
    assert cond == AllOf(
        (
            FactCond("node.ready", (("eq", True),), 4),
            Not(SignatureCond("sch-node-added", line=4), 4),
            AgeCond("handshake.time", (("gt", 300.0),), 4),
        ),
        4,
    )


@pytest.mark.parametrize(
    "raw",
    [
        P(None, id="none"),
        P([{"fact": "node.ready", "eq": True}], id="list"),
        P({"all": "node.ready"}, id="all-not-a-list"),
        P({"not": None}, id="not-none"),
        P({"fact": None, "eq": 1}, id="fact-path-none"),
        P({"fact": "node.ready"}, id="no-comparison"),
        P({"fact": "node.labels.gpu", "in": "on"}, id="in-not-a-list"),
        P({"fact": "node.labels.gpu", "matches": "("}, id="bad-regex"),
        P({"fact": "node.ready", "eq": {"path": "x"}}, id="bad-operand-mapping"),
        P({"age_of": "handshake.time", "gt": "soon"}, id="bad-duration"),
        P({"signature": "sch-node-added", "count_ge": -1}, id="negative-count"),
        P({"signature": "sch-node-added", "in": 5}, id="in-kinds-not-a-list"),
        P({"signature": ["sch-node-added"]}, id="signature-id-list"),
        P({"signature": "sch-node-added", "where": "node"}, id="where-not-a-mapping"),
        P({"signature": "sch-node-added", "equal": 5}, id="equal-not-a-list"),
        P({"signature": "pod-node-unregistered", "tally": {"of": "n"}}, id="tally-no-equals"),
        P(
            {"signature": "pod-node-unregistered", "tally": {"of": "x", "equals": "n_nodes"}},
            id="tally-unknown-capture",
        ),
        P({"signature": "sch-node-added", "after": "no-such-sig"}, id="after-unknown"),
        P({"signature": "sch-node-added", "after": ["sch-node-added"]}, id="after-a-list"),
        P(
            {
                "signature": "sch-node-added",
                "after": {"signature": "sch-node-added", "same": ["x"]},
            },
            id="after-same-unknown-capture",
        ),
        P(
            {"signature": "sch-node-added", "after": {"signature": "sch-node-added", "when": 1}},
            id="after-unknown-key",
        ),
        P(
            {"signature": "sch-node-added", "after": {"signature": "sch-node-added", "same": []}},
            id="after-same-empty",
        ),
        P({"frobnicate": 1}, id="no-known-key"),
    ],
)
def test_parse_never_raises(raw, ruleset):
    """Malformed YAML conditions become recorded problems naming file and rule, never exceptions."""
    _cond, problems = parse(raw, signatures=ruleset.signatures)
    assert problems
    assert all(p.startswith(f"{FILE}:") and f": rule {RULE}: " in p for p in problems)
