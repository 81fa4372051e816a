"""Two nodes, logs of one: each log is evidence for its own node only. A log finds its node by
its file name, collect's folder layout, a pod describe or table, or its lines; one that finds
none is reported and used for no node. Each node's timeline and episodes hold its own logs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_multinode import OK_REGISTER, node_yaml

from analyzer.analyze import AnalyzeOptions, analyze, load_bundle, node_timelines
from analyzer.facts.context import build_contexts
from conftest import SAMPLES, run_cli

N1, N2 = "gpu-node-1", "gpu-node-2"
NVML_FAULT = "nvml-init-failed"
# the plugin's own statements of its node: a log without them names no node in its lines
STATEMENTS = ("FLAG: --node-name=", "Start working on node")


def plugin_log(sample: str, node: str | None = None) -> str:
    """A sample's device-plugin log with the lines that state its node removed (`node`: put
    back as one FLAG line, the way the plugin prints it at start)."""
    text = (SAMPLES / sample / "bundle" / "device-plugin.log").read_text()
    kept = [ln for ln in text.splitlines(keepends=True) if not any(s in ln for s in STATEMENTS)]
    assert len(kept) < len(text.splitlines()), "the sample states its node"
    flag = f'I0815 09:00:00.000100  412873 flags.go:36] FLAG: --node-name="{node}"\n'
    return (flag if node else "") + "".join(kept)


NVML_LOG = plugin_log("nvml-init-error")  # panics on nvml Init, names no node
HEALTHY_LOG = plugin_log("healthy-single-gpu")  # registers its GPU, names no node


def two_nodes(folder: Path, logs: dict[str, str]) -> Path:
    """Two healthy Node objects (same register, allocatable 20) and the given files."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "node-1.yaml").write_text(node_yaml(N1, OK_REGISTER, 20))
    (folder / "node-2.yaml").write_text(node_yaml(N2, OK_REGISTER, 20))
    for name, text in logs.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def diagnose(ruleset, bundle: Path):
    report = analyze([str(bundle)], AnalyzeOptions(ruleset=ruleset)).report
    return report, {n.node: n for n in report.nodes}


def fired(node) -> set[str]:
    return {f.rule_id for f in node.all_findings()}


def cited_files(node) -> set[str]:
    return {e.file for f in node.all_findings() for e in f.evidence if e.file}


def assert_only_n2_failed(report, by_node, log_file: str) -> None:
    assert NVML_FAULT in fired(by_node[N2])
    assert by_node[N2].primary.category == "plugin-crash-nvml"
    assert log_file in cited_files(by_node[N2])
    assert NVML_FAULT not in fired(by_node[N1])
    assert by_node[N1].primary.category == "healthy"
    assert log_file not in cited_files(by_node[N1])
    assert not [w for w in report.warnings if "none of the bundle's" in w]


def test_the_inputs_say_what_the_tests_need(ruleset, tmp_path):
    """Sanity: the stripped NVML log alone beside one node fails that node (a single-node
    bundle keeps every log for its node), and names no node of the bundle in its lines."""
    assert N1 not in NVML_LOG and N2 not in NVML_LOG and "node-name" not in NVML_LOG
    bundle = tmp_path / "one"
    bundle.mkdir()
    (bundle / "node.yaml").write_text(node_yaml(N1, OK_REGISTER, 20))
    (bundle / "device-plugin.log").write_text(NVML_LOG)
    report, by_node = diagnose(ruleset, bundle)
    assert NVML_FAULT in fired(by_node[N1]) and report.warnings == ()


@pytest.mark.parametrize(
    "name",
    ["device-plugin-gpu-node-2.log", "gpu-node-2/device-plugin.log", "gpu-node-2.dp.log"],
)
def test_by_file_name(ruleset, tmp_path, name):
    """The issue's case: the log named after the failing node fails that node only."""
    report, by_node = diagnose(ruleset, two_nodes(tmp_path / "t", {name: NVML_LOG}))
    assert_only_n2_failed(report, by_node, name)


def test_a_longer_name_is_not_a_shorter_one(ruleset, tmp_path):
    """`gpu-node-10` is not `gpu-node-1`: the log of a third node is of neither."""
    report, by_node = diagnose(
        ruleset, two_nodes(tmp_path / "t", {"device-plugin-gpu-node-10.log": NVML_LOG})
    )
    assert NVML_FAULT not in fired(by_node[N1]) | fired(by_node[N2])
    assert [w.split(":")[0] for w in report.warnings] == ["device-plugin-gpu-node-10.log"]


def test_by_collect_node_folder(ruleset, tmp_path):
    """`hami-analyzer collect` writes a node's files under nodes/NODE/."""
    name = "nodes/gpu-node-2/device-plugin.log"
    report, by_node = diagnose(ruleset, two_nodes(tmp_path / "t", {name: NVML_LOG}))
    assert_only_n2_failed(report, by_node, name)


PODS_WIDE = """NAMESPACE     NAME                              READY   STATUS             RESTARTS        AGE   IP            NODE         NOMINATED NODE   READINESS GATES
kube-system   hami-device-plugin-7xk2p          2/2     Running            12 (2m ago)     40m   10.0.0.12     {node}   <none>           <none>
kube-system   hami-scheduler-6d8f9c7b5-x2k4q    2/2     Running            0               40m   10.244.1.3    {other}   <none>           <none>
"""


@pytest.mark.parametrize("table_at", ["pods.txt", "nodes/gpu-node-2/pods.txt"])
def test_by_collect_pod_folder_and_pod_table(ruleset, tmp_path, table_at):
    """collect writes a pod's logs under logs/POD/, and the node's pods (-o wide) beside the
    node: the table's row of that pod names its node."""
    name = "logs/hami-device-plugin-7xk2p/device-plugin.log"
    table = PODS_WIDE.format(node=N2, other=N1)
    report, by_node = diagnose(
        ruleset, two_nodes(tmp_path / "t", {name: NVML_LOG, table_at: table})
    )
    assert_only_n2_failed(report, by_node, name)


POD_DESCRIBE = """Name:             hami-device-plugin-7xk2p
Namespace:        kube-system
Priority:         2000001000
Service Account:  hami-device-plugin
Node:             gpu-node-2/10.0.0.12
Status:           Running
Containers:
  device-plugin:
    Image:          projecthami/hami:v2.10.0
    State:          Waiting
      Reason:       CrashLoopBackOff
    Restart Count:  12
Events:
  Type     Reason   Age                 From     Message
  ----     ------   ----                ----     -------
  Warning  BackOff  2m (x40 over 40m)   kubelet  Back-off restarting failed container
"""


@pytest.mark.parametrize(
    "name",
    ["logs/hami-device-plugin-7xk2p/device-plugin.log", "hami-device-plugin-7xk2p.log"],
)
def test_by_pod_describe(ruleset, tmp_path, name):
    """A describe of the plugin's pod says which node it runs on; the log is that pod's by its
    folder (collect's layout) or its file name."""
    report, by_node = diagnose(
        ruleset, two_nodes(tmp_path / "t", {name: NVML_LOG, "describe-dp.txt": POD_DESCRIBE})
    )
    assert_only_n2_failed(report, by_node, name)


def test_by_kubectl_logs_prefix(ruleset, tmp_path):
    """`kubectl logs --prefix` lines name the pod; the pod describe names its node."""
    prefixed = "".join(
        f"[pod/hami-device-plugin-7xk2p/device-plugin] {line}\n" for line in NVML_LOG.splitlines()
    )
    report, by_node = diagnose(
        ruleset,
        two_nodes(tmp_path / "t", {"dp.log": prefixed, "describe-dp.txt": POD_DESCRIBE}),
    )
    assert_only_n2_failed(report, by_node, "dp.log")


@pytest.mark.parametrize(
    "first_line",
    [
        f'I0815 08:59:59.000000  412873 flags.go:36] FLAG: --node-name="{N2}"',  # its flags
        f"NODE_NAME={N2}",  # its environment pasted above the log
        f'E0815 08:59:59.000000  412873 register.go:90] "cannot get node" node="{N2}"',  # a mention
    ],
)
def test_by_content(ruleset, tmp_path, first_line):
    """A log named `device-plugin.log` whose lines state or name one node of the bundle."""
    log = first_line + "\n" + NVML_LOG
    report, by_node = diagnose(ruleset, two_nodes(tmp_path / "t", {"device-plugin.log": log}))
    assert_only_n2_failed(report, by_node, "device-plugin.log")


UNATTRIBUTED = (
    "device-plugin.log: a device-plugin-log of none of the bundle's 2 nodes "
    f"({N1}, {N2}): nothing in its name, folder, pod or lines names one of them; "
    "not used as evidence for any node"
)


def test_an_unattributable_log_is_evidence_for_no_node(ruleset, tmp_path):
    """Named `device-plugin.log`, naming no node: neither node is diagnosed with its failure,
    no finding cites it, and the report says why it was left out."""
    report, by_node = diagnose(ruleset, two_nodes(tmp_path / "t", {"device-plugin.log": NVML_LOG}))
    for node in (N1, N2):
        assert NVML_FAULT not in fired(by_node[node])
        assert "device-plugin.log" not in cited_files(by_node[node])
        assert by_node[node].primary.category == "healthy"
        assert not [r for r in by_node[node].timeline if r.file == "device-plugin.log"]
    assert report.warnings[0].startswith(UNATTRIBUTED)


def test_a_log_naming_both_nodes_is_unattributed(ruleset, tmp_path):
    log = f"W0815 08:59:59.000000  412873 x.go:1] peers {N1} {N2}\n" + NVML_LOG
    report, by_node = diagnose(ruleset, two_nodes(tmp_path / "t", {"device-plugin.log": log}))
    assert NVML_FAULT not in fired(by_node[N1]) | fired(by_node[N2])
    assert f"its lines name several nodes ({N1}, {N2})" in report.warnings[0]


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "html", "json"])
def test_the_unattributed_log_is_visible_in_every_output(tmp_path, fmt):
    bundle = two_nodes(tmp_path / "t", {"device-plugin.log": NVML_LOG})
    proc = run_cli("analyze", str(bundle), "--format", fmt)
    assert proc.returncode == 0, proc.stderr  # both nodes healthy: nothing is blamed
    out = json.loads(proc.stdout)["warnings"][0] if fmt == "json" else proc.stdout
    assert "device-plugin.log: a device-plugin-log of none of the bundle" in out
    assert "not used as evidence for any node" in out


def test_scheduler_log_stays_shared(ruleset, tmp_path):
    """A scheduler log speaks of every node: it is no node's own and never unattributed."""
    sched = (SAMPLES / "healthy-single-gpu" / "bundle" / "scheduler.log").read_text()
    report, by_node = diagnose(ruleset, two_nodes(tmp_path / "t", {"scheduler.log": sched}))
    assert report.warnings == ()
    for node in (N1, N2):
        assert any(r.file == "scheduler.log" for r in by_node[node].timeline)


def per_node_bundle(tmp_path) -> Path:
    return two_nodes(
        tmp_path / "t",
        {"device-plugin-gpu-node-1.log": HEALTHY_LOG, "device-plugin-gpu-node-2.log": NVML_LOG},
    )


def test_each_nodes_timeline_and_episodes_hold_its_own_logs(ruleset, tmp_path):
    """n1's timeline is n1's log and n1's object; its episodes cite n1's log; n2's
    "first error after the last healthy state" is n2's NVML error."""
    _report, by_node = diagnose(ruleset, per_node_bundle(tmp_path))
    own = {N1: "device-plugin-gpu-node-1.log", N2: "device-plugin-gpu-node-2.log"}
    objects = {N1: "node-1.yaml", N2: "node-2.yaml"}
    for node in (N1, N2):
        files = {r.file for r in by_node[node].timeline}
        assert files == {own[node], objects[node]}, (node, files)
        assert {e.file for e in by_node[node].episodes if e.file} <= {own[node]}
    assert [e.kind for e in by_node[N1].episodes if e.kind == "first-fault"] == []
    first = [e for e in by_node[N2].episodes if e.kind == "first-fault"]
    assert len(first) == 1 and first[0].file == own[N2] and "nvml Init err" in first[0].text
    assert by_node[N1].primary.category == "healthy"
    assert by_node[N2].primary.category == "plugin-crash-nvml"


def test_timeline_command_prints_the_chosen_nodes_events(tmp_path):
    bundle = per_node_bundle(tmp_path)
    for node, other in ((N1, N2), (N2, N1)):
        proc = run_cli("timeline", str(bundle), "--node", node, "--format", "csv")
        assert proc.returncode == 0, proc.stderr
        frame = pl.read_csv(proc.stdout.encode())
        assert set(frame["file"]) == {f"device-plugin-{node}.log", f"node-{node[-1]}.yaml"}
        assert not frame.filter(pl.col("file").str.contains(other)).height


def test_the_timeline_stage_evaluates_no_rule(ruleset, tmp_path, monkeypatch):
    """`timeline` runs the facts and timeline stages only: rule evaluation is not called."""
    import analyzer.analyze as analyze_mod

    def no_rules(*_args, **_kw):
        raise AssertionError("a rule was evaluated")

    monkeypatch.setattr(analyze_mod, "evaluate", no_rules)
    bundle = load_bundle([str(per_node_bundle(tmp_path))], ruleset)
    timelines = dict(node_timelines(bundle, ruleset))
    assert set(timelines) == {N1, N2}
    assert "findings" not in timelines[N1].frame.columns
    assert set(timelines[N1].frame["file"]) == {"device-plugin-gpu-node-1.log", "node-1.yaml"}


def test_stages_leave_earlier_outputs_as_they_were(ruleset, tmp_path):
    """The parse stage leaves the reader's inventory alone; the facts stage leaves the parsed
    logs without a `ts` column and the parsed nodes as parsed (a fragment merged into a new
    node)."""
    from analyzer.bundle.reader import open_bundle
    from analyzer.pipeline import parse_files

    bundle_dir = per_node_bundle(tmp_path)
    (bundle_dir / "bad.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: [\n")
    with open_bundle([str(bundle_dir)]) as reader:
        before = list(reader.inventory.warnings)
        parsed = parse_files(reader, ruleset.catalogue, analyze_mod_matcher(ruleset))
        assert reader.inventory.warnings == before
        assert not hasattr(reader.inventory, "artefacts")
    assert any(w.startswith("bad.yaml") for w in parsed.warnings)
    columns = [log.frame.columns for log in parsed.logs]
    facts = build_contexts(parsed, ruleset.fact_inputs)
    assert [log.frame.columns for log in parsed.logs] == columns
    assert all("ts" not in c for c in columns)
    assert all("ts" in log.frame.columns for ctx in facts.contexts for log in ctx.logs)


def test_merging_a_fragment_makes_a_new_node(ruleset, tmp_path):
    bundle_dir = tmp_path / "t"
    bundle_dir.mkdir()
    (bundle_dir / "node.yaml").write_text(node_yaml(N1, OK_REGISTER, 20))
    extra = "hami.io/node-handshake-dcu"
    (bundle_dir / "annotations.txt").write_text(f"Annotations:  {extra}: Requesting_2026-08-10\n")
    parsed = load_bundle([str(bundle_dir)], ruleset)
    assert sorted(n.form for n in parsed.nodes) == ["fragment", "yaml"]
    snapshot = [(n.name, dict(n.annotations), n.sections) for n in parsed.nodes]
    [ctx] = build_contexts(parsed, ruleset.fact_inputs).contexts
    assert [(n.name, dict(n.annotations), n.sections) for n in parsed.nodes] == snapshot
    assert ctx.node is not None and ctx.node.name == N1 and extra in ctx.node.annotations
    assert all(extra not in n.annotations for n in parsed.nodes if n.form == "yaml")


def analyze_mod_matcher(ruleset):
    from analyzer.analyze import matcher_for

    return matcher_for(ruleset)


CONTAINERD_RUNC = (
    SAMPLES / "runtime-runc-default" / "bundle" / "containerd-config.toml"
).read_text()
RUNC_RULE = "containerd-default-runtime-not-nvidia"


def test_a_nodes_config_by_collect_folder(ruleset, tmp_path):
    """collect --node-debug writes each node's containerd config under nodes/NODE/: its
    runtime fault is that node's only. The node offers no GPU (a node that does has a plugin
    that loaded NVML, and its runc default is no fault: the rule holds back there)."""
    name = "nodes/gpu-node-2/containerd-config.toml"
    bundle = two_nodes(tmp_path / "t", {name: CONTAINERD_RUNC})
    (bundle / "node-2.yaml").write_text(node_yaml(N2, OK_REGISTER, 0))
    report, by_node = diagnose(ruleset, bundle)
    assert RUNC_RULE in fired(by_node[N2]) and name in cited_files(by_node[N2])
    assert RUNC_RULE not in fired(by_node[N1]) and name not in cited_files(by_node[N1])
    assert report.warnings == ()
    # both nodes offer GPUs: the same config convicts neither
    _, by_node = diagnose(ruleset, two_nodes(tmp_path / "u", {name: CONTAINERD_RUNC}))
    assert RUNC_RULE not in fired(by_node[N1]) | fired(by_node[N2])


def test_an_unattributable_config_is_evidence_for_no_node(ruleset, tmp_path):
    report, by_node = diagnose(
        ruleset, two_nodes(tmp_path / "t", {"containerd-config.toml": CONTAINERD_RUNC})
    )
    assert RUNC_RULE not in fired(by_node[N1]) | fired(by_node[N2])
    assert report.warnings[0].startswith(
        "containerd-config.toml: a containerd-config of none of the bundle's 2 nodes"
    )


def test_a_journal_by_its_host_name(ruleset, tmp_path):
    """A kubelet journal names its host on every line; a host name that is the first label of
    one node's name (cloud nodes) is that node."""
    names = ("ip-10-0-0-1.ec2.internal", "ip-10-0-0-2.ec2.internal")
    bundle = tmp_path / "t"
    bundle.mkdir()
    for i, name in enumerate(names):
        (bundle / f"node-{i}.yaml").write_text(node_yaml(name, OK_REGISTER, 20))
    journal = "".join(
        f"Aug 15 10:00:0{i} ip-10-0-0-2 kubelet[2211]: I0815 10:00:0{i}.000000    2211 "
        f"kubelet.go:2400] SyncLoop (PLEG): event for pod {i}\n"
        for i in range(5)
    )
    (bundle / "kubelet.log").write_text(journal)
    parsed = load_bundle([str(bundle)], ruleset)
    assert [a.kind for a in parsed.artefacts if a.file.name == "kubelet.log"] == ["kubelet-log"]
    facts = build_contexts(parsed, ruleset.fact_inputs)
    logs = {ctx.name: [log.artefact.file.name for log in ctx.logs] for ctx in facts.contexts}
    assert logs == {names[0]: [], names[1]: ["kubelet.log"]}
    assert facts.warnings == ()


def test_attribution_hints_are_checked_on_load(tmp_path):
    """A hint without the capture its list needs, or a bad regex, names its file and list."""
    from analyzer.catalogue.kinds import load_catalogue
    from analyzer.errors import RuleLoadError

    path = tmp_path / "kinds.yaml"
    path.write_text(
        "kinds:\n  text: {title: t, family: text, parser: log}\n"
        "attribution:\n  node_paths: ['nodes/([^/]+)/']\n  node_lines: ['(']\n  extra: []\n"
    )
    with pytest.raises(RuleLoadError) as err:
        load_catalogue(path)
    problems = "\n".join(err.value.problems)
    assert "node_paths 'nodes/([^/]+)/': no (?P<node>...) capture" in problems
    assert "node_lines '('" in problems and "unknown key 'extra'" in problems
