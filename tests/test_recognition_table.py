"""Recognition does not drift: every file of the sample bundles and of ../shared/corpus is
recognised as the reviewed tables in tests/golden/ say (kind, first line and reason of each
artefact; kind and reason of each file and each of its blank-line separated parts). A deliberate
change rewrites them with `tests/recognition_table.py --write`, and its diff is read in review."""

from __future__ import annotations

import difflib

import pytest
from recognition_table import ARTEFACTS, CORPUS, PARTS, tables


def _expected(path, have_corpus: bool) -> list[str]:
    rows = path.read_text(encoding="utf-8").splitlines()
    return rows if have_corpus else [r for r in rows if not r.startswith("corpus/")]


@pytest.fixture(scope="module")
def computed(ruleset):
    return tables(ruleset.catalogue)


@pytest.mark.parametrize("which", ["artefacts", "parts"])
def test_recognition_matches_the_reviewed_table(computed, which):
    path, got = (ARTEFACTS, computed[0]) if which == "artefacts" else (PARTS, computed[1])
    assert len(path.read_text(encoding="utf-8").splitlines()) > 100, f"{path} lost its rows"
    want = _expected(path, CORPUS.is_dir())
    assert want, f"{path} holds no row of the sample bundles"
    diff = list(difflib.unified_diff(want, got, str(path), "recognised now", lineterm="", n=0))
    assert not diff, "\n".join(diff[:60])
