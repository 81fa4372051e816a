"""The pods-table parser: `kubectl get pods` with and without `-A` and `-o wide`, restarts like
`3 (2m ago)`, several tables, headerless (grep) rows; dispatched by the registry for the
pods-list kind, read by attribution, and the kind's lines still scanned for signatures."""

from __future__ import annotations

from analyzer.parse.pod_table import pod_rows
from conftest import parse_texts

WIDE_ALL = """\
NAMESPACE      NAME                                   READY   STATUS                  RESTARTS         AGE   IP              NODE          NOMINATED NODE   READINESS GATES
hami-system    hami-device-plugin-7xk2p               1/2     CrashLoopBackOff        21 (2m39s ago)   95m   10.233.97.186   gpu-node-1    <none>           <none>
hami-system    hami-scheduler-6d8f9c7b5-q2wzl         2/2     Running                 0                3d    10.233.97.20    gpu-node-2    <none>           <none>
gpu-operator   nvidia-operator-validator-x7k2q        0/1     Init:CrashLoopBackOff   7 (90s ago)      14m   <none>          gpu-node-1    <none>           <none>
default        vgpu-pod-1                             0/1     Pending                 0                5s    <none>          <none>        gpu-node-2       <none>
"""
PLAIN_ONE_NS = """\
NAME                             READY   STATUS    RESTARTS   AGE
hami-device-plugin-7xk2p         2/2     Running   3          1d
hami-scheduler-6d8f9c7b5-q2wzl   2/2     Running   0          1d
"""
WIDE_ONE_NS = """\
NAME                       READY   STATUS    RESTARTS      AGE   IP           NODE         NOMINATED NODE   READINESS GATES
hami-device-plugin-7xk2p   2/2     Running   1 (3d ago)    9d    10.0.0.12    gpu-node-1   <none>           <none>
"""
PLAIN_ALL = """\
NAMESPACE     NAME                       READY   STATUS    RESTARTS   AGE
kube-system   hami-device-plugin-7xk2p   2/2     Running   0          9d
"""


def cells(text: str, *names: str) -> list[tuple]:
    return [tuple(getattr(r, n) for n in names) for r in pod_rows(text.splitlines(), "p.txt")]


def test_all_namespaces_wide():
    assert cells(
        WIDE_ALL, "namespace", "name", "ready", "status", "restarts", "last_restart", "ip", "node"
    ) == [
        (
            "hami-system",
            "hami-device-plugin-7xk2p",
            "1/2",
            "CrashLoopBackOff",
            21,
            "2m39s",
            "10.233.97.186",
            "gpu-node-1",
        ),
        (
            "hami-system",
            "hami-scheduler-6d8f9c7b5-q2wzl",
            "2/2",
            "Running",
            0,
            None,
            "10.233.97.20",
            "gpu-node-2",
        ),
        (
            "gpu-operator",
            "nvidia-operator-validator-x7k2q",
            "0/1",
            "Init:CrashLoopBackOff",
            7,
            "90s",
            None,
            "gpu-node-1",
        ),
        ("default", "vgpu-pod-1", "0/1", "Pending", 0, None, None, None),
    ]
    # a pending pod runs nowhere: its node is the one it is nominated to, kept apart
    assert cells(WIDE_ALL, "nominated_node")[-1] == ("gpu-node-2",)
    assert [r.line for r in pod_rows(WIDE_ALL.splitlines(), "p.txt", 40)] == [41, 42, 43, 44]


def test_one_namespace_and_not_wide():
    assert cells(PLAIN_ONE_NS, "namespace", "name", "restarts", "age", "ip", "node") == [
        (None, "hami-device-plugin-7xk2p", 3, "1d", None, None),
        (None, "hami-scheduler-6d8f9c7b5-q2wzl", 0, "1d", None, None),
    ]
    assert cells(WIDE_ONE_NS, "namespace", "restarts", "last_restart", "age", "node") == [
        (None, 1, "3d", "9d", "gpu-node-1")
    ]
    assert cells(PLAIN_ALL, "namespace", "name", "node") == [
        ("kube-system", "hami-device-plugin-7xk2p", None)
    ]


def test_extra_columns_without_wide_are_no_node():
    """`--show-labels` adds a LABELS column after AGE: not an IP and a NODE."""
    text = (
        "NAME                       READY   STATUS    RESTARTS   AGE   LABELS\n"
        "hami-device-plugin-7xk2p   2/2     Running   0          9d    app=hami,tier=node\n"
    )
    assert cells(text, "name", "ip", "node") == [("hami-device-plugin-7xk2p", None, None)]


def test_several_tables_and_headerless_rows():
    grep = (
        "$ kubectl get pods -A -o wide | grep hami\n"
        "kube-system   hami-device-plugin-abcde   2/2   Running   0   9d   10.0.0.5   gpu-node-3   <none>   <none>\n"
        "hami-device-plugin-fghij   2/2   Running   4 (1h ago)   9d\n"
        "\n"
    )
    text = grep + PLAIN_ONE_NS + "\nsome prose between\n" + PLAIN_ALL
    rows = list(pod_rows(text.splitlines(), "p.txt"))
    assert [(r.namespace, r.name, r.node, r.restarts, r.headed) for r in rows] == [
        ("kube-system", "hami-device-plugin-abcde", "gpu-node-3", 0, False),
        (None, "hami-device-plugin-fghij", None, 4, False),
        (None, "hami-device-plugin-7xk2p", None, 3, True),
        (None, "hami-scheduler-6d8f9c7b5-q2wzl", None, 0, True),
        ("kube-system", "hami-device-plugin-7xk2p", None, 0, True),
    ]


def test_not_a_table_gives_no_rows():
    text = "NAME is READY\nthe pods are 2/2 fine\nI0815 09:00:00.000 1 x.go:1] 1/2 Running 0 1d\n"
    assert list(pod_rows(text.splitlines(), "p.txt")) == []


def test_the_registry_parses_pods_lists_and_the_scan_still_reads_them(ruleset):
    """pods.txt becomes a PodTable (the registry's `pods-table` parser) and is still scanned:
    the signatures that read pods rows as lines (HAMi's plugin pod, a GPU Operator operand in
    Init:CrashLoopBackOff) match the same lines."""
    bundle = parse_texts(ruleset, {"pods.txt": WIDE_ALL})
    assert [a.kind for a in bundle.artefacts] == ["pods-list"]
    [table] = bundle.pod_tables
    assert (table.file, table.first_line, len(table.rows)) == ("pods.txt", 1, 4)
    [log] = bundle.logs
    matched = log.frame.filter(log.frame["sigs"].list.len() > 0)
    sigs = {s for row in matched["sigs"].to_list() for s in row}
    assert {"pods-hami-device-plugin", "pods-gpu-operator-validation-failing"} <= sigs, sigs
