"""The names' alternation as a trie (`redact/alternation.py`) matches what the flat list, longest
first, matched: the same spans in any text, with the engine's word edges."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.redact.alternation import TRIE_LONGEST, names_alternation
from analyzer.redact.engine import WORD

# few characters, so that names share prefixes, hold each other and touch word edges
NAME = st.text(alphabet="ab-.1", min_size=1, max_size=8)


def _flat(names: list[str]) -> regex.Pattern:
    ordered = sorted(names, key=len, reverse=True)
    return regex.compile(WORD.format(alts="|".join(regex.escape(n) for n in ordered)))


def _spans(p: regex.Pattern, text: str) -> list[tuple[int, int]]:
    return [m.span() for m in p.finditer(text)]


@given(
    st.lists(NAME, min_size=1, max_size=12, unique=True), st.text(alphabet="ab-.1 x", max_size=60)
)
@settings(max_examples=1500, deadline=None)
def test_the_trie_finds_what_the_flat_list_found(names, text):
    trie = regex.compile(WORD.format(alts=names_alternation(names)))
    assert _spans(trie, text) == _spans(_flat(names), text)


def test_long_names_and_nested_prefixes_compile_and_match():
    """Names past TRIE_LONGEST are branches of their own, tried first (they are the longest);
    a hundred names each the prefix of the next nest a hundred groups, which compiles."""
    nested = ["a" * k for k in range(1, TRIE_LONGEST + 1)]
    long = ["a" * (TRIE_LONGEST + 7), "b" * (TRIE_LONGEST + 1)]
    names = [*nested, *long]
    trie = regex.compile(WORD.format(alts=names_alternation(names)))
    for text in ("a" * (TRIE_LONGEST + 7), "a" * (TRIE_LONGEST + 3), f"x {'a' * 40} y", "b" * 150):
        assert _spans(trie, text) == _spans(_flat(names), text), len(text)


def test_twenty_six_thousand_node_names_are_replaced(tmp_path):
    """A `describe nodes` of 26,000 nodes (more than Kubernetes supports in one cluster): every
    name replaced. The flat alternation timed out here (exit 2, 'a pattern that backtracks
    badly?')."""
    from analyzer.redact import redact_tree

    names = [f"gpu-worker-{i * 7919 % 65536:04x}-{i}" for i in range(26000)]
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    (src / "nodes.txt").write_text(
        "".join(
            f"Name:               {n}\nRoles:              <none>\n"
            f"Labels:             kubernetes.io/hostname={n}\n\n"
            for n in names
        )
    )
    redact_tree(src, out)
    assert "gpu-worker" not in (out / "nodes.txt").read_text()
