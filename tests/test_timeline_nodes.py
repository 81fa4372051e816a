"""`timeline` on a multi-node bundle without `--node`: it prints the first node's events, says
which nodes it left out and how to see them (text: its first line; CSV/JSON/parquet: a `node`
column, a note on stderr, parquet metadata), and builds only the facts of the node it prints."""

from __future__ import annotations

import json

import polars as pl
import pytest

from analyzer.analyze import first_timeline, load_bundle
from conftest import SAMPLES, run_cli

TWO = SAMPLES / "two-nodes-one-plugin-crash" / "bundle"
ONE = SAMPLES / "healthy-single-gpu" / "bundle"
NOTE = (
    "timeline of node gpu-node-1, the first of the bundle's 2 nodes; not shown: gpu-node-2 "
    "(see one with --node NAME, e.g. --node gpu-node-2)"
)
N1_FILES = {"device-plugin-gpu-node-1.log", "node-1.yaml", "scheduler.log"}


def test_text_names_the_nodes_left_out_in_its_first_line():
    proc = run_cli("timeline", str(TWO))
    assert proc.returncode == 0, proc.stderr
    first, *events = proc.stdout.splitlines()
    assert first == f"# {NOTE}"
    assert {e.split()[4].rsplit(":", 1)[0] for e in events} == N1_FILES
    assert NOTE not in proc.stderr  # said once on a terminal


def test_text_to_a_file_says_it_in_the_file_and_on_stderr(tmp_path):
    out = tmp_path / "t.txt"
    proc = run_cli("timeline", str(TWO), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().splitlines()[0] == f"# {NOTE}"
    assert proc.stderr.strip().splitlines()[-1] == f"note: {NOTE}"


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_row_formats_name_each_rows_node_and_say_the_rest_on_stderr(fmt):
    proc = run_cli("timeline", str(TWO), "-f", fmt)
    assert proc.returncode == 0, proc.stderr
    frame = (
        pl.read_csv(proc.stdout.encode()) if fmt == "csv" else pl.DataFrame(json.loads(proc.stdout))
    )
    assert frame.columns[-1] == "node" and set(frame["node"]) == {"gpu-node-1"}
    assert set(frame["file"]) == N1_FILES
    assert proc.stderr.strip().splitlines()[-1] == f"note: {NOTE}"


def test_parquet_keeps_the_node_and_the_nodes_not_shown(tmp_path):
    out = tmp_path / "t.parquet"
    proc = run_cli("timeline", str(TWO), "-f", "parquet", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    meta = pl.read_parquet_metadata(out)
    assert (meta["node"], meta["nodes_not_shown"]) == ("gpu-node-1", "gpu-node-2")
    assert set(pl.read_parquet(out)["node"]) == {"gpu-node-1"}
    assert proc.stderr.strip().splitlines()[-1] == f"note: {NOTE}"


def test_a_chosen_node_or_a_single_node_bundle_leaves_nothing_out(tmp_path):
    for args in ((str(TWO), "--node", "gpu-node-2"), (str(ONE),)):
        proc = run_cli("timeline", *args)
        assert proc.returncode == 0, proc.stderr
        assert not proc.stdout.startswith("#") and "not shown" not in proc.stderr
    proc = run_cli("timeline", str(TWO), "--node", "gpu-node-2", "-f", "csv")
    assert set(pl.read_csv(proc.stdout.encode())["node"]) == {"gpu-node-2"}
    out = tmp_path / "one.parquet"
    run_cli("timeline", str(ONE), "-f", "parquet", "-o", str(out))
    assert pl.read_parquet_metadata(out)["nodes_not_shown"] == ""


def test_only_the_printed_nodes_facts_are_built(ruleset, monkeypatch):
    """The facts stage builds one node's context for `timeline`, from that node's inputs."""
    import analyzer.facts.context as context_mod

    built: list[str | None] = []
    real = context_mod._context

    def counting(bundle, inputs, node, *rest):
        built.append(node.name if node is not None else None)
        return real(bundle, inputs, node, *rest)

    monkeypatch.setattr(context_mod, "_context", counting)
    bundle = load_bundle([str(TWO)], ruleset)
    shown, timeline = first_timeline(bundle, ruleset)
    assert built == ["gpu-node-1"]
    assert (shown.node, shown.others) == ("gpu-node-1", ("gpu-node-2",))
    assert set(timeline.frame["file"]) == N1_FILES
    built.clear()
    shown, timeline = first_timeline(bundle, ruleset, "gpu-node-2")
    assert built == ["gpu-node-2"] and shown.others == ()
    assert "device-plugin-gpu-node-1.log" not in set(timeline.frame["file"])
