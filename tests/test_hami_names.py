"""Which names are HAMi's is declared once (rules/kinds.yaml `hami:`, analyzer/catalogue/hami.py)
and read by all who ask: the namespace fact, the `pods-hami-device-plugin` signature, the version
of an image, and `collect` (its pods' label selector and install, its objects by name). Before,
each kept its own list, and they disagreed: the signature did not know the pods of a `hami-vgpu`
release or of the v2.2 `vgpu` chart, the namespace fact did not know a release named `myhami`."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.catalogue.kinds import load_catalogue
from analyzer.collect import discover, select
from analyzer.errors import RuleLoadError
from analyzer.facts import namespace
from analyzer.facts.model import FactSet
from analyzer.facts.version import infer
from analyzer.parse.pod_table import PodTable, pod_rows
from analyzer.rules import builtin_rules_dir
from analyzer.rules.loader import load_ruleset
from conftest import diagnose_texts

HEADER = "NAMESPACE   NAME   READY   STATUS   RESTARTS   AGE\n"
# (pod, HAMi's): helm names the plugin <fullname>-device-plugin, the fullname being the release
# name when it contains the chart's name, else <release>-hami (the chart before v2.3: vgpu)
PLUGIN_PODS = [
    ("hami-device-plugin-7xk2p", True),
    ("my-hami-device-plugin-7xk2p", True),
    ("myhami-device-plugin-7xk2p", True),  # release `myhami`: the namespace fact missed it
    ("hami-vgpu-device-plugin-7xk2p", True),  # release `hami-vgpu`: the signature missed it
    ("vgpu-device-plugin-7xk2p", True),  # the v2.2 chart: the signature missed it
    ("nvidia-device-plugin-daemonset-7xk2p", False),
    ("nvdp-nvidia-device-plugin-7xk2p", False),
    ("gpu-feature-discovery-7xk2p", False),
]


@pytest.mark.parametrize(("pod", "hamis"), PLUGIN_PODS)
def test_the_namespace_fact_and_the_signature_agree_on_hamis_plugin_pods(ruleset, pod, hamis):
    """A crash-looping row in namespace `gpu`: HAMi's plugin pod both says where HAMi runs and
    is what `pods-hami-device-plugin` reads (the crash rule's evidence)."""
    table = HEADER + f"gpu   {pod}   1/2   CrashLoopBackOff   12   3d\n"
    report = diagnose_texts(ruleset, {"pods.txt": table})
    node = report.nodes[0]
    assert (node.namespace.name == "gpu" and node.namespace.stated) is hamis
    read_by = {e.signature for f in node.all_findings() for e in f.evidence}
    assert ("pods-hami-device-plugin" in read_by) is hamis


def _catalogue(tmp_path: Path, replace: dict[str, str]):
    text = (builtin_rules_dir() / "kinds.yaml").read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    (tmp_path / "kinds.yaml").write_text(text, encoding="utf-8")
    return load_catalogue(tmp_path / "kinds.yaml")


def test_every_reader_reads_the_declaration(tmp_path):
    """One more name, label and image in kinds.yaml, and nothing else changed: every reader
    knows them."""
    cat = _catalogue(
        tmp_path,
        {
            "names: [hami, vgpu, 4pd]": "names: [hami, vgpu, 4pd, acme]",
            "component_labels: [hami, 4pd]": "component_labels: [hami, 4pd, acme]",
            "images: [hami, ": "images: [acme-gpu, hami, ",
        },
    )
    hami = cat.hami
    # the namespace fact
    rows = HEADER + "acme-system   acme-device-plugin-7xk2p   2/2   Running   0   1d\n"
    table = PodTable("pods.txt", 1, tuple(pod_rows(rows.splitlines(), "pods.txt")))
    fs = FactSet()
    namespace.produce([], [], [], [table], hami, fs)
    assert fs.value("hami.namespace") == "acme-system"
    # the version of a node's image
    version, _ = infer(None, None, None, None, {}, {}, ["reg/acme-gpu:v2.7.1"], [], hami)
    assert str(version.range) == "v2.7.1"
    # collect: the selector, the install its pods make, its objects by name
    assert "acme-device-plugin" in discover.selector(hami)
    pod = {
        "metadata": {
            "name": "x-1",
            "namespace": "acme-system",
            "labels": {discover.COMPONENT: "acme-device-plugin"},
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "device-plugin"}]},
        "status": {"phase": "Running"},
    }
    assert discover.find_install({"items": [pod]}, hami).namespace == "acme-system"
    cms = [select.Listed("acme-system", "acme-scheduler-newversion", {})]
    assert select.configmaps(cms, None, hami) == cms
    # a signature's {hami:device-plugin}
    assert "acme" in hami.expand("(?P<pod>{hami:device-plugin}-[a-z0-9]{5})")


def test_the_builtin_signature_reads_the_declaration(ruleset):
    sig = ruleset.signatures["pods-hami-device-plugin"]
    assert ruleset.catalogue.hami.workload_pattern("device-plugin") in sig.pattern
    assert "{hami:" not in sig.pattern


def test_an_unknown_workload_in_a_signature_is_a_load_error(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "signatures:\n"
        "  - id: my-operator-pods\n"
        "    component: kubectl\n"
        "    origin: a test\n"
        "    source: [pods-list]\n"
        "    regex: '(?P<pod>{hami:operator}-[a-z0-9]{5})'\n"
        "    meaning: A pod.\n",
        encoding="utf-8",
    )
    with pytest.raises(RuleLoadError) as exc:
        load_ruleset([tmp_path], use_cache=False)
    assert any(
        "mine.yaml:2" in p and "HAMi has no workload 'operator'" in p for p in exc.value.problems
    ), exc.value.problems


@pytest.mark.parametrize(
    ("replace", "says"),
    [
        ({"  workloads: [device-plugin, scheduler]\n": ""}, "workloads: expected a non-empty list"),
        ({"names: [hami, vgpu, 4pd]": "names: [HAMi]"}, "names: not a lower-case name"),
        ({"  names: [hami": "  name: [x]\n  names: [hami"}, "unknown key 'name'"),
    ],
)
def test_a_broken_declaration_is_an_error_at_its_line(tmp_path, replace, says):
    with pytest.raises(RuleLoadError) as exc:
        _catalogue(tmp_path, replace)
    assert any(says in p and "kinds.yaml:" in p for p in exc.value.problems), exc.value.problems


def test_analyze_names_the_namespace_of_a_myhami_release(tmp_path, ruleset):
    """End to end: a `kubectl get pods -A` of a release named `myhami` in `gpu`."""
    (tmp_path / "pods.txt").write_text(
        HEADER + "gpu   myhami-scheduler-5d9f7-abcde   2/2   Running   0   1d\n"
    )
    (tmp_path / "node.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n"
        "status:\n  allocatable:\n    nvidia.com/gpu: '4'\n"
    )
    report = analyze([str(tmp_path)], AnalyzeOptions(ruleset=ruleset)).report
    assert [(n.namespace.name, n.namespace.how) for n in report.nodes] == [
        (
            "gpu",
            "Commands use HAMi's namespace gpu: NAMESPACE of pod myhami-scheduler-5d9f7-abcde (pods.txt:2)",
        )
    ]


def test_collect_takes_an_object_holding_a_hami_name_as_a_word(ruleset):
    """collect's object choice reads the same names: any of them as a dash-separated word (it
    knew `4pd` only as a prefix, and no name alone); a word inside another is not one."""
    hami = ruleset.catalogue.hami
    names = ["hami", "vgpu", "stack-4pd-scheduler-newversion", "hami-webhook", "shamir", "aws-auth"]
    taken = [select.is_hami(select.Listed("gpu", n, {}), None, hami) for n in names]
    assert taken == [True, True, True, True, False, False]
