"""A bundle with two nodes: each is diagnosed on its own, the worst decides the top level, and
every output (JSON, Markdown, --node, batch tables) keeps the nodes apart."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import SAMPLES, run_cli

OK_NODE, BAD_NODE = "gpu-node-1", "gpu-node-2"
GPU_A = "GPU-fc28df76-54d2-c387-e52e-5f0a9495968c"
GPU_B = "GPU-5f0b6a19-e2c4-4d83-b7a5-91c3d6e0f272"
# the register format of sample_bundles/healthy-single-gpu and annotation-health-omitted (v2.10
# JSON, omitempty: index 0 and health false are left out)
OK_REGISTER = (
    f'[{{"id":"{GPU_A}","count":10,"devmem":46068,"devcore":100,"type":"NVIDIA L40S",'
    f'"mode":"hami-core","health":true}},'
    f'{{"id":"{GPU_B}","index":1,"count":10,"devmem":46068,"devcore":100,"type":"NVIDIA L40S",'
    f'"mode":"hami-core","health":true}}]'
)
BAD_REGISTER = (
    f'[{{"id":"{GPU_A}","count":10,"devmem":46068,"devcore":100,"type":"NVIDIA L40S",'
    f'"mode":"hami-core","health":true}},'
    f'{{"id":"{GPU_B}","index":1,"count":10,"devmem":46068,"devcore":100,"type":"NVIDIA L40S",'
    f'"mode":"hami-core"}}]'
)


def node_yaml(name: str, register: str, allocatable: int) -> str:
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  creationTimestamp: '2026-03-02T08:11:09Z'
  labels:
    kubernetes.io/hostname: {name}
    kubernetes.io/os: linux
    gpu: 'on'
  annotations:
    node.alpha.kubernetes.io/ttl: '0'
    volumes.kubernetes.io/controller-managed-attach-detach: 'true'
    hami.io/node-handshake: Requesting_2026-08-10 11:00:00
    hami.io/node-nvidia-register: '{register}'
spec:
  podCIDR: 10.244.3.0/24
status:
  allocatable:
    cpu: '64'
    memory: 527915648Ki
    pods: '110'
    nvidia.com/gpu: '{allocatable}'
  capacity:
    cpu: '64'
    memory: 527915648Ki
    pods: '110'
    nvidia.com/gpu: '{allocatable}'
  conditions:
  - type: MemoryPressure
    status: 'False'
    lastHeartbeatTime: '2026-08-15T10:20:00Z'
    lastTransitionTime: '2026-03-02T08:11:09Z'
    reason: KubeletHasSufficientMemory
  - type: Ready
    status: 'True'
    lastHeartbeatTime: '2026-08-15T10:20:00Z'
    lastTransitionTime: '2026-08-01T07:00:12Z'
    reason: KubeletReady
  nodeInfo:
    kubeletVersion: v1.30.4
    containerRuntimeVersion: containerd://1.7.20
    osImage: Ubuntu 22.04.4 LTS
  images:
  - names:
    - docker.io/projecthami/hami:v2.10.0
    sizeBytes: 412345678
"""


# healthy: every device "health":true, allocatable = 10 + 10; faulty: the second device has no
# health key (unhealthy), and the plugin advertises only the healthy card's 10 slots
OK_YAML = node_yaml(OK_NODE, OK_REGISTER, 20)
BAD_YAML = node_yaml(BAD_NODE, BAD_REGISTER, 10)


def write_bundle(folder: Path, layout: str) -> Path:
    """The two nodes as two files (either order), one `kind: List`, or a multi-document YAML."""
    folder.mkdir(parents=True, exist_ok=True)
    if layout == "two-files":
        (folder / "node-1.yaml").write_text(OK_YAML)
        (folder / "node-2.yaml").write_text(BAD_YAML)
    elif layout == "two-files-faulty-first":
        (folder / "a-node.yaml").write_text(BAD_YAML)
        (folder / "b-node.yaml").write_text(OK_YAML)
    elif layout == "list":
        items = [yaml.safe_load(OK_YAML), yaml.safe_load(BAD_YAML)]
        doc = {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}
        (folder / "nodes.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    elif layout == "multi-doc":
        (folder / "nodes.yaml").write_text(OK_YAML + "---\n" + BAD_YAML)
    else:
        raise AssertionError(layout)
    return folder


LAYOUTS = ["two-files", "two-files-faulty-first", "list", "multi-doc"]


run = run_cli


def analyze_json(*args: str) -> tuple[int, dict]:
    proc = run("analyze", *args, "--format", "json")
    assert proc.stderr == "", proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def rule_ids(node_doc: dict) -> set[str]:
    out = set()
    for f in node_doc["findings"]:
        out.add(f["rule_id"])
        out.update(c["rule_id"] for c in f.get("consequences", []))
    return out


@pytest.fixture
def bundle(tmp_path) -> Path:
    return write_bundle(tmp_path / "ticket", "two-files")


def test_inputs_are_what_the_test_says(bundle):
    """Sanity: each node alone gets its own verdict (healthy / device-unhealthy)."""
    code, doc = analyze_json(str(bundle / "node-1.yaml"))
    assert (code, doc["primary"]["category"]) == (0, "healthy")
    code, doc = analyze_json(str(bundle / "node-2.yaml"))
    assert (code, doc["primary"]["category"]) == (1, "device-unhealthy")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_json_top_level_is_the_worst_node(tmp_path, layout):
    """Schema 2.0: the top-level verdict is the faulty node's, whatever the file order or form."""
    code, doc = analyze_json(str(write_bundle(tmp_path / "t", layout)))
    assert code == 1
    assert doc["schema_version"] == "2.1"
    assert doc["node"] == BAD_NODE
    assert doc["primary"]["category"] == "device-unhealthy"
    assert doc["primary"]["rule_id"] == "unhealthy-gpu-in-annotation"
    assert doc["nodes"][0]["node"] == BAD_NODE  # worst first


@pytest.mark.parametrize("layout", LAYOUTS)
def test_json_nodes_carry_their_own_verdicts(tmp_path, layout):
    """`nodes` lists both nodes once, each with its own verdict and its own findings."""
    _code, doc = analyze_json(str(write_bundle(tmp_path / "t", layout)))
    by_name = {n["node"]: n for n in doc["nodes"]}
    assert sorted(by_name) == [OK_NODE, BAD_NODE] and len(doc["nodes"]) == 2
    assert by_name[OK_NODE]["primary"]["category"] == "healthy"
    assert by_name[BAD_NODE]["primary"]["category"] == "device-unhealthy"
    assert "unhealthy-gpu-in-annotation" in rule_ids(by_name[BAD_NODE])
    assert "unhealthy-gpu-in-annotation" not in rule_ids(by_name[OK_NODE])
    assert "allocatable-register-mismatch" not in rule_ids(by_name[OK_NODE])
    assert not [f for f in by_name[OK_NODE]["findings"] if f["kind"] == "fault"]


def test_json_register_is_per_node(bundle):
    """Each node's decoded register is its own: only the faulty node has an unhealthy GPU."""
    _code, doc = analyze_json(str(bundle))
    by_name = {n["node"]: n for n in doc["nodes"]}
    health = {name: [d["health"] for d in n["register"]["devices"]] for name, n in by_name.items()}
    assert health == {OK_NODE: [True, True], BAD_NODE: [True, False]}
    assert [d["health"] for d in doc["register"]["devices"]] == [True, False]


def test_markdown_names_the_faulty_node(bundle):
    """The Markdown verdict line names the faulty node, and its fix targets that node only."""
    proc = run("analyze", str(bundle), "--format", "markdown")
    assert proc.returncode == 1, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert BAD_NODE in first and OK_NODE not in first
    assert OK_NODE in proc.stdout  # the healthy node is listed too
    assert f"spec.nodeName={BAD_NODE}" in proc.stdout
    assert f"spec.nodeName={OK_NODE}" not in proc.stdout


@pytest.mark.parametrize(
    "name,code,category", [(OK_NODE, 0, "healthy"), (BAD_NODE, 1, "device-unhealthy")]
)
@pytest.mark.parametrize("layout", ["two-files", "list"])
def test_node_option_restricts_to_that_node(tmp_path, layout, name, code, category):
    """`--node NAME` reports only that node, and the exit code follows that node's verdict."""
    got, doc = analyze_json(str(write_bundle(tmp_path / "t", layout)), "--node", name)
    assert got == code
    assert [n["node"] for n in doc["nodes"]] == [name]
    assert doc["node"] == name and doc["primary"]["category"] == category


def test_node_option_markdown_mentions_only_that_node(bundle):
    """With `--node` on the healthy node, the Markdown comment does not blame the other one."""
    proc = run("analyze", str(bundle), "--node", OK_NODE, "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    assert f"`{BAD_NODE}`" not in proc.stdout  # no verdict row or finding for the other node
    assert "device-unhealthy" not in proc.stdout and "unhealthy-gpu" not in proc.stdout


def test_batch_writes_one_row_per_node(tmp_path):
    """`batch` over a ticket folder writes nodes.parquet with one row per node and its verdict."""
    tickets = tmp_path / "tickets"
    write_bundle(tickets / "ticket-1", "two-files")
    out = tmp_path / "out"
    proc = run("batch", str(tickets), "--out", str(out), "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    bundles = pl.read_parquet(out / "bundles.parquet")
    assert bundles.height == 1 and bundles["error"].to_list() == [None]
    nodes = pl.read_parquet(out / "nodes.parquet").sort("node")
    assert nodes["node"].to_list() == [OK_NODE, BAD_NODE]
    assert nodes["category"].to_list() == ["healthy", "device-unhealthy"]
    assert nodes["n_faults"].to_list()[0] == 0 and nodes["n_faults"].to_list()[1] >= 1
    assert set(nodes["bundle_id"].to_list()) == set(bundles["id"].to_list())
    assert bundles["category"].to_list() == ["device-unhealthy"]  # the worst node's


def test_batch_findings_name_their_node(tmp_path):
    """findings.parquet attributes the unhealthy-GPU finding to the faulty node only."""
    tickets = tmp_path / "tickets"
    write_bundle(tickets / "ticket-1", "list")
    out = tmp_path / "out"
    assert run("batch", str(tickets), "--out", str(out), "--jobs", "1").returncode == 0
    findings = pl.read_parquet(out / "findings.parquet")
    hit = findings.filter(pl.col("rule_id") == "unhealthy-gpu-in-annotation")
    assert hit["node"].to_list() == [BAD_NODE]
    assert set(findings["node"].to_list()) == {OK_NODE, BAD_NODE}


def test_a_log_naming_one_node_is_not_blamed_on_the_other(tmp_path):
    """A device-plugin log that says it works on the faulty node adds its fault to that node only."""
    bundle = write_bundle(tmp_path / "ticket", "two-files")
    sample = SAMPLES / "rbac-patch-forbidden" / "bundle"
    log = (sample / "device-plugin.log").read_text().replace("gpu-node-14", BAD_NODE)
    assert f"Start working on node {BAD_NODE}" in log
    (bundle / "device-plugin.log").write_text(log)
    code, doc = analyze_json(str(bundle))
    by_name = {n["node"]: n for n in doc["nodes"]}
    assert code == 1
    assert "rbac-patch-forbidden" in rule_ids(by_name[BAD_NODE])
    assert "rbac-patch-forbidden" not in rule_ids(by_name[OK_NODE])
    assert by_name[OK_NODE]["primary"]["category"] == "healthy"


@pytest.mark.parametrize("layout", ["list", "multi-doc"])
def test_a_fact_cites_its_own_node_in_a_list(tmp_path, layout):
    """Evidence from the second node of a `kind: List` (or of a multi-document file) points at
    that node's own lines, not at line 1 or at the first node's keys."""
    folder = write_bundle(tmp_path / layout, layout)
    code, doc = analyze_json(str(folder))
    text = (folder / "nodes.yaml").read_text().splitlines()
    bad = next(n for n in doc["nodes"] if n["node"] == BAD_NODE)
    facts = [
        e
        for f in bad["findings"]
        for g in [f, *f.get("consequences", [])]
        for e in g["evidence"]
        if e.get("path") and e.get("line")
    ]
    assert code == 1 and facts
    start = next(i for i, line in enumerate(text, 1) if f"name: {BAD_NODE}" in line)
    for e in facts:  # the second node's object begins at most a few lines above its name
        assert e["line"] >= start - 5, e
    alloc = next(e for e in facts if e["path"] == "node.allocatable.gpu")
    assert "nvidia.com/gpu" in text[alloc["line"] - 1] and alloc["line"] > start, alloc
