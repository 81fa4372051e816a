"""The names found in a bundle as one regex alternation that shares their prefixes (a trie).

The `regex` module tries a flat alternation's branches one by one at each position: 26,000 node
names (one `kubectl describe nodes` of a big cluster) cost 3 s a MiB and timed out. As a trie,
the same text takes about 12 ms. The match is the same: at each position, the longest name the
rest of the pattern accepts, as the flat list sorted longest first gives."""

from __future__ import annotations

import regex

# a name longer than this is its own branch, ahead of the trie: each branching character of a
# trie's path nests a group, and the `regex` module's parser recurses per group (~200 fail)
TRIE_LONGEST = 100


def names_alternation(names: list[str]) -> str:
    """`names` (not empty, none empty) as the inside of a non-capturing group."""
    long = sorted((n for n in names if len(n) > TRIE_LONGEST), key=len, reverse=True)
    root: dict[str, dict] = {}
    for name in names:
        if len(name) <= TRIE_LONGEST:
            node = root
            for char in name:
                node = node.setdefault(char, {})
            node[""] = {}  # a name ends here
    branches = [regex.escape(n) for n in long]
    if root:
        branches.append(_node(root))
    return "|".join(branches)


def _node(node: dict[str, dict]) -> str:
    """What may follow a trie node: its children, each with the longer names after it, and an
    empty branch last where a name ends there (tried only when no longer name fits)."""
    kids = []
    for char in sorted(c for c in node if c):
        child, text = node[char], regex.escape(char)
        while len(child) == 1 and "" not in child:  # a chain of single children: one literal
            ((char, child),) = child.items()
            text += regex.escape(char)
        kids.append(text + (_node(child) if set(child) != {""} else ""))
    if "" in node and kids:
        kids.append("")
    if len(kids) == 1:
        return kids[0]
    return "(?:" + "|".join(kids) + ")"
