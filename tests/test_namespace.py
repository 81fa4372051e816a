"""HAMi's namespace: a fact read from the inputs that state it (collect's manifest, helm
`namespaceOverride`, HAMi's objects, its pods' describes, a `get pods -A` row), with its
file:line; the commands a report prints (fixes and what to collect next) address HAMi there; with
nothing stating it they use kube-system and every output says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.render.jsonout import render_json
from analyzer.render.markdown import render_markdown
from analyzer.render.terminal import render_terminal
from conftest import SAMPLES

NVML = SAMPLES / "nvml-init-error" / "bundle"  # a crash whose fix is a helm upgrade of HAMi
PODS_A = """\
NAMESPACE      NAME                                   READY   STATUS             RESTARTS       AGE   IP           NODE         NOMINATED NODE   READINESS GATES
default        vgpu-workload-5f7d8-abcde              0/1     Pending            0              5m    <none>       <none>       <none>           <none>
gpu-operator   nvidia-device-plugin-daemonset-x7k2q   1/1     Running            0              9d    10.0.0.11    gpu-node-6   <none>           <none>
hami-system    hami-device-plugin-7xk2p               1/2     CrashLoopBackOff   12 (2m ago)    3d    10.0.0.12    gpu-node-6   <none>           <none>
"""
DESCRIBE = """\
Name:             hami-scheduler-6d8f9c7b5-q2wzl
Namespace:        gpu-infra
Priority:         0
Service Account:  hami-scheduler
Node:             gpu-node-6/10.0.0.13
Labels:           app.kubernetes.io/component=hami-scheduler
Status:           Running
IP:               10.0.0.13
Containers:
  vgpu-scheduler-extender:
    Image:          projecthami/hami:v2.6.0
    State:          Running
    Ready:          True
    Restart Count:  0
Conditions:
  Type              Status
  Ready             True
Events:             <none>
"""
VALUES = "namespaceOverride: hami-ops\ndevicePlugin:\n  runtimeClassName: nvidia\n"
DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: hami-device-plugin
  namespace: vgpu
spec:
  selector: {matchLabels: {app.kubernetes.io/component: hami-device-plugin}}
"""
WEBHOOK = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: hami-webhook
webhooks:
  - name: vgpu.hami.io
    clientConfig:
      service:
        name: hami-scheduler
        namespace: hami-hooks
        path: /webhook
"""
MANIFEST = {
    "kind": "CollectManifest",
    "apiVersion": "hami-analyzer/v1",
    "collected_at": "2026-08-15T10:20:00Z",
    "hami": {"namespace": "from-collect", "release": "hami", "found_by": "label"},
    "calls": [],
}


def bundle(tmp_path: Path, extra: dict[str, str]) -> Path:
    folder = tmp_path / "b"
    folder.mkdir()
    for f in NVML.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    for name, text in extra.items():
        (folder / name).write_text(text)
    return folder


def report_of(ruleset, folder: Path):
    return analyze([str(folder)], AnalyzeOptions(ruleset=ruleset)).report


def commands(node) -> list[str]:
    """Every command the node's report prints: its findings' fixes and what to collect next."""
    out = [s.command for f in node.all_findings() for s in f.remediation if s.command]
    return out + [c.command for c in node.collect]


def hami_namespaces(node) -> set[str]:
    """The namespaces the printed kubectl and helm commands address HAMi's objects in."""
    found = set()
    for c in commands(node):
        for part in re.split(r";|&&|\|", c):
            if "hami" in part and (m := re.search(r"(?:-n|--namespace)\s+\"?([\w.-]+)", part)):
                found.add(m.group(1))
            if m := re.search(r"serviceaccount:([\w.-]+):hami", part):
                found.add(m.group(1))
    return found


@pytest.mark.parametrize(
    ("extra", "namespace", "where", "how"),
    [
        (
            {"pods.txt": PODS_A},
            "hami-system",
            "pods.txt:4",
            "NAMESPACE of pod hami-device-plugin-7xk2p",
        ),
        (
            {"pods.txt": PODS_A, "scheduler-describe.txt": DESCRIBE},
            "gpu-infra",
            "scheduler-describe.txt:2",
            "namespace of pod hami-scheduler-6d8f9c7b5-q2wzl",
        ),
        (
            {"daemonset.yaml": DAEMONSET, "pods.txt": PODS_A},
            "vgpu",
            "daemonset.yaml:5",
            "namespace of hami-device-plugin",
        ),
        (
            {"webhooks.yaml": WEBHOOK},
            "hami-hooks",
            "webhooks.yaml:10",
            "namespace of hami-scheduler",
        ),
        (
            {"values.yaml": VALUES, "daemonset.yaml": DAEMONSET},
            "hami-ops",
            "values.yaml:1",
            "helm value",
        ),
        (
            {"manifest.json": json.dumps(MANIFEST), "values.yaml": VALUES},
            "from-collect",
            "manifest.json",
            "found by collect",
        ),
    ],
)
def test_the_stated_namespace_is_the_commands_namespace(
    ruleset, tmp_path, extra, namespace, where, how
):
    node = report_of(ruleset, bundle(tmp_path, extra)).worst
    assert node.primary.rule_id == "nvml-init-failed"  # the verdict does not move
    assert (node.namespace.name, node.namespace.stated, node.namespace.where) == (
        namespace,
        True,
        where,
    )
    assert node.namespace.how == f"Commands use HAMi's namespace {namespace}: {how} ({where})"
    assert hami_namespaces(node) == {namespace}
    # the fix (a helm upgrade of the release) moved, and so did the next step that asks for the
    # chart's values, unless the bundle has them
    assert any(
        c.startswith(f"helm upgrade hami hami-charts/hami -n {namespace} ") for c in commands(node)
    )
    asked = [c.command for c in node.collect if c.kind == "helm-values"]
    assert asked == (
        []
        if "values.yaml" in extra
        else [f"helm get values hami -n {namespace} --all > values.yaml"]
    )


def test_nothing_stating_it_is_kube_system_and_every_output_says_so(ruleset, tmp_path):
    """Pods of other components in other namespaces (NVIDIA's plugin in gpu-operator, a
    workload in default) say nothing about HAMi's."""
    report = report_of(
        ruleset,
        bundle(
            tmp_path,
            {
                "pods.txt": PODS_A.replace(
                    "hami-system    hami-device-plugin-7xk2p", "hami-system    other-app-7xk2p"
                )
            },
        ),
    )
    node = report.worst
    said = (
        "Commands use HAMi's namespace kube-system, the chart's usual one: the bundle does not "
        "state it (change -n if HAMi runs elsewhere)"
    )
    assert (node.namespace.name, node.namespace.stated, node.namespace.how) == (
        "kube-system",
        False,
        said,
    )
    assert hami_namespaces(node) == {"kube-system"}
    assert " ".join(render_terminal(report, width=400).split()).endswith(said)
    assert said in render_markdown(report, b"x")
    doc = json.loads(render_json(report))
    assert doc["namespace"] == {"name": "kube-system", "stated": False, "how": said, "where": None}


def test_a_healthy_node_prints_no_command_and_no_namespace_line(ruleset):
    report = report_of(ruleset, SAMPLES / "healthy-single-gpu" / "bundle")
    assert not report.worst.names_namespace
    assert "namespace" not in render_terminal(report).lower()


def test_a_namespace_that_is_no_dns_label_is_not_taken(ruleset, tmp_path):
    values = "namespaceOverride: 'not a namespace; rm -rf /'\n"
    node = report_of(ruleset, bundle(tmp_path, {"values.yaml": values})).worst
    assert (node.namespace.name, node.namespace.stated) == ("kube-system", False)
