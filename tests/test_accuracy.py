"""Issue 21: each class of failure it lists, checked on made-up inputs of that class (none copied
from ../shared/corpus), by the verdict a user would read; the calibration rules (competing causes
drop a level, precedence by `explains`); and the score's reliability table."""

from __future__ import annotations

import json

import pytest

from analyzer.analyze import analyze_issue
from analyzer.dev.score import CaseScore, ScoreResult, render_score
from conftest import diagnose_texts

GPU_LOST_ADMISSION = """Events:
  Type     Reason                    Age   From     Message
  ----     ------                    ----  ----     -------
  Normal   Scheduled                 40s   hami-scheduler  Successfully assigned team-a/llm-7 to dgx-04
  Warning  UnexpectedAdmissionError  39s   kubelet  Allocate failed due to rpc error: code = Unknown desc = failed to get device for GPU-77e1c3a0-5b2d-4c8e-9f10-2a6b3c4d5e6f: nvml: GPU is lost, which is unexpected
"""
RESET_IN_HOOK = (
    "  Warning  Failed  12s  kubelet  Error: failed to create containerd task: OCI runtime create"
    " failed: runc create failed: unable to start container process: error during container init:"
    " error running hook #0: error running hook: exit status 1, stdout: , stderr:"
    " nvidia-container-cli: initialization error: nvml error: gpu requires reset: unknown\n"
)
ADMISSION_RACE = (
    "  Warning  UnexpectedAdmissionError  2m  kubelet  Allocate failed due to requested number of"
    " devices unavailable for nvidia.com/gpu. Requested: 4, Available: 2, which is unexpected\n"
)
VOLCANO_PANIC_AS_PLUGIN_LOG = """I0611 02:10:00.000000  77123 main.go:275] Start working on node a100-2
panic: runtime error: slice bounds out of range [:2] with capacity 1

goroutine 1187 [running]:
volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu.checkNodeGPUSharingPredicateAndScore(0xc00213a000, 0xc0019f4000, 0x1, {0x0, 0x0})
\t/go/src/volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu/utils.go:401 +0x9c5
volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu.(*GPUDevices).FilterNode(0xc00213a000, 0xc0019f4000, {0x0, 0x0})
"""
PLUGIN_PANIC_PASTED = """the plugin keeps dying with:

panic: 0

goroutine 97 [running]:
github.com/Project-HAMi/HAMi/pkg/device-plugin/nvidiadevice/nvinternal/plugin.(*NvidiaDevicePlugin).getAPIDevices(0xc0002e8000)
\t/k8s-vgpu/pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:120 +0x4b0
"""
ORPHAN_PANIC = """panic: close of closed channel

goroutine 9 [running]:
main.main()
\t/src/app/main.go:41 +0x1d
"""
DS_DESCRIBE = """Name:           gpu-plugins-device-plugin
Selector:       app.kubernetes.io/name=device-plugin
Node-Selector:  accelerator=nvidia-a10
Labels:         app.kubernetes.io/managed-by=Helm
Annotations:    deprecated.daemonset.template.generation: 3
Desired Number of Nodes Scheduled: 0
Current Number of Nodes Scheduled: 0
Number of Nodes Scheduled with Up-to-date Pods: 0
Number of Nodes Scheduled with Available Pods: 0
Number of Nodes Misscheduled: 0
Pods Status:  0 Running / 0 Waiting / 0 Succeeded / 0 Failed
Events:         <none>
"""
NO_PLUGIN_PODS = """ubuntu@ctl-0:~$ kubectl -n gpu-system get pods | grep device-plugin
ubuntu@ctl-0:~$ kubectl get pods -n gpu-system -l app=hami-device-plugin
No resources found in gpu-system namespace.
"""
PARTIAL_DESCRIBE_NO_LABEL = """Labels:             beta.kubernetes.io/arch=amd64
                    kubernetes.io/hostname=worker-17
Taints:             <none>
Capacity:
  cpu:                96
  memory:             792305276Ki
  pods:               250
Allocatable:
  cpu:                95
  memory:             791154300Ki
  pods:               250
"""
LEGACY_ONLY = """Capacity:
 alpha.kubernetes.io/nvidia-gpu:  2
 cpu:                             16
 memory:                          65871400Ki
 pods:                            110
"""
ALLOCATABLE_NOTE = """Capacity:
  cpu:             64
  nvidia.com/gpu:  4
Allocatable:
  cpu:             63
  nvidia.com/gpu:  3     # <- one missing since yesterday
"""
TWO_CONTAINERS = """Name:         pair-0
Namespace:    vision
Containers:
  encoder:
    Limits:
      nvidia.com/gpu:  1
  decoder:
    Limits:
      nvidia.com/gpu:  1
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  10s   default-scheduler  0/1 nodes are available: 1 Insufficient nvidia.com/gpu.
"""
ONE_GPU_NODE = """Name:               edge-1
Roles:              <none>
Capacity:
  nvidia.com/gpu:     1
Allocatable:
  nvidia.com/gpu:     1
"""
HELM_LEADER = """USER-SUPPLIED VALUES:
global:
  imageTag: v2.9.0
scheduler:
  leaderElect: true
  kubeScheduler:
    enabled: false
    imageTag: v1.27.3
"""
EKS_AUTO = """apiVersion: v1
kind: Node
metadata:
  name: i-0d3f2a1b4c5e6f789
  labels:
    eks.amazonaws.com/compute-type: auto
    gpu: "on"
status:
  allocatable:
    nvidia.com/gpu: "1"
"""
DOUBLE_CAPACITY = """apiVersion: v1
kind: Node
metadata:
  name: g-2
  annotations:
    hami.io/node-nvidia-register: '[{"id":"GPU-a","count":10,"devmem":46068,"devcore":100,"type":"NVIDIA-NVIDIA L40S","health":true},{"id":"GPU-b","index":1,"count":10,"devmem":46068,"devcore":100,"type":"NVIDIA-NVIDIA L40S","health":true}]'
status:
  capacity:
    nvidia.com/gpu: "40"
  allocatable:
    nvidia.com/gpu: "40"
"""
VOLCANO_EVENTS = (
    "  Warning  FailedScheduling  30s  volcano  0/2 nodes are unavailable: 2 hami-vgpuDeviceSharing"
    " error.\n"
)
VOLCANO_NODE = """apiVersion: v1
kind: Node
metadata:
  name: box-1
  annotations:
    hami.io/node-nvidia-register: 'GPU-9f8e7d6c-0000-1111-2222-333344445555,10,24576,100,NVIDIA-NVIDIA RTX A5000,0,true,0,hami-core:'
"""
VOLCANO_NOT_ENOUGH = (
    'E0930 07:00:01.000000 1 device_info.go:312] "Failed to fitler node to vgpu task"'
    ' err="not enough gpu fitted on this node" pod="sim-4"\n'
)
NON_GPU_FITERROR = (
    'I0930 07:00:01.000000       1 schedule_one.go:1004] "Unable to schedule pod; no fit; waiting"'
    ' pod="ml/batch-2" err="0/5 nodes are available: 2 node(s) had untolerated taint'
    " {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't match Pod's node affinity/selector."
    ' preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."\n'
)
LEASE_ELSEWHERE = """I0930 07:00:00.000000       1 leaderelection.go:250] attempting to acquire leader lease kube-system/kube-scheduler...
I0930 07:00:00.100000       1 leaderelection.go:354] lock is held by master-2_0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b and has not yet expired
I0930 07:00:02.300000       1 leaderelection.go:354] lock is held by master-2_0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b and has not yet expired
"""

FILES = [
    ("gpu lost inside an admission error", {"events.txt": GPU_LOST_ADMISSION}, "device-unhealthy"),
    ("reset required inside the OCI hook", {"events.txt": RESET_IN_HOOK}, "device-unhealthy"),
    ("Requested/Available at admission", {"events.txt": ADMISSION_RACE}, "resource-insufficient"),
    (
        "a scheduler panic in a plugin log",
        {"device-plugin.log": VOLCANO_PANIC_AS_PLUGIN_LOG},
        "scheduling-other",
    ),
    ("the plugin's panic pasted bare", {"paste.txt": PLUGIN_PANIC_PASTED}, "plugin-crash-nvml"),
    ("a panic of unknown owner", {"paste.txt": ORPHAN_PANIC}, "inconclusive"),
    ("describe daemonset at zero", {"ds.txt": DS_DESCRIBE}, "no-device-plugin-pod"),
    ("no plugin pods found", {"pods.txt": NO_PLUGIN_PODS}, "no-device-plugin-pod"),
    (
        "partial describe without label or GPU",
        {"node.txt": PARTIAL_DESCRIBE_NO_LABEL},
        "no-device-plugin-pod",
    ),
    ("legacy resource only", {"node.txt": LEGACY_ONLY}, "no-device-plugin-pod"),
    ("allocatable below capacity with a note", {"node.txt": ALLOCATABLE_NOTE}, "device-unhealthy"),
    (
        "two containers on a one-GPU node",
        {"pod.txt": TWO_CONTAINERS, "node.txt": ONE_GPU_NODE},
        "resource-insufficient",
    ),
    ("helm values only", {"values.txt": HELM_LEADER}, "scheduler-not-leader"),
    ("EKS Auto Mode pool", {"node.yaml": EKS_AUTO}, "multiple-device-plugins"),
    ("capacity beyond HAMi's register", {"node.yaml": DOUBLE_CAPACITY}, "multiple-device-plugins"),
    (
        "Volcano path on a HAMi-registered node",
        {"events.txt": VOLCANO_EVENTS, "node.yaml": VOLCANO_NODE},
        "multiple-device-plugins",
    ),
    ("Volcano vGPU does not fit", {"volcano.log": VOLCANO_NOT_ENOUGH}, "resource-insufficient"),
    ("a FitError without GPU reasons", {"ks.log": NON_GPU_FITERROR}, "scheduling-other"),
    ("lease held by another scheduler", {"ks.log": LEASE_ELSEWHERE}, "scheduler-not-leader"),
]


@pytest.mark.parametrize("files,category", [c[1:] for c in FILES], ids=[c[0] for c in FILES])
def test_class_made_up_input(ruleset, files, category):
    p = diagnose_texts(ruleset, files).primary
    assert p.category == category, (p.category, p.rule_id, p.confidence)


ISSUES = [
    (
        "title states the missing toleration",
        "# GPU node gets no nvidia.com/gpu\n\nThe device plugin DaemonSet has no toleration for our"
        " gpu-only taint, I think.\n",
        "no-device-plugin-pod",
    ),
    (
        "insufficient without a count",
        "# pod pending: Insufficient nvidia.com/gpu\n",
        "resource-insufficient",
    ),
    (
        "Chinese: not enough GPU",
        "# 提交训练任务一直 Pending\n\n事件里显示 GPU 资源不足。\n",
        "resource-insufficient",
    ),
    (
        "Chinese: NVML not found",
        "# 插件报错\n\n设备插件启动后无法加载 NVML，pod 一直重启。\n",
        "plugin-crash-nvml",
    ),
    (
        "a hang after HAMi-core's banner on driver 570",
        "# training hangs\n\n- HAMi version: v2.4.1\n- driver version: 570.133.20\n\npython hangs after"
        " this line:\n```\n[HAMI-core Msg(88:140245112301376:libvgpu.c:837)]: Initializing.....\n```\n",
        "runtime-other",
    ),
]


@pytest.mark.parametrize("text,category", [c[1:] for c in ISSUES], ids=[c[0] for c in ISSUES])
def test_paraphrase_is_weak_evidence(ruleset, text, category):
    """Words of the issue give the verdict they state, never above their weight."""
    p = analyze_issue(text.encode(), ruleset)[1].primary
    assert p.category == category, (p.category, p.rule_id)
    assert p.confidence in ("low", "medium")


def test_driver_570_hang_is_the_documented_incompatibility(ruleset):
    text = ISSUES[-1][1]
    p = analyze_issue(text.encode(), ruleset)[1].primary
    # the hang itself is the reporter's word: the verdict stays low, but names the known cause
    assert (p.rule_id, p.confidence) == ("hami-core-driver-570-hang", "low")
    fixed = text.replace("v2.4.1", "v2.6.0")
    assert analyze_issue(fixed.encode(), ruleset)[1].primary.rule_id == "hami-core-hangs-at-start"


def test_kube_scheduler_tag_is_no_hami_version(ruleset):
    """The chart's kube-scheduler tag (a Kubernetes release) neither dates HAMi nor conflicts."""
    n = diagnose_texts(ruleset, {"values.txt": HELM_LEADER}).nodes[0]
    assert n.version.range == "v2.9.0"
    assert not n.version.conflicts


def test_a_version_conflict_never_outranks_a_failure(ruleset):
    """Mixed version clues are a low-confidence note: the concrete failure stays the verdict."""
    node = (
        "kind: Node\nmetadata: {name: n1, annotations: {hami.io/node-nvidia-register:"
        " 'GPU-1,10,24564,100,NVIDIA-NVIDIA A30,0,true,0,hami-core:'}}\n"
    )
    log = (
        "I0815 09:05:51.733092  412873 register.go:273] Device info unchanged, skipping annotation update\n"
        "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n"
    )
    r = diagnose_texts(ruleset, {"node.yaml": node, "dp.log": log})
    assert r.primary.rule_id == "nvml-init-failed"
    assert "mixed-hami-versions" in [f.rule_id for f in r.nodes[0].faults()]


# ---- calibration ---------------------------------------------------------------------------
TWO_CAUSES = {
    "dp.log": "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n",
    "events.txt": (
        "  Warning  FailedCreatePodSandBox  12s  kubelet  Failed to create pod sandbox: rpc error: code"
        ' = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured\n'
        "  Warning  FailedScheduling  3s  hami-scheduler  0/1 nodes are available: 1 pod has unbound"
        " immediate PersistentVolumeClaims.\n"
    ),
}


def test_competing_causes_drop_a_level_and_are_named(ruleset):
    r = diagnose_texts(ruleset, TWO_CAUSES)
    p = r.primary
    faults = [f for f in r.nodes[0].findings if f.kind == "fault"]
    high = [f for f in faults if f.confidence == "high" and f.severity in ("critical", "error")]
    assert len({f.category for f in high}) >= 2, [(f.rule_id, f.category) for f in high]
    assert p.confidence == "medium"
    assert p.competing and all(rid in {f.rule_id for f in faults} for rid in p.competing)
    assert "competing explanation" in p.confidence_reason


def test_explains_settles_precedence(ruleset):
    """A wrapper and the cause inside it do not compete: the rule that explains the other wins at
    full confidence."""
    r = diagnose_texts(ruleset, {"events.txt": GPU_LOST_ADMISSION})
    p = r.primary
    assert (p.rule_id, p.confidence, p.competing) == ("gpu-hardware-fault", "high", ())
    top = [f for f in r.nodes[0].findings if f.kind == "fault"]
    assert "allocate-failed-at-admission" in [c.rule_id for c in top[0].consequences]


def test_a_lesser_finding_does_not_compete(ruleset):
    """A warning beside an error of the same confidence leaves the verdict's confidence alone."""
    log = (
        'E0930 07:00:01.000000 1 device_info.go:312] "Failed to fitler node to vgpu task"'
        ' err="pod required sharing mode mig is not the same as the node mode hami-core" pod="a"\n'
        "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n"
    )
    p = diagnose_texts(ruleset, {"x.log": log}).primary
    assert p.rule_id == "nvml-init-failed" and p.competing == ()


# ---- the score's reliability table ---------------------------------------------------------
def _row(case, form, got, conf, score):
    return CaseScore(case, form, "resource-insufficient", [], "high", got, "r", conf, score)


def test_reliability_table_and_confident_wrong_list():
    res = ScoreResult(
        [
            _row("a", "files", "resource-insufficient", "high", 1.0),
            _row("b", "files", "scheduling-other", "high", 0.0),
            _row("c", "files", "inconclusive", "low", 0.5),
            _row("d", "issue", "scheduling-other", "low", 0.0),
        ]
    )
    assert res.reliability("files")["high"] == {"right": 1, "inconclusive": 0, "wrong": 1}
    assert res.reliability("files")["low"] == {"right": 0, "inconclusive": 1, "wrong": 0}
    assert res.reliability("issue")["low"]["wrong"] == 1
    text = render_score(res)
    assert "files  high        1     0     1" in text
    assert "confident-wrong (wrong at medium or high): 1" in text
    assert "  b (files): scheduling-other [high]" in text
    doc = json.loads(render_score(res, "json"))
    assert doc["reliability"]["issue"]["low"]["wrong"] == 1
    assert [w["case"] for w in doc["confident_wrong"]] == ["b"]
