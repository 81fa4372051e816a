"""What the reporter states in the issue's words and no artefact shows, such as how many GPUs the
node has ("there is only one GPU", "8x A100", "两卡"). Weak by nature: rules that read these facts
cap their confidence at low."""

from __future__ import annotations

from analyzer.facts.matches import SignatureIndex
from analyzer.facts.model import FactSet, Where

GPU_COUNT = "sym-node-gpu-count"
_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a single": 1,
    "single": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "eight": 8,
    "单": 1,
    "一": 1,
    "两": 2,
    "二": 2,
    "三": 3,
    "四": 4,
    "八": 8,
}


def number(word: str) -> int | None:
    """A count written as digits or a word, English or Chinese.

    >>> number("2"), number("a single"), number("两"), number("many")
    (2, 1, 2, None)
    """
    w = word.strip().lower()
    if w.isdigit():
        return int(w)
    return _WORDS.get(w)


def produce(index: SignatureIndex, facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import index_of
    >>> fs = FactSet(); produce(index_of({"i.md": "pending, and there is only one GPU"}, "issue-text"), fs)
    >>> fs.value("stated.gpu_count"), str(fs.where("stated.gpu_count"))
    (1, 'i.md:1')
    >>> fs = FactSet(); produce(index_of({"i.md": "pending"}, "issue-text"), fs)
    >>> fs.lookup("stated.gpu_count").value is None
    True
    """
    facts.mark_known("stated.")
    for m in sorted(index.matches.get(GPU_COUNT, []), key=lambda m: (m.file, m.line)):
        word = next((v for v in m.captures.values() if v), "")
        n = number(word)
        if n:
            facts.put("stated.gpu_count", n, Where(m.file, m.line))
            return
