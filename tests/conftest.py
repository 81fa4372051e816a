from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.analyze import analyze_parsed
from analyzer.bundle.reader import BundleReader
from analyzer.pipeline import parse_files
from analyzer.rules.loader import load_ruleset

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SAMPLES = REPO / "sample_bundles"


@pytest.fixture(scope="session")
def ruleset():
    return load_ruleset()


def parse_texts(ruleset, files: dict[str, str | bytes]):
    reader = BundleReader()
    try:
        for name, content in files.items():
            reader.add_bytes(name, content if isinstance(content, bytes) else content.encode())
        return parse_files(reader, ruleset)
    finally:
        reader.close()


def diagnose_texts(ruleset, files: dict[str, str | bytes], node: str | None = None):
    return analyze_parsed(parse_texts(ruleset, files), ruleset, node)


def fired(diags) -> set[str]:
    return {f.rule_id for d in diags for f in d.findings}
