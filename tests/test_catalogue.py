"""The kind catalogue (rules/kinds.yaml) walked kind by kind: each kind is recognised by a
declaration (its `recognise:` entries, its `k8s_kind`, its log `markers`) or assigned by the one
module it names, has a parser of the registry, and has an example file in tests/kinds/ that is
recognised as that kind and parsed into something. Adding a kind needs a catalogue entry only
(plus a parser or producer when none fits), and a broken recognition entry is a load error that
names the file and line."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.analyze import matcher_for
from analyzer.bundle.probes import (
    MarkerStep,
    ObjectStep,
    Probe,
    Text,
    compile_recognition,
    recognition_of,
)
from analyzer.bundle.reader import BundleReader, open_bundle
from analyzer.bundle.sniff import sniff
from analyzer.catalogue.kinds import load_catalogue
from analyzer.errors import RuleLoadError
from analyzer.parse.registry import PARSERS, check_parsers
from analyzer.pipeline import parse_files
from analyzer.rules.loader import load_ruleset
from conftest import REPO

EXAMPLES = REPO / "tests" / "kinds"
KINDS_YAML = REPO / "rules" / "kinds.yaml"
CATALOGUE = load_ruleset().catalogue
KIND_IDS = list(CATALOGUE.kinds)


def _example(kid: str) -> Path | None:
    return next((p for p in sorted(EXAMPLES.iterdir()) if p.name.split(".")[0] == kid), None)


@pytest.mark.parametrize("kid", KIND_IDS)
def test_each_kind_is_recognised_by_a_declaration(kid):
    k = CATALOGUE[kid]
    steps = recognition_of(CATALOGUE).steps
    ways = []
    if k.recognise:
        ways.append("recognise")
    if k.k8s_kinds and any(isinstance(s, ObjectStep) for s in steps):
        ways.append("k8s_kind")
    if k.marker is not None and k.is_log and any(isinstance(s, MarkerStep) for s in steps):
        ways.append("markers")
    if k.assigned_by:
        source = (REPO / k.assigned_by).read_text(encoding="utf-8")
        assert f'"{kid}"' in source, f"{k.assigned_by} does not assign {kid}"
        ways.append("assigned")
    assert ways, f"kind {kid} has no recognition in rules/kinds.yaml"
    assert not (k.assigned_by and len(ways) > 1), f"{kid}: assigned and recognised both"


@pytest.mark.parametrize("kid", KIND_IDS)
def test_each_kind_has_a_parser_of_the_registry(kid):
    k = CATALOGUE[kid]
    if k.family == "junk":
        assert not k.parsers, f"{kid}: junk is never parsed"
    else:
        assert k.parsers, f"{kid}: no parser"
        for name in k.parsers:
            assert name in PARSERS, f"{kid}: parser {name!r} not in analyzer/parse/registry.py"


@pytest.mark.parametrize("kid", KIND_IDS)
def test_each_kind_has_an_example_recognised_and_parsed_as_it(ruleset, kid):
    k = CATALOGUE[kid]
    example = _example(kid)
    if example is None:
        assert k.assigned_by, f"no example file tests/kinds/{kid}.* for kind {kid}"
        pytest.skip(f"{kid} is assigned by {k.assigned_by}, not recognised from content")
    with open_bundle([str(example)]) as reader:
        bundle = parse_files(reader, ruleset.catalogue, matcher_for(ruleset))
    assert [a.kind for a in bundle.artefacts] == [kid]
    for name in k.parsers:
        if PARSERS[name].into:
            made = getattr(bundle, PARSERS[name].into)
            assert made, f"parser {name} made nothing of {example.name}"
    if k.scanned:
        assert [log.artefact.kind for log in bundle.logs] == [kid]


def test_every_example_is_of_a_catalogued_kind():
    strays = [p.name for p in EXAMPLES.iterdir() if p.name.split(".")[0] not in CATALOGUE]
    assert not strays


NEW_KIND = """
  mig-parted-config:
    title: nvidia-mig-parted configuration (the MIG layouts a node may take)
    family: config
    parser: config
    where: node
    collect: cat /etc/nvidia-mig-manager/config.yaml > mig-parted-config.yaml
    recognise:
      - order: 26
        all_lines: ['^version:\\s*v1\\s*$', '^mig-configs:\\s*$']
        reason: has mig-configs (nvidia-mig-parted)
"""
MIG_CONFIG = """version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
"""


def test_adding_a_kind_is_one_catalogue_entry(tmp_path, ruleset):
    text = KINDS_YAML.read_text(encoding="utf-8")
    (tmp_path / "kinds.yaml").write_text(text.rstrip("\n") + "\n" + NEW_KIND, encoding="utf-8")
    catalogue = load_catalogue(tmp_path / "kinds.yaml")
    check_parsers(catalogue)
    assert sniff(MIG_CONFIG, ruleset.catalogue)[0] == "text"  # unknown before the entry
    assert sniff(MIG_CONFIG, catalogue) == (
        "mig-parted-config",
        "has mig-configs (nvidia-mig-parted)",
    )
    reader = BundleReader()
    try:
        reader.add_bytes("mig.yaml", MIG_CONFIG.encode())
        bundle = parse_files(reader, catalogue, matcher_for(ruleset))
    finally:
        reader.close()
    assert [c.kind for c in bundle.configs] == ["mig-parted-config"]


def _broken(tmp_path, entry: str) -> list[str]:
    """Load the built-in catalogue with one kind's recognise entries replaced by `entry`."""
    text = KINDS_YAML.read_text(encoding="utf-8")
    start = text.index("      - order: 20\n")
    end = text.index("        reason: has cdiVersion\n") + len("        reason: has cdiVersion\n")
    (tmp_path / "kinds.yaml").write_text(text[:start] + entry + text[end:], encoding="utf-8")
    line = text[:start].count("\n") + 1
    catalogue = load_catalogue(tmp_path / "kinds.yaml")
    with pytest.raises(RuleLoadError) as exc:
        compile_recognition(catalogue)
    return [p for p in exc.value.problems if re.match(rf".*kinds\.yaml:{line}: ", p)]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("      - order: 20\n        line: '^cdiVersion:'\n", "needs a reason"),
        (
            "      - order: 20\n        lines: x\n        reason: r\n",
            "unknown recognise key 'lines'",
        ),
        ("      - order: 20\n        line: '^(cdi'\n        reason: r\n", "bad regex '^(cdi'"),
        (  # a list's bad part is named, not the alternation
            "      - order: 20\n        line: ['^ok', '^(cdi']\n        reason: r\n",
            "bad regex '^(cdi'",
        ),
        (  # parts that compile alone but not joined: a global flag not at the start
            "      - order: 20\n        line: ['^ok', '(?i)^cdi']\n        reason: r\n",
            "bad regex '^ok|(?i)^cdi'",
        ),
        ("      - order: 20\n        reason: r\n", "states no condition"),
        ("      - line: x\n        reason: r\n", "needs an order"),
        (
            "      - order: 20\n        no_line: '@nope'\n        reason: r\n",
            "unknown named pattern",
        ),
        (
            "      - order: 20\n        sections: {pattern: '^x:'}\n        reason: r\n",
            "must capture exactly one group",
        ),
        ("      - order: 20\n        line: x\n        reason: '{nope}'\n", "unknown placeholder"),
        ("      - order: 40\n        line: x\n        reason: r\n", "also node-describe's"),
        (
            "      - order: 20\n        otherwise: true\n        reason: r\n",
            "only one kind may be the last resort",
        ),
        (
            "      - order: 200\n        otherwise: true\n        reason: r\n",
            "only one kind may be the last resort",
        ),
        (
            "      - order: 20\n        min_lines: 2\n        blank: true\n        reason: r\n",
            "min_lines",
        ),
    ],
)
def test_a_broken_recognition_entry_is_an_error_at_its_line(tmp_path, entry, says):
    at_the_entry = _broken(tmp_path, entry)
    assert any(says in p for p in at_the_entry), at_the_entry


def test_an_unknown_parser_is_an_error_at_the_kind(tmp_path):
    text = KINDS_YAML.read_text(encoding="utf-8").replace(
        "    parser: manifest\n", "    parser: manifesto\n"
    )
    (tmp_path / "kinds.yaml").write_text(text, encoding="utf-8")
    line = text[: text.index("  collect-manifest:\n")].count("\n") + 1
    with pytest.raises(RuleLoadError) as exc:
        check_parsers(load_catalogue(tmp_path / "kinds.yaml"))
    assert exc.value.problems == [
        f"{tmp_path / 'kinds.yaml'}:{line}: kind collect-manifest: parser 'manifesto' is not one"
        f" of {sorted(PARSERS)}"
    ]


# Two recognitions the Python branches got wrong, fixed when they became entries: "no klog line"
# matched only a text that was one klog line, and a List of NodeMetrics counted as Nodes.
KLOG_WITH_A_POD_ROW = """\
I0815 10:00:00.000000       1 main.go:10] waiting for the device plugin pod
kube-system   hami-device-plugin-7xk2p   2/2     Running   0          3d
I0815 10:00:05.000000       1 main.go:12] still waiting
"""
NODE_METRICS_LIST = """\
apiVersion: v1
items:
- apiVersion: metrics.k8s.io/v1beta1
  kind: NodeMetrics
  metadata:
    name: gpu-node-1
kind: List
"""


def test_a_log_quoting_a_pod_row_is_no_pods_list(ruleset):
    assert sniff(KLOG_WITH_A_POD_ROW, ruleset.catalogue)[0] == "klog"
    rows = "\n".join(x for x in KLOG_WITH_A_POD_ROW.splitlines() if "Running" in x)
    assert sniff(rows, ruleset.catalogue)[0] == "pods-list"


def test_a_list_of_node_metrics_is_no_node(ruleset):
    assert sniff(NODE_METRICS_LIST, ruleset.catalogue)[0] == "text"
    nodes = NODE_METRICS_LIST.replace("metrics.k8s.io/v1beta1", "v1").replace("NodeMetrics", "Node")
    assert sniff(nodes, ruleset.catalogue) == ("node", "kind: List whose items are Nodes")


def _marker_step(with_literals: bool) -> MarkerStep:
    step = next(s for s in recognition_of(CATALOGUE).steps if isinstance(s, MarkerStep))
    if with_literals:
        return step
    return dataclasses.replace(step, markers=tuple((k, m, None) for k, m, _ in step.markers))


def test_recognitions_literals_are_known():
    """The marker vote looks for each kind's literals before it searches a line, and most
    probes for their patterns' literals before they search a text."""
    step = _marker_step(True)
    assert step.markers and all(literals for _kid, _marker, literals in step.markers)
    probes = [s for s in recognition_of(CATALOGUE).steps if isinstance(s, Probe)]
    assert sum(bool(p.needs) for p in probes) > len(probes) // 2


# pieces of texts: recognition's literals and the first lines of each kind's example file
RECOGNITION_PIECES = sorted(
    {x for literals in CATALOGUE.literals.values() for x in literals}
    | {
        line
        for p in sorted(EXAMPLES.iterdir())
        for line in p.read_bytes()[:4000].decode("utf-8", "replace").splitlines()[:20]
    }
)
TEXTS = st.lists(
    st.lists(
        st.one_of(
            st.sampled_from(RECOGNITION_PIECES),
            st.text(st.sampled_from('abcdeknorstvw 0123456789:.[]/"-_\u212a重\t'), max_size=20),
        ),
        max_size=4,
    ).map("".join),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(lines=TEXTS)
def test_the_marker_vote_with_literals_is_the_vote_without(lines):
    """A line without any of a kind's marker literals is not searched: the same kind wins,
    with the same counts, as when every line is searched."""
    text = "\n".join(lines)
    found = [_marker_step(x).attempt(Text(text, len(lines)), None) for x in (True, False)]
    assert found[0] == found[1]


WITHOUT_LITERALS = dataclasses.replace(CATALOGUE, literals={})


@settings(max_examples=200, deadline=None)
@given(lines=TEXTS)
def test_recognition_with_literals_is_recognition_without(lines):
    """A probe does not search a text without its patterns' literals: every text gets the
    kind and reason it gets when every pattern is searched."""
    text = "\n".join(lines)
    assert sniff(text, CATALOGUE) == sniff(text, WITHOUT_LITERALS)


# What makes a workload's template a pod, and which lines open a record, are the catalogue's
# data: a kind that declares no `pod_templates:` has no template read, and a tag declared under
# `record_start:` stops the terminal-wrap rejoin in any pasted text.
GPU_JOB = """\
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      containers: [{name: c, resources: {limits: {example.com/widget: 1}}}]
"""


def _catalogue_with(tmp_path, old: str, new: str):
    text = KINDS_YAML.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / "kinds.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_catalogue(tmp_path / "kinds.yaml")


def _pods_of(catalogue, text: str) -> list:
    from analyzer.dev.samples import artefact
    from analyzer.parse.registry import PARSERS
    from analyzer.structured import Documents

    a = artefact("workload", text, "job.yaml")
    return PARSERS["pod"].parse(a, catalogue["workload"], Documents(text)).items


def test_a_template_is_a_pod_only_for_a_resource_the_kind_declares(tmp_path):
    assert _pods_of(CATALOGUE, GPU_JOB) == []  # a widget is no accelerator
    assert [
        p.owner
        for p in _pods_of(CATALOGUE, GPU_JOB.replace("example.com/widget", "nvidia.com/gpu"))
    ] == ["Job/train"]
    widened = _catalogue_with(
        tmp_path, "    pod_templates: *accelerators\n", "    pod_templates: ['/widget$']\n"
    )
    assert [p.owner for p in _pods_of(widened, GPU_JOB)] == ["Job/train"]
    undeclared = _catalogue_with(tmp_path, "    pod_templates: *accelerators\n", "")
    gpu_job = GPU_JOB.replace("example.com/widget", "nvidia.com/gpu")
    assert _pods_of(undeclared, gpu_job) == []


def test_a_declared_record_start_stops_the_terminal_wrap_rejoin(tmp_path):
    from analyzer.bundle.text import rejoin_hard_wraps

    repeated = ["[HAMI-core Msg(29:1:utils.c:27)]: lock " + "x" * 40] * 5
    assert rejoin_hard_wraps(repeated, True, CATALOGUE.record_start)[0] == repeated
    assert len(rejoin_hard_wraps(repeated, True, None)[0]) < len(repeated)  # read as one wrap
    other = [line.replace("[HAMI-core ", "[OTHER-tag ") for line in repeated]
    assert len(rejoin_hard_wraps(other, True, CATALOGUE.record_start)[0]) < len(other)
    declared = _catalogue_with(
        tmp_path,
        "    record_start: ['\\[(?:HAMI-core|4pdvGPU) ']\n",
        "    record_start: ['\\[(?:HAMI-core|4pdvGPU) ', '\\[OTHER-tag ']\n",
    )
    assert rejoin_hard_wraps(other, True, declared.record_start)[0] == other


def test_a_bad_record_start_is_an_error_at_the_kind(tmp_path):
    with pytest.raises(RuleLoadError) as exc:
        _catalogue_with(
            tmp_path,
            "    record_start: ['\\[(?:HAMI-core|4pdvGPU) ']\n",
            "    record_start: ['[unclosed']\n",
        )
    assert any("kind workload-log: bad record_start '[unclosed'" in p for p in exc.value.problems)


def test_the_parsers_of_a_kind_share_its_documents(monkeypatch):
    """A Deployment is read as a config (HAMi's namespace) and as a pod (its GPU template): both
    from one load of its YAML, each with what it reads."""
    import analyzer.structured as structured
    from analyzer.dev.samples import artefact
    from analyzer.parse.registry import parse_artefact

    loads: list[str] = []
    real = structured.load_documents
    monkeypatch.setattr(structured, "load_documents", lambda text: loads.append(text) or real(text))
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: train, namespace: ml}\nspec:\n"
        "  template:\n    spec:\n      containers:\n      - name: c\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    parsed = parse_artefact(artefact("deployment", text, "deploy.yaml"), CATALOGUE["deployment"])
    assert [parser.into for parser, _ in parsed] == ["configs", "pods"]
    (config,), (pod,) = (p.items for _, p in parsed)
    assert config.values["metadata.namespace"] == "ml"
    assert (pod.owner, pod.namespace) == ("Deployment/train", "ml")
    assert loads == [text]


def test_a_parsers_warnings_stay_its_own():
    """The parsers of one artefact share its documents, not the list of warnings each adds to."""
    from analyzer.structured import Documents

    documents = Documents("kind: Node\nmetadata: {name: a\n")  # a YAML error: one warning
    docs, warnings = documents.loaded
    warnings.append("a parser's own note")
    assert documents.loaded[1] == warnings[:-1]
    assert documents.loaded[0] is docs
