"""Fact producers are ordered from what they declare they read and write, not from the order they
are listed in: the facts of a sample are the same whichever order the table is written in, and a
cycle, a read nobody writes, an undeclared product or an undeclared fact is an error."""

from __future__ import annotations

import dataclasses
import re

import pytest

from analyzer.facts import producers
from analyzer.facts.context import build_contexts
from analyzer.facts.model import FactSet
from analyzer.facts.producers import (
    PRODUCERS,
    Producer,
    ProducerGraphError,
    Sources,
    check_registry,
    ordered,
)
from conftest import SAMPLES, parse_texts


def _noop(src, facts):
    return None


def test_each_producer_runs_after_every_producer_it_reads_from():
    order = [p.name for p in ordered(tuple(reversed(PRODUCERS)))]
    assert order.index("node") < order.index("register") < order.index("selector")
    assert order.index("pod") < order.index("selector")
    assert order.index("register") < order.index("version")
    assert order.index("handshake") < order.index("version")
    assert order.index("config") < order.index("version")
    assert order.index("clock") < order.index("handshake")
    assert sorted(order) == sorted(p.name for p in PRODUCERS)


def test_the_written_order_is_kept_where_nothing_forces_another():
    assert [p.name for p in producers.ORDER] == [p.name for p in PRODUCERS]


def _facts(ruleset, files):
    bundle = parse_texts(ruleset, files)
    return [
        (c.facts.facts, c.facts.known, c.version)
        for c in build_contexts(bundle, ruleset.fact_inputs).contexts
    ]


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_the_facts_do_not_depend_on_the_order_of_the_table(ruleset, monkeypatch, sample):
    files = {p.name: p.read_bytes() for p in (SAMPLES / sample / "bundle").iterdir() if p.is_file()}
    want = _facts(ruleset, files)
    monkeypatch.setattr(producers, "ORDER", ordered(tuple(reversed(PRODUCERS))))
    assert [p.name for p in producers.ORDER] != [p.name for p in PRODUCERS]
    assert _facts(ruleset, files) == want
    assert want and want[0][0], "the sample produced no facts"


def test_a_cycle_is_an_error():
    a = Producer("a", ("b.x",), ("a.",), _noop)
    b = Producer("b", ("a.y",), ("b.",), _noop)
    with pytest.raises(ProducerGraphError, match=re.escape("cycle: a (after b), b (after a)")):
        ordered((a, b))


def test_a_read_nobody_writes_is_an_error():
    a = Producer("a", ("ghost.value",), ("a.",), _noop)
    with pytest.raises(
        ProducerGraphError,
        match=re.escape("producer a reads 'ghost.value', which no producer writes"),
    ):
        ordered((a,))


def test_a_product_must_be_declared():
    rogue = Producer("rogue", (), ("rogue.",), lambda src, facts: {"register": None})
    src = Sources(None, None, None, None, None, None, {}, None, [], [])
    with pytest.raises(ProducerGraphError, match=re.escape("rogue made undeclared ['@register']")):
        producers.run((rogue,), src, FactSet())


def test_every_registry_fact_is_written_by_the_producer_it_names():
    assert check_registry(PRODUCERS) == []
    node = next(p for p in PRODUCERS if p.name == "node")
    narrowed = tuple(
        dataclasses.replace(p, writes=("node.labels.",)) if p is node else p for p in PRODUCERS
    )
    problems = check_registry(narrowed)
    assert "fact node.taints: producer node does not declare writing it" in problems
    without = tuple(p for p in PRODUCERS if p.name != "lease")
    assert "fact lease.holder: producer 'lease' does not exist" in check_registry(without)


@pytest.mark.parametrize("whole", [True, False], ids=["as-values", "by-query"])
@pytest.mark.parametrize(
    "text, fact, value",
    [
        (
            "NAME  DESIRED  CURRENT  READY  UP-TO-DATE  AVAILABLE  NODE SELECTOR  AGE\n"
            "nvdp-nvidia-device-plugin  0  0  0  0  0  <none>  3m\n",
            "device_plugin_ds.desired",
            0,
        ),
        (
            "Name:  hami-device-plugin\nDesired Number of Nodes Scheduled: 2\n",
            "device_plugin_ds.desired",
            2,
        ),
        (
            "$ kubectl get pods -n kube-system -l app=hami-device-plugin\n"
            "No resources found in kube-system namespace.\n",
            "device_plugin_pods.listed",
            0,
        ),
        (  # the plugin's pods are there
            "$ kubectl get pods -n kube-system -l app=hami-device-plugin\n"
            "NAME                       READY   STATUS\nhami-device-plugin-x2k9p   2/2     Running\n",
            "device_plugin_pods.listed",
            None,
        ),
    ],
)
def test_a_logs_mention_is_found_as_values_and_by_query_alike(
    monkeypatch, text, fact, value, whole
):
    """A few lines are searched in Python, more by polars' query: the same facts either way
    (the search only spares the line loops a text that holds none of their words)."""
    from analyzer.dev.samples import parsed
    from analyzer.facts import workloads

    if not whole:
        monkeypatch.setattr(workloads, "READ_WHOLE_ROWS", -1)
    facts = FactSet()
    workloads.produce([parsed(text)], facts)
    assert facts.value(fact) == value
