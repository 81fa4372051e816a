"""The dev tools work from an install: without the checkout's samples they say so in one line."""

from __future__ import annotations

import re

import pytest

from analyzer.dev import sample_bundles
from analyzer.dev.synth import make_tickets
from analyzer.errors import AnalyzerError
from conftest import REPO


def test_synth_without_samples_is_one_clear_line(tmp_path):
    missing = tmp_path / "no-samples"
    with pytest.raises(AnalyzerError) as err:
        make_tickets(tmp_path / "out", 3, samples=missing)
    assert str(err.value).startswith(f"no sample bundles at {missing}:")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()  # nothing written before the check


def test_synth_takes_a_samples_folder(tmp_path):
    samples = tmp_path / "samples"
    (samples / "one" / "bundle").mkdir(parents=True)
    (samples / "one" / "bundle" / "node.yaml").write_text("name: gpu-node-a\n")
    made = make_tickets(tmp_path / "out", 20, samples=samples)
    assert len(made) == 20
    # the tickets are built from that one sample, each with a node name of its own (duplicates
    # copy an earlier ticket, so a name can repeat)
    names = {(p / "node.yaml").read_text() for p in made if (p / "node.yaml").is_file()}
    assert names and all(re.fullmatch(r"name: gpu-\d{5}-a\n", n) for n in names), names


def test_checkout_samples_are_found_by_default():
    assert sample_bundles() == REPO / "sample_bundles"


def test_the_mypy_baseline_only_shrinks(tmp_path, monkeypatch, capsys):
    """tools/mypy_baseline.py: a new error fails, a fixed one fails until the baseline shrinks."""
    import importlib.util
    from collections import Counter

    spec = importlib.util.spec_from_file_location(
        "mypy_baseline", REPO / "tools" / "mypy_baseline.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setattr(tool, "BASELINE", tmp_path / "baseline.txt")
    old = "analyzer/x.py: Incompatible types  [assignment]"
    new = 'analyzer/y.py: "None" not callable  [misc]'
    monkeypatch.setattr(tool, "current", lambda: Counter([old]))
    assert tool.main(["--update"]) == 0 and tool.read_baseline() == Counter([old])
    assert tool.main([]) == 0
    monkeypatch.setattr(tool, "current", lambda: Counter([old, new]))
    assert tool.main([]) == 1 and f"new mypy error: {new}" in capsys.readouterr().err
    assert tool.main(["--update"]) == 1  # never grows
    monkeypatch.setattr(tool, "current", lambda: Counter())
    assert tool.main([]) == 1 and "--update" in capsys.readouterr().err
    assert tool.main(["--update"]) == 0 and tool.read_baseline() == Counter()
    # facts/, rules/ and report/ must stay clean: a baseline line accepting an error there fails
    clean = "analyzer/rules/engine.py: Incompatible types  [assignment]"
    (tmp_path / "baseline.txt").write_text(f"{clean}\n")
    monkeypatch.setattr(tool, "current", lambda: Counter([clean]))
    assert tool.main([]) == 1
    assert f"must stay clean: {clean}" in capsys.readouterr().err
