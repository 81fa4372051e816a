"""What every file of the sample bundles and of ../shared/corpus is recognised as, one row per
artefact (input, file, first line, kind, reason), and what every blank-line separated part of each
file is sniffed as. tests/test_recognition_table.py compares this with the reviewed tables in
tests/golden/; after a deliberate recognition change, rewrite them and read the diff:

    .venv/bin/python tests/recognition_table.py --write
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from analyzer.bundle.issue import issue_from_payload
from analyzer.bundle.model import BundleFile
from analyzer.bundle.reader import open_bundle
from analyzer.bundle.recognise import HEAD_BYTES, SMALL_FILE, recognise
from analyzer.bundle.sniff import sniff
from analyzer.bundle.text import clean, decode, looks_binary
from analyzer.bundle.thread import Post, read_thread
from analyzer.catalogue.kinds import Catalogue

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_bundles"
CORPUS = REPO.parent / "shared" / "corpus"
GOLDEN = REPO / "tests" / "golden"
ARTEFACTS = GOLDEN / "recognition-artefacts.tsv"
PARTS = GOLDEN / "recognition-parts.tsv"
CORPUS_SKIP = ("expected.yaml", "issue.md")


def _inputs() -> Iterator[tuple[str, str, list[str] | bytes]]:
    """(label, source, paths or issue bytes): each sample bundle, each corpus case's files as a
    bundle and its issue.md as an issue."""
    for s in sorted(p for p in SAMPLES.iterdir() if (p / "bundle").is_dir()):
        yield f"samples/{s.name}", "bundle", [str(s / "bundle")]
    if not CORPUS.is_dir():
        return
    for case in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        files = sorted(str(f) for f in case.iterdir() if f.is_file() and f.name not in CORPUS_SKIP)
        if files:
            yield f"corpus/{case.name}", "bundle", files
        if (case / "issue.md").is_file():
            yield f"corpus/{case.name}/issue.md", "issue", (case / "issue.md").read_bytes()


def _files(source: str, what) -> Iterator[list[BundleFile]]:
    if source == "bundle":
        with open_bundle(what) as reader:
            yield sorted(reader.inventory.files, key=lambda f: f.name)
    else:
        with read_thread([Post("issue", issue_from_payload(what))]) as files:
            yield sorted(files.inventory.files, key=lambda f: f.name)


def _text(f: BundleFile) -> str | None:
    with f.path.open("rb") as fh:
        head = fh.read(HEAD_BYTES if f.size > SMALL_FILE else SMALL_FILE)
    return None if looks_binary(head) else clean(decode(head)[0])


def _one_line(s: str) -> str:
    return s.replace("\t", " ").replace("\n", " ")


def tables(catalogue: Catalogue) -> tuple[list[str], list[str]]:
    """(artefact rows, part rows), tab separated, in a stable order."""
    artefacts = ["input\tfile\tline\tkind\treason"]
    parts = ["input\tfile\tline\tkind\treason"]
    for label, source, what in _inputs():
        for files in _files(source, what):
            for a in recognise(files, catalogue)[0]:
                artefacts.append(
                    f"{label}\t{a.file.name}\t{a.first_line}\t{a.kind}\t{_one_line(a.reason)}"
                )
            for f in files:
                text = _text(f)
                if text is None:
                    continue
                kind, reason = sniff(text, catalogue)
                parts.append(f"{label}\t{f.name}\twhole\t{kind}\t{_one_line(reason)}")
                for first, part in _paragraphs(text):
                    kind, reason = sniff(part, catalogue)
                    parts.append(f"{label}\t{f.name}\t{first}\t{kind}\t{_one_line(reason)}")
    return artefacts, parts


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    cur: list[str] = []
    start = 1
    for i, line in enumerate(text.split("\n"), 1):
        if line.strip():
            if not cur:
                start = i
            cur.append(line)
        elif cur:
            yield start, "\n".join(cur)
            cur = []
    if cur:
        yield start, "\n".join(cur)


def main() -> None:
    from analyzer.rules.loader import load_ruleset

    artefacts, parts = tables(load_ruleset().catalogue)
    if "--write" in sys.argv:
        ARTEFACTS.write_text("\n".join(artefacts) + "\n", encoding="utf-8")
        PARTS.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"{len(artefacts) - 1} artefacts, {len(parts) - 1} parts")


if __name__ == "__main__":
    main()
