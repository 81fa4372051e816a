"""Parsers: klog lines, annotations (omitempty, CSV generations, handshakes), node, pod."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from analyzer.bundle import recognise as recognise_mod
from conftest import diagnose_texts, parse_texts

DP = """I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-2
I0815 09:04:51.517733  412873 server.go:329] Registered device plugin for 'nvidia.com/gpu' with Kubelet
E0815 09:06:21.709851  412873 register.go:112] nvml new device by index error uuid= GPU-5f0b6a19-e2c4-4d83-b7a5-91c3d6e0f272 err= GPU is lost
panic: 0

goroutine 58 [running]:
E0815 11:57:5"""


def test_klog_fields_and_continuations(ruleset):
    b = parse_texts(ruleset, {"dp.log": DP})
    log = b.logs[0]
    f = log.frame
    assert log.artefact.kind == "device-plugin-log"
    first = f.row(0, named=True)
    assert (first["sev"], first["mm"], first["dd"], first["clock"], first["pid"], first["src"]) == (
        "I",
        "08",
        "15",
        "09:04:51.202341",
        "412873",
        "main.go:275",
    )
    assert first["msg"] == "Start working on node gpu-node-2"
    panic = f.filter(pl.col("text") == "panic: 0").row(0, named=True)
    assert panic["sev"] is None and panic["line"] == 4
    assert log.stats.lines == 7 and log.stats.klog_lines == 3
    assert log.stats.severities == {"I": 2, "E": 1}
    assert log.stats.truncated_last_line
    assert log.stats.sig_counts["dp-nvml-device-error"] == 1


def test_kubectl_prefix_timestamps_and_cri(ruleset):
    text = (
        "[pod/hami-device-plugin-x/toolkit-validation] Waiting for /run/nvidia/validations/toolkit-ready...\n"
        "[pod/hami-device-plugin-x/device-plugin] 2026-08-15T09:04:51.202341Z I0815 09:04:51.202341  412873 main.go:275] Start working on node n1\n"
        "2026-08-15T09:04:52.000000000+00:00 stderr F I0815 09:04:52.000000  412873 main.go:276] Starting OS watcher.\n"
    )
    b = parse_texts(ruleset, {"x.log": text})
    f = b.logs[0].frame
    assert f["container"].to_list()[:2] == ["toolkit-validation", "device-plugin"]
    assert f["msg"].to_list()[1:] == ["Start working on node n1", "Starting OS watcher."]
    assert f["rfc"].to_list()[1] == "2026-08-15T09:04:51.202341Z"
    assert b.logs[0].stats.containers == ["device-plugin", "toolkit-validation"]


def test_streamed_big_log_matches_small_path(ruleset, tmp_path, monkeypatch):
    lines = []
    for i in range(3000):
        lines.append(
            f"I0815 09:{i // 60 % 60:02d}:{i % 60:02d}.000001  412873 register.go:204] Registered device id=0, memory=24564MB, type=NVIDIA L40S, numa=0, health=true"
        )
        if i % 100 == 0:
            lines.append(
                f'E0815 09:{i // 60 % 60:02d}:{i % 60:02d}.000002  412873 register.go:168] "failed to get numa information from sysfs" idx=0'
            )
        if i % 700 == 0:
            lines.append("E0815 09:00:00.000003  412873 other.go:1] unmatched error line")
    text = "\n".join(lines) + "\n"
    small = parse_texts(ruleset, {"dp.log": text}).logs[0]
    monkeypatch.setattr(recognise_mod, "SMALL_FILE", 1000)
    big = parse_texts(ruleset, {"dp.log": text}).logs[0]
    assert big.artefact.text is None and not big.stats.all_lines_kept
    assert big.stats.lines == small.stats.lines
    assert big.stats.severities == small.stats.severities
    assert big.stats.sig_counts == small.stats.sig_counts
    assert (
        big.stats.first_clock == small.stats.first_clock
        and big.stats.last_clock == small.stats.last_clock
    )
    assert big.frame.height < small.frame.height  # only samples of the periodic line are kept
    assert big.frame.filter(pl.col("msg") == "unmatched error line").height == 5


@pytest.mark.parametrize("prefix", ["", "[pod/hami-device-plugin-x7k2p/device-plugin] "])
def test_streamed_samples_span_batches(ruleset, monkeypatch, prefix):
    """Many small batches: exact counts, the first and last SIG_HEAD_CAP/SIG_TAIL_CAP occurrences
    of each signature kept with their text, rare ones whole, unmatched errors in order; with
    `kubectl logs --prefix` lines too (stripped for matching, kept raw)."""
    from analyzer.parse import logs as logs_mod

    numa, updated, unchanged, unmatched = [], [], [], []
    lines = []
    for i in range(6000):
        clock = f"{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        lines.append(
            f'E0815 {clock}.000001  412873 register.go:168] "failed to get numa information from sysfs" idx={i}'
        )
        numa.append(len(lines))
        if i % 3 == 0:
            lines.append(
                f"I0815 {clock}.000002  412873 register.go:302] Updating node annotations with {i % 8 + 1} device(s)"
            )
            updated.append(len(lines))
        if i in (10, 2500, 5990):
            lines.append(
                f"I0815 {clock}.000003  412873 register.go:273] Device info unchanged, skipping annotation update"
            )
            unchanged.append(len(lines))
        if i % 97 == 0:
            lines.append(f"E0815 {clock}.000004  412873 other.go:1] unmatched error {i}")
            unmatched.append(len(lines))
        if i % 89 == 0:  # holds a signature's literal, yet matches no signature
            lines.append(
                f"E0815 {clock}.000005  412873 register.go:302] unmatched error: Updating node annotations with no device(s)"
            )
            unmatched.append(len(lines))
    text = "".join(prefix + line + "\n" for line in lines)
    monkeypatch.setattr(recognise_mod, "SMALL_FILE", 1000)
    monkeypatch.setattr(logs_mod, "BATCH_ROWS", 700)
    monkeypatch.setattr(logs_mod, "POOL_BYTES", 40_000)
    log = parse_texts(ruleset, {"dp.log": text}).logs[0]
    assert log.artefact.text is None
    counts = log.stats.sig_counts
    assert counts["dp-numa-sysfs-benign"] == len(numa)
    assert counts["dp-annotation-updated"] == len(updated)
    assert counts["dp-annotation-unchanged"] == 3
    head, tail = logs_mod.SIG_HEAD_CAP, logs_mod.SIG_TAIL_CAP

    def kept(sig: str) -> list[int]:
        f = log.frame.filter(pl.col("sigs").list.contains(sig))
        assert all(f["text"].str.contains(r"^[IE]0815 ").to_list())  # the text came with them
        return f["line"].to_list()

    assert kept("dp-numa-sysfs-benign") == numa[:head] + numa[-tail:]
    assert kept("dp-annotation-updated") == updated[:head] + updated[-tail:]
    assert kept("dp-annotation-unchanged") == unchanged
    errors = log.frame.filter(pl.col("msg").str.starts_with("unmatched error"))
    assert errors["line"].to_list() == unmatched
    monkeypatch.setattr(logs_mod, "ERROR_LINE_CAP", 25)  # only the first unmatched errors stay
    capped = parse_texts(ruleset, {"dp.log": text}).logs[0].frame
    errors = capped.filter(pl.col("msg").str.starts_with("unmatched error"))
    assert errors["line"].to_list() == unmatched[:25]
    assert log.frame["raw"].str.starts_with(prefix).all()
    assert log.frame["container"].unique().to_list() == ["device-plugin" if prefix else None]
    assert log.stats.severities == {"E": len(numa) + len(unmatched), "I": len(updated) + 3}


def test_register_json_omitempty(ruleset):
    spec = ruleset.annotations
    a = spec.decode_register(
        "hami.io/node-nvidia-register",
        '[{"id":"GPU-a","count":10,"devmem":24564,"devcore":100,"type":"NVIDIA L40S","mode":"hami-core","health":true},'
        '{"id":"GPU-b","index":1,"count":10,"devmem":24564,"devcore":100,"type":"NVIDIA L40S","numa":1,"mode":"hami-core"}]',
    )
    assert a.status == "ok" and a.format == "json"
    g0, g1 = a.devices
    assert (g0.index, g0.numa, g0.health) == (0, 0, True) and set(g0.absent) == {"index", "numa"}
    assert (g1.index, g1.numa, g1.health) == (1, 1, False) and g1.absent == ["health"]


def test_register_legacy_csv_generations(ruleset):
    spec = ruleset.annotations
    nine = spec.decode_register(
        "hami.io/node-nvidia-register",
        "GPU-a,10,24564,100,NVIDIA-NVIDIA GeForce RTX 4090,0,true,0,hami-core:GPU-b,10,24564,100,NVIDIA-NVIDIA GeForce RTX 4090,1,false,1,hami-core:",
    )
    assert (
        nine.format == "csv-9"
        and [d.health for d in nine.devices] == [True, False]
        and nine.devices[1].index == 1
    )
    seven = spec.decode_register(
        "hami.io/node-nvidia-register", "GPU-a,10,15360,100,NVIDIA-Tesla T4,0,true:"
    )
    assert seven.format == "csv-7" and seven.devices[0].type == "NVIDIA-Tesla T4"
    five = spec.decode_register(
        "hami.io/node-nvidia-register", "GPU-a,10,24564,NVIDIA-NVIDIA RTX A5000,false:"
    )
    assert five.format == "csv-5" and five.devices[0].devmem == 24564
    assert str(seven.versions) == "<v2.5.0"


def test_register_invalid_and_empty(ruleset):
    spec = ruleset.annotations
    bad = spec.decode_register("hami.io/node-nvidia-register", '[{"id":"GPU-a","count":"10"}]')
    assert bad.status == "invalid" and "field 'count'" in bad.error and bad.text.startswith("[{")
    trunc = spec.decode_register("hami.io/node-nvidia-register", '[{"id":"GPU-a","cou')
    assert trunc.status == "invalid" and "JSON error" in trunc.error
    assert spec.decode_register("hami.io/node-nvidia-register", "[]").status == "empty"
    assert spec.decode_register("hami.io/node-nvidia-register", "{}").status == "invalid"
    assert spec.decode_register("hami.io/node-nvidia-register", "garbage").status == "invalid"


def test_handshake_states(ruleset):
    spec = ruleset.annotations
    old = spec.decode_handshake("hami.io/node-handshake", "Requesting_2024.05.20 11:44:46")
    assert old.state == "Requesting" and old.time == dt.datetime(
        2024, 5, 20, 11, 44, 46, tzinfo=dt.UTC
    )
    assert str(old.versions) == "<v2.5.0"
    new = spec.decode_handshake("hami.io/node-handshake", "Requesting_2025-08-07 11:28:25")
    assert str(new.versions) == ">=v2.5.0"
    rep = spec.decode_handshake(
        "hami.io/node-handshake", "Reported 2024-08-14 11:17:32.68 +0000 UTC m=+1419629.49"
    )
    assert rep.state == "Reported" and rep.time.year == 2024
    assert (
        spec.decode_handshake("hami.io/node-handshake-dcu", "Deleted_2025-08-01 08:13:35").vendor
        == "dcu"
    )
    assert spec.handshake_vendor("hami.io/node-handshake") == "nvidia"
    assert spec.register_vendor("hami.io/node-dcu-register") == "dcu"
    assert spec.register_vendor("hami.io/node-register-xpu") == "xpu"


NODE_LIST = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: a
    labels: {gpu: "on"}
    annotations:
      hami.io/node-nvidia-register: '[{"id":"GPU-a","count":10,"health":true}]'
  spec:
    taints: [{key: sku, value: gpu, effect: NoSchedule}]
  status:
    allocatable: {nvidia.com/gpu: "10"}
    conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-08-15T10:00:00Z"}]
- apiVersion: v1
  kind: Node
  metadata: {name: b}
  status: {allocatable: {cpu: "4"}}
"""


def test_node_list_and_selection(ruleset):
    report = diagnose_texts(ruleset, {"nodes.yaml": NODE_LIST})
    assert sorted(n.node for n in report.nodes) == ["a", "b"]
    assert report.worst.node == "b"  # no GPU at all is worse than a tainted, registered node
    only_b = diagnose_texts(ruleset, {"nodes.yaml": NODE_LIST}, node="b")
    assert [n.node for n in only_b.nodes] == ["b"]
    b = parse_texts(ruleset, {"nodes.yaml": NODE_LIST})
    a = b.nodes[0]
    assert a.taints == [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]
    assert (
        a.allocatable["nvidia.com/gpu"] == "10" and a.line_of["hami.io/node-nvidia-register"] == 10
    )
    assert all(n.clock.year == 2026 for n in report.nodes)


def test_node_json_and_describe(ruleset):
    js = '{"apiVersion":"v1","kind":"Node","metadata":{"name":"j","annotations":{"hami.io/node-handshake":"Requesting_2026-08-15 09:12:44"}},"status":{"capacity":{"nvidia.com/gpu":"20"},"allocatable":{"nvidia.com/gpu":"20"}}}'
    n = parse_texts(ruleset, {"node.json": js}).nodes[0]
    assert n.name == "j" and n.capacity["nvidia.com/gpu"] == "20"
    desc = (
        "Name:               416a100\nRoles:              master\nLabels:             gpu=on\n"
        "                    kubernetes.io/os=linux\n"
        "Annotations:        hami.io/node-handshake: Requesting_2024.05.20 11:44:46\n"
        "                    hami.io/node-nvidia-register:\n"
        "                      GPU-b7c4eb59,10,40960,100,NVIDIA-NVIDIA A100-PCI...\n"
        "Taints:             nvidia.com/gpu=present:NoSchedule\n"
        "Capacity:\n  cpu:                56\n  nvidia.com/gpu:     0\n"
    )
    d = parse_texts(ruleset, {"describe.txt": desc}).nodes[0]
    assert d.form == "describe" and d.labels == {"gpu": "on", "kubernetes.io/os": "linux"}
    assert d.annotations["hami.io/node-handshake"] == "Requesting_2024.05.20 11:44:46"
    assert "hami.io/node-nvidia-register" in d.elided
    assert d.taints == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert d.capacity["nvidia.com/gpu"] == "0"
    # the JSON form as kubectl describe prints it: on the line below the key, cut with "..."
    wrapped = desc.replace(
        "GPU-b7c4eb59,10,40960,100,NVIDIA-NVIDIA A100-PCI...",
        '[{"id":"GPU-fc28df76","count":10,"devmem":46068,"type":"NVIDIA L40S","health"...',
    )
    j = parse_texts(ruleset, {"describe.txt": wrapped}).nodes[0]
    assert j.annotations["hami.io/node-nvidia-register"].startswith('[{"id":"GPU-fc28df76"')
    assert "hami.io/node-nvidia-register" in j.elided


POD_DESCRIBE = """Name:                gpu-pod
Namespace:           default
Runtime Class Name:  nvidia
Node:                n1/10.0.0.1
Annotations:         hami.io/bind-phase: success
                     hami.io/vgpu-devices-allocated: GPU-2bd7,NVIDIA,24564,100:;
Status:              Running
Containers:
  ubuntu:
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       StartError
      Message:      failed to inject CDI devices
    Limits:
      nvidia.com/gpu:     1
      nvidia.com/gpumem:  10240
Events:
  Type     Reason     Age                From            Message
  ----     ------     ----               ----            -------
  Normal   Scheduled  2m                 hami-scheduler  Successfully assigned default/gpu-pod to n1
  Warning  Failed     50s (x4 over 2m)   kubelet         Error: boom
"""


def test_pod_describe(ruleset):
    p = parse_texts(ruleset, {"pod.txt": POD_DESCRIBE}).pods[0]
    assert (p.name, p.namespace, p.node, p.runtime_class, p.status) == (
        "gpu-pod",
        "default",
        "n1",
        "nvidia",
        "Running",
    )
    assert p.annotations["hami.io/bind-phase"] == "success"
    c = p.containers[0]
    assert (c.name, c.reason, c.last_reason, c.last_message) == (
        "ubuntu",
        "CrashLoopBackOff",
        "StartError",
        "failed to inject CDI devices",
    )
    assert c.limits == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240"}
    assert [(e.reason, e.source, e.age) for e in p.events] == [
        ("Scheduled", "hami-scheduler", "2m"),
        ("Failed", "kubelet", "50s (x4 over 2m)"),
    ]
    assert p.events[1].line == 22


def test_pod_yaml(ruleset):
    y = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, annotations: {hami.io/vgpu-node: n1}}\nspec:\n  schedulerName: hami-scheduler\n  runtimeClassName: nvidia-legacy\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\nstatus: {phase: Pending}\n"
    p = parse_texts(ruleset, {"p.yaml": y}).pods[0]
    assert (p.scheduler_name, p.runtime_class, p.status) == (
        "hami-scheduler",
        "nvidia-legacy",
        "Pending",
    )
    assert p.limits() == {"nvidia.com/gpu": "1"}


HAMI_SCHEDULER_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: hami-scheduler, namespace: hami-system}
spec:
  template:
    spec:
      containers:
      - name: vgpu-scheduler-extender
        image: projecthami/hami:v2.6.1
        resources: {limits: {cpu: 500m, memory: 512Mi}}
"""


def test_workload_templates_that_ask_for_a_gpu_are_pods(ruleset):
    """A Deployment, Job or CronJob pasted by a reporter is read as the pod it makes when its
    template asks for an extended resource; HAMi's own Deployment stays a config only (its
    namespace still counts)."""
    cronjob = (
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: ml}\nspec:\n"
        "  jobTemplate:\n    spec:\n      template:\n        metadata:\n"
        "          annotations: {nvidia.com/use-gputype: A100}\n        spec:\n"
        "          containers:\n          - name: train\n            securityContext: {privileged: true}\n"
        "            resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4000}}\n"
    )
    parsed = parse_texts(ruleset, {"cron.yaml": cronjob, "sched.yaml": HAMI_SCHEDULER_DEPLOYMENT})
    assert [a.kind for a in parsed.artefacts] == ["workload", "deployment"]
    assert len(parsed.pods) == 1
    p = parsed.pods[0]
    assert (p.owner, p.name, p.namespace, p.status, p.events) == (
        "CronJob/nightly",
        None,
        "ml",
        None,
        [],
    )
    assert p.annotations == {"nvidia.com/use-gputype": "A100"}
    assert p.limits() == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}
    assert p.containers[0].privileged is True
    assert [c.kind for c in parsed.configs] == ["deployment"]


def test_a_workload_without_a_gpu_makes_no_pod(ruleset):
    job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: etl}\nspec:\n  template:\n    spec:\n      containers: [{name: c, resources: {limits: {cpu: '1'}}}]\n"
    parsed = parse_texts(ruleset, {"job.yaml": job, "sched.yaml": HAMI_SCHEDULER_DEPLOYMENT})
    assert parsed.pods == []


def test_a_template_does_not_know_the_pod_status(ruleset):
    """A template is a manifest as written: no status, no events; the pod's facts say so
    rather than borrow the workload's name (kubectl commands keep $POD)."""
    from analyzer.facts.model import UNKNOWN, FactSet
    from analyzer.facts.pod import produce

    parsed = parse_texts(
        ruleset, {"d.yaml": HAMI_SCHEDULER_DEPLOYMENT.replace("cpu: 500m", "nvidia.com/gpu: 1")}
    )
    facts = FactSet()
    produce(parsed.pods, facts)
    assert facts.value("pod.owner") == "Deployment/hami-scheduler"
    assert facts.value("pod.gpu_total") == 1
    assert facts.lookup("pod.name").value is None
    assert facts.lookup("pod.event_sources") is UNKNOWN


def test_mixed_paste_is_split(ruleset):
    text = (
        "driver\n```\nroot@cp:~# kubectl get pods -n gpu-operator -owide\n"
        "NAME                  READY   STATUS    RESTARTS   AGE\nnvidia-driver-x   0/2     Init:CrashLoopBackOff   21   95m\n```\n\n"
        "device-plugin\n```\nroot@cp:~# kubectl logs -n kube-system hami-device-plugin-x -c vgpu-monitor\n"
        'I0627 07:29:33.630313    8458 flags.go:27] FLAG: --add_dir_header="false"\n```\n'
    )
    b = parse_texts(ruleset, {"other.txt": text})
    kinds = [a.kind for a in b.artefacts]
    assert "pods-list" in kinds and "vgpu-monitor-log" in kinds
    vm = next(a for a in b.artefacts if a.kind == "vgpu-monitor-log")
    assert (
        vm.first_line == 10 and vm.container == "vgpu-monitor"
    )  # the command stays with its output
    assert vm.text.startswith("root@cp:~# kubectl logs")
