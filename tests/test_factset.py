"""`FactSet.lookup` finds a known family with one `startswith` over the kept prefixes of `known`
(analyzer/facts/model.py): the same answer as looking at each entry, however facts and families
were added before and between lookups."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.facts.model import UNKNOWN, Fact, FactSet

_NAMES = st.sampled_from(["node", "node.", "node.gpu", "node.gpu.", "pod", "pod.", "x.", "x.y"])
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _NAMES),
        st.tuples(st.just("mark"), st.lists(_NAMES, max_size=3)),
        st.tuples(st.just("lookup"), _NAMES | st.text("nodegpux.", max_size=8)),
        st.tuples(st.just("replace"), st.frozensets(_NAMES, max_size=3)),
    ),
    max_size=25,
)


def _by_each_entry(facts: FactSet, path: str) -> Fact | object:
    """What lookup answered before: every entry of `known` looked at in turn."""
    f = facts.facts.get(path)
    if f is not None:
        return f
    known = facts.known
    if path in known or any(p.endswith(".") and path.startswith(p) for p in known):
        return Fact(path, None)
    return UNKNOWN


@settings(max_examples=300, deadline=None)
@given(steps=_STEPS)
def test_a_lookup_answers_as_looking_at_each_known_entry(steps):
    facts = FactSet()
    for op, arg in steps:
        if op == "put":
            facts.put(arg, 1)
        elif op == "mark":
            facts.mark_known(*arg)
        elif op == "replace":  # another set of the same size, given whole
            facts.known = set(arg)
        else:
            assert facts.lookup(arg) == _by_each_entry(facts, arg)
    for path in ("node.gpu.count", "pod.name", "x.y", "x.z", "other"):
        assert facts.lookup(path) == _by_each_entry(facts, path)
