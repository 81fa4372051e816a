"""Write sample_bundles/ from compact scenario descriptions.

The logs are built from HAMi v2.10 format strings (../shared/reference/hami-signatures.md);
each scenario's expected.yaml is written by hand below from the registration guide, not from
the analyzer's output. One builder per sample. Run: python tools/make_samples.py; `--check`
(part of `make test`) builds them in a temporary folder and fails with a diff summary when
sample_bundles/ differs from what the builders make.
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import yaml

ROOT = Path(__file__).resolve().parent.parent / "sample_bundles"
PID = 412873
UUIDS = [
    "GPU-fc28df76-54d2-c387-e52e-5f0a9495968c",
    "GPU-5f0b6a19-e2c4-4d83-b7a5-91c3d6e0f272",
    "GPU-c41e8d02-93a7-4b5e-a1f6-0e2d7c9b8a44",
    "GPU-2bd7f9eb-5c7e-4a2f-9d1b-6f3e8a4c0d11",
    "GPU-7a1c3e55-0b9d-4f62-8e47-d2c9b1a6f305",
    "GPU-9d2f0c11-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
    "GPU-3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7",
    "GPU-8b9c0d1e-2f3a-4b5c-9d6e-7f8a9b0c1d2e",
]


def dev(i, health=True, typ="NVIDIA L40S", mem=46068, numa=0):
    d = {"id": UUIDS[i]}
    if i:
        d["index"] = i
    d.update({"count": 10, "devmem": mem, "devcore": 100, "type": typ})
    if numa:
        d["numa"] = numa
    d["mode"] = "hami-core"
    if health:
        d["health"] = True
    return d


def node_yaml(
    name,
    *,
    labels=None,
    annotations=None,
    allocatable=None,
    taints=None,
    heartbeat="2026-08-15T10:20:00Z",
):
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    alloc = {"cpu": "64", "memory": "527915648Ki", "pods": "110", **(allocatable or {})}
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "creationTimestamp": "2026-03-02T08:11:09Z",
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                **(annotations or {}),
            },
        },
        "spec": {"podCIDR": "10.244.3.0/24", **({"taints": taints} if taints else {})},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [
                {
                    "type": "MemoryPressure",
                    "status": "False",
                    "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": "2026-03-02T08:11:09Z",
                    "reason": "KubeletHasSufficientMemory",
                },
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": "2026-08-01T07:00:12Z",
                    "reason": "KubeletReady",
                },
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.30.4",
                "containerRuntimeVersion": "containerd://1.7.20",
                "osImage": "Ubuntu 22.04.4 LTS",
            },
            "images": [{"names": ["docker.io/projecthami/hami:v2.10.0"], "sizeBytes": 412345678}],
        },
    }
    return yaml.safe_dump(obj, sort_keys=False, width=4096)


def reg(devs):
    return json.dumps(devs, separators=(",", ":"))


def ts(sec):
    h, rem = divmod(int(sec), 3600)
    m, s = divmod(rem, 60)
    return f"{9 + h:02d}:{m:02d}:{s:02d}.{(int(sec * 1000003) % 1000000):06d}"


def dp_start(node, t=0.0, pid=PID):
    L = []

    def add(sev, src, msg, dt=0.0001):
        return L.append(f"{sev}0815 {ts(t + dt * len(L))} {pid:>7} {src}] {msg}")

    add("I", "flags.go:36", 'FLAG: --v="4"')
    add("I", "flags.go:36", f'FLAG: --node-name="{node}"')
    add("I", "flags.go:36", 'FLAG: --device-split-count="10"')
    add(
        "I",
        "client.go:103",
        "BuildConfigFromFlags failed for file /root/.kube/config: stat /root/.kube/config: no such file or directory. Using in-cluster config.",
    )
    add("I", "main.go:267", "Starting FS watcher for /var/lib/kubelet/device-plugins")
    add("I", "main.go:275", f"Start working on node {node}")
    add("I", "main.go:276", "Starting OS watcher.")
    add("I", "main.go:291", "Starting Plugins.")
    add("I", "main.go:348", "Loading configuration.")
    add("I", "config.go:485", "Reading config file from path: /device-config.yaml")
    add("I", "config.go:495", "Successfully read and parsed config file")
    add("I", "main.go:381", "Updating config with default resource matching patterns.")
    add("I", "main.go:395", "Retrieving plugins.")
    add("I", "config.go:113", "Initializing NVIDIA device")
    add(
        "I",
        "device.go:164",
        '"initializing nvidia device" resourceName="nvidia.com/gpu" resourceMem="nvidia.com/gpumem" DefaultGPUNum=1',
    )
    add("I", "config.go:257", "All devices initialized successfully")
    return L


def dp_serve(t, pid=PID):
    return [
        f"I0815 {ts(t)} {pid:>7} server.go:538] Starting GRPC server for 'nvidia.com/gpu'",
        f"I0815 {ts(t + 0.001)} {pid:>7} server.go:321] Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock",
        f"I0815 {ts(t + 0.004)} {pid:>7} server.go:329] Registered device plugin for 'nvidia.com/gpu' with Kubelet",
        f"I0815 {ts(t + 0.005)} {pid:>7} register.go:313] Starting WatchAndRegister",
        f"I0815 {ts(t + 0.006)} {pid:>7} health.go:80] Using XIDs for health checks: map[13:true 31:true 43:true 45:true 68:true 109:true]",
    ]


def dp_scan(t, devs, *, changed, pid=PID, numa_err=False, health=None):
    L = []
    for i, d in enumerate(devs):
        if numa_err:
            L.append(
                f'E0815 {ts(t + 0.01 * i)} {pid:>7} register.go:168] "failed to get numa information from sysfs" idx={d.get("index", 0)}'
            )
        h = "true" if d.get("health") else "false"
        L.append(
            f"I0815 {ts(t + 0.01 * i + 0.005)} {pid:>7} register.go:204] Registered device id={d.get('index', 0)}, memory={d['devmem']}MB, type={d['type']}, numa={d.get('numa', 0)}, health={h}"
        )
    t2 = t + 0.01 * len(devs) + 0.01
    L.append(
        f"I0815 {ts(t2)} {pid:>7} register.go:262] Discovered {len(devs)} device(s) for registration"
    )
    if changed:
        L.append(
            f'I0815 {ts(t2 + 0.001)} {pid:>7} register.go:297] "patch nvidia topo score to node" hami.io/node-nvidia-score=""'
        )
        L.append(
            f"I0815 {ts(t2 + 0.002)} {pid:>7} register.go:302] Updating node annotations with {len(devs)} device(s)"
        )
        L.append(
            f"I0815 {ts(t2 + 0.003)} {pid:>7} register.go:303] Annotation content: map[hami.io/node-nvidia-register:{reg(devs)}]"
        )
        L.append(
            f"I0815 {ts(t2 + 0.02)} {pid:>7} register.go:344] Successfully updated node annotation. Next check in 30s..."
        )
    else:
        L.append(
            f"I0815 {ts(t2 + 0.001)} {pid:>7} register.go:273] Device info unchanged, skipping annotation update"
        )
        L.append(
            f"I0815 {ts(t2 + 0.002)} {pid:>7} register.go:346] No device changes detected. Next check in 30s..."
        )
    return L


def healthy_dp(node, devs, scans=6, numa_err=False, shuffle=False):
    L = dp_start(node) + dp_serve(0.3)
    for k in range(scans):
        order = devs if not shuffle or k % 2 == 0 else list(reversed(devs))
        L += dp_scan(
            0.4 + 30 * k, order, changed=(k == 0 or (shuffle and k % 2 == 1)), numa_err=numa_err
        )
    return L


def sched_start(t=10.0, selector=""):
    rows = [
        (
            "nodelock.go:124",
            '"Node lock expiration time set from environment variable" duration="5m0s"',
        ),
        ("flags.go:27", 'FLAG: --v="4"'),
        ("main.go:115", '"Set node lock timeout" timeout="5m0s"'),
        ("config.go:286", "Loading device configuration from file: /device-config.yaml"),
        ("config.go:113", "Initializing NVIDIA device"),
        ("config.go:257", "All devices initialized successfully"),
        ("scheduler.go:85", '"Initializing HAMi scheduler"'),
        ("scheduler.go:414", '"Entering RegisterFromNodeAnnotations"'),
        ("scheduler.go:418", f'"Using label selector for list nodes" selector="{selector}"'),
        ("scheduler.go:356", '"Starting HAMi scheduler components"'),
        ("route.go:52", "Initializing Predicate Route"),
        ("main.go:151", "listen on 0.0.0.0:443"),
        ("main.go:194", '"Starting HTTPS server" address="0.0.0.0:443"'),
    ]
    return [f"I0815 {ts(t + 0.001 * i)}       1 {src}] {msg}" for i, (src, msg) in enumerate(rows)]


def sched_leader(t):
    return [
        f'I0815 {ts(t)}       1 scheduler.go:585] "Successfully patched leader label to hami scheduler pod" namespace="kube-system" pod="hami-scheduler-6d8f9c7b5-x2k4q"'
    ]


def sched_health(t, node, current, reported):
    return [
        f'I0815 {ts(t)}       1 device.go:245] "checking device health for node" nodeName="{node}" deviceType="NVIDIA" currentDevices={current} reportedDevices={reported}'
    ]


def sched_added(t, node, devs):
    inner = " ".join(
        f"{{ID:{d['id']} Index:{d.get('index', 0)} Count:{d['count']} Devmem:{d['devmem']} Devcore:{d['devcore']} Type:{d['type']} Numa:{d.get('numa', 0)} Mode:hami-core MIGProfiles:[] MIGTemplate:[] Health:{str(bool(d.get('health'))).lower()} DeviceVendor:NVIDIA CustomInfo:map[] DevicePairScore:{{ID: Scores:map[]}}}}"
        for d in devs
    )
    return [
        f'I0815 {ts(t)}       1 scheduler.go:541] "Node device added" nodeName="{node}" deviceVendor="NVIDIA" nodeInfo=&{{ID:{node} Node:0xc000a1c008 Devices:map[NVIDIA:[{inner}]]}}'
    ]


def healthy_sched(node, devs, loops=8):
    n = sum(d["count"] for d in devs if d.get("health"))
    L = sched_start() + sched_leader(12.5)
    L += sched_health(12.6, node, n, 0) + sched_added(12.61, node, devs)
    for k in range(1, loops):
        L += sched_health(12.6 + 15 * k, node, n, n)
    return L


class Sample(NamedTuple):
    """One sample bundle: its files (text, or lines) and its hand-written expected.yaml."""

    name: str
    files: dict[str, str | list[str]]
    expected: dict


BUILDERS: list[Callable[[], Sample | None]] = []


def sample(builder: Callable[[], Sample | None]) -> Callable[[], Sample | None]:
    """Register a builder; it returns None when what it needs (../shared) is not beside us."""
    BUILDERS.append(builder)
    return builder


def write(root: Path, s: Sample) -> None:
    d = root / s.name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "bundle").mkdir()
    for fname, content in s.files.items():
        text = content if isinstance(content, str) else "\n".join(content) + "\n"
        (d / "bundle" / fname).write_text(text, encoding="utf-8")
    (d / "expected.yaml").write_text(
        yaml.safe_dump(s.expected, sort_keys=False, allow_unicode=True, width=100),
        encoding="utf-8",
    )


NORMAL_FAULTS = [
    "no-gpu-label",
    "untolerated-taint",
    "nvml-init-failed",
    "no-nvml-in-container",
    "nvml-device-call-failed",
    "toolkit-ready-wait",
    "node-name-unset",
    "plugin-restarted",
    "kubelet-register-failed",
    "no-allocatable-plugin-running",
    "register-annotation-absent",
    "register-annotation-invalid",
    "register-annotation-empty",
    "rbac-patch-forbidden",
    "unhealthy-gpu-in-annotation",
    "xid-marked-unhealthy",
    "allocatable-register-mismatch",
    "scheduler-decode-failed",
    "node-cleaned-up",
    "handshake-deleted-stuck",
]

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  schedulerName: hami-scheduler\n  containers:\n  - name: c\n    image: nvidia/cuda:12.2.0-base-ubuntu22.04\n    resources:\n      limits:\n{limits}status:\n  phase: Pending\n"


@sample
def healthy_single_gpu() -> Sample | None:
    one = [dev(0)]
    # 1. healthy single GPU
    return Sample(
        "healthy-single-gpu",
        {
            "node.yaml": node_yaml(
                "gpu-node-1",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-handshake": "Requesting_2026-08-01 07:02:11",
                    "hami.io/node-nvidia-register": reg(one),
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "device-plugin.log": healthy_dp("gpu-node-1", one),
            "scheduler.log": healthy_sched("gpu-node-1", one),
        },
        {
            "description": "One L40S, chart defaults, v2.10: all three links intact. The handshake is two weeks old, which is normal.",
            "primary_category": "healthy",
            "must_fire": [
                "count-link-ok",
                "spec-link-ok",
                "liveness-link-ok",
                "stale-handshake-is-normal",
                "scaled-allocatable-is-normal",
                "index-numa-absent-is-normal",
                "annotation-unchanged-is-normal",
            ],
            "must_not_fire": NORMAL_FAULTS,
            "healthy": True,
        },
    )


@sample
def scary_but_healthy() -> Sample | None:
    # 2. looks scary but healthy: 8 GPUs, numa errors, re-patches, other vendor Deleted_ handshake
    eight = [
        dev(i, numa=(1 if i >= 4 else 0), typ="NVIDIA A800 80GB PCIe", mem=81920) for i in range(8)
    ]
    return Sample(
        "scary-but-healthy",
        {
            "node.yaml": node_yaml(
                "gpu-node-8",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-handshake": "Requesting_2026-07-20 03:15:40",
                    "hami.io/node-handshake-dcu": "Deleted_2026-06-01 08:13:35",
                    "hami.io/node-nvidia-register": reg(eight),
                },
                allocatable={"nvidia.com/gpu": "80"},
            ),
            "device-plugin.log": healthy_dp(
                "gpu-node-8", eight, scans=8, numa_err=True, shuffle=True
            ),
            "scheduler.log": healthy_sched("gpu-node-8", eight),
        },
        {
            "description": "8-GPU node that looks alarming (E lines every scan, re-patches, a Deleted_ DCU handshake, a month-old handshake) but is healthy.",
            "primary_category": "healthy",
            "must_fire": [
                "numa-sysfs-error-is-benign",
                "frequent-repatch-is-normal",
                "stale-handshake-is-normal",
                "no-nvidia-suffix-handshake-is-normal",
                "scaled-allocatable-is-normal",
                "index-numa-absent-is-normal",
            ],
            "must_not_fire": NORMAL_FAULTS,
            "healthy": True,
        },
    )


@sample
def annotation_health_omitted() -> Sample | None:
    # 3. health omitted (demo)
    two = [dev(0), dev(1, health=False)]
    return Sample(
        "annotation-health-omitted",
        {
            "node.yaml": node_yaml(
                "gpu-node-2",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-handshake": "Requesting_2026-08-10 11:00:00",
                    "hami.io/node-nvidia-register": reg(two),
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "device-plugin.log": dp_start("gpu-node-2")
            + dp_serve(0.3)
            + dp_scan(0.4, two, changed=True)
            + dp_scan(30.4, two, changed=False),
        },
        {
            "description": "Second GPU has no health key (omitempty: unhealthy); allocatable is 10, not 20.",
            "primary_category": "device-unhealthy",
            "must_fire": [
                "unhealthy-gpu-in-annotation",
                "allocatable-register-mismatch",
                "count-link-ok",
            ],
            "must_not_fire": ["spec-link-ok", "no-gpu-label", "register-annotation-absent"],
        },
    )


@sample
def no_gpu_label() -> Sample | None:
    # 4. no gpu label
    return Sample(
        "no-gpu-label",
        {
            "node.yaml": node_yaml("gpu-node-4", labels={"nvidia.com/gpu.present": "true"}),
        },
        {
            "description": "GPU node without gpu=on: no device-plugin pod, nothing registered (case 1).",
            "primary_category": "no-device-plugin-pod",
            "must_fire": ["no-gpu-label"],
            "must_not_fire": ["count-link-ok", "untolerated-taint", "register-annotation-absent"],
        },
    )


@sample
def untolerated_taint() -> Sample | None:
    # 5. taint
    return Sample(
        "untolerated-taint",
        {
            "node.yaml": node_yaml(
                "gpu-node-5",
                labels={"gpu": "on"},
                taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            ),
        },
        {
            "description": "gpu=on but tainted sku=gpu:NoSchedule without a toleration (case 1).",
            "primary_category": "no-device-plugin-pod",
            "must_fire": ["untolerated-taint"],
            "must_not_fire": ["no-gpu-label", "count-link-ok"],
        },
    )


@sample
def nvml_init_error() -> Sample | None:
    # 6. nvml init error crash loop
    crash = []
    for k in range(3):
        crash += dp_start("gpu-node-6", t=60 * k, pid=PID + k) + [
            f"E0815 {ts(60 * k + 0.5)} {PID + k:>7} register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND",
            "panic: 0",
            "",
            "goroutine 58 [running]:",
            "github.com/Project-HAMi/HAMi/pkg/device-plugin/nvidiadevice/nvinternal/plugin.(*NvidiaDevicePlugin).getAPIDevices(0xc0004b8000)",
            "\t/k8s-vgpu/pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:97 +0x1e0c",
        ]
    return Sample(
        "nvml-init-error",
        {
            "node.yaml": node_yaml("gpu-node-6", labels={"gpu": "on"}, allocatable={}),
            "device-plugin.log": crash,
        },
        {
            "description": "NVML cannot be loaded (runtime not nvidia); the plugin panics on every start (case 2).",
            "primary_category": "plugin-crash-nvml",
            "must_fire": ["nvml-init-failed", "plugin-restarted"],
            "must_not_fire": ["count-link-ok", "spec-link-ok", "no-gpu-label"],
        },
    )


@sample
def no_nvml_in_container() -> Sample | None:
    # 7. incompatible platform
    return Sample(
        "no-nvml-in-container",
        {
            "device-plugin.log": dp_start("gpu-node-7")[:13]
            + [
                "I0815 09:00:00.310000  412873 factory.go:123] Detected non-NVML platform: could not load NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
                "I0815 09:00:00.310100  412873 factory.go:123] Detected non-Tegra platform: /sys/devices/soc0/family file not found",
                "E0815 09:00:00.310200  412873 factory.go:135] Incompatible strategy detected auto",
                "E0815 09:00:00.310300  412873 factory.go:136] If this is a GPU node, did you configure the NVIDIA Container Toolkit?",
                "E0815 09:00:00.310900  412873 main.go:201] error starting plugins: error getting plugins: unable to create plugins: failed to construct resource managers: invalid device discovery strategy",
            ],
        },
        {
            "description": "k3s-style node: the plugin runs under runc, no NVML in the container (case 2).",
            "primary_category": "plugin-crash-nvml",
            "must_fire": ["no-nvml-in-container"],
            "must_not_fire": ["count-link-ok", "kubelet-register-failed"],
        },
    )


@sample
def toolkit_ready_wait() -> Sample | None:
    # 8. toolkit wait
    return Sample(
        "toolkit-ready-wait",
        {
            "node.yaml": node_yaml("gpu-node-8b", labels={"gpu": "on"}),
            "toolkit-validation.log": ["Waiting for NVIDIA Toolkit to be ready..."]
            + ["Waiting for /run/nvidia/validations/toolkit-ready..."] * 40,
        },
        {
            "description": "gpuOperatorToolkitReady enabled without GPU Operator: init container waits forever (case 2).",
            "primary_category": "plugin-init-toolkit-wait",
            "must_fire": ["toolkit-ready-wait"],
            "must_not_fire": ["count-link-ok"],
        },
    )


@sample
def node_name_unset() -> Sample | None:
    # 9. node name unset
    nn = dp_start("", t=0)
    nn = [x.replace('FLAG: --node-name=""', 'FLAG: --node-name=""') for x in nn]
    return Sample(
        "node-name-unset",
        {
            "node.yaml": node_yaml(
                "gpu-node-9", labels={"gpu": "on"}, allocatable={"nvidia.com/gpu": "10"}
            ),
            "device-plugin.log": nn
            + dp_serve(0.3)
            + [
                f"E0815 {ts(0.5)} {PID:>7} register.go:268] get node error  resource name may not be empty"
            ],
        },
        {
            "description": "Old chart with new image: NODE_NAME is not set, the plugin cannot patch its node (case 2).",
            "primary_category": "plugin-nodename",
            "must_fire": ["node-name-unset", "register-annotation-absent"],
            "must_not_fire": ["spec-link-ok"],
        },
    )


@sample
def kubelet_socket_path() -> Sample | None:
    one = [dev(0)]
    # 10. kubelet socket
    ks = (
        dp_start("gpu-node-10")
        + [
            f"I0815 {ts(0.3)} {PID:>7} server.go:538] Starting GRPC server for 'nvidia.com/gpu'",
            f"I0815 {ts(0.31)} {PID:>7} server.go:321] Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock",
            f'I0815 {ts(5.32)} {PID:>7} server.go:325] Could not register device plugin: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial unix /var/lib/kubelet/device-plugins/kubelet.sock: connect: no such file or directory"',
            f"I0815 {ts(5.33)} {PID:>7} main.go:299] Failed to start one or more plugins. Retrying in 30s...",
        ]
        + dp_scan(6, one, changed=True)
    )
    return Sample(
        "kubelet-socket-path",
        {
            "node.yaml": node_yaml(
                "gpu-node-10",
                labels={"gpu": "on"},
                annotations={"hami.io/node-nvidia-register": reg(one)},
            ),
            "device-plugin.log": ks,
        },
        {
            "description": "kubelet uses a custom root-dir; the plugin's socket is where the kubelet never looks (case 3).",
            "primary_category": "no-allocatable-kubelet-socket",
            "must_fire": ["kubelet-register-failed", "no-allocatable-plugin-running"],
            "must_not_fire": ["count-link-ok", "no-gpu-label"],
        },
    )


@sample
def annotation_deleted() -> Sample | None:
    one = [dev(0)]
    # 11. annotation deleted
    return Sample(
        "annotation-deleted",
        {
            "node.yaml": node_yaml(
                "gpu-node-11",
                labels={"gpu": "on"},
                annotations={"hami.io/node-handshake": "Requesting_2026-08-01 07:02:11"},
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "device-plugin.log": healthy_dp("gpu-node-11", one, scans=4),
        },
        {
            "description": "Someone deleted the register annotation; the plugin's cache says unchanged, so it is not rewritten (case 4).",
            "primary_category": "annotation-missing-or-stale",
            "must_fire": [
                "register-annotation-absent",
                "count-link-ok",
                "annotation-unchanged-is-normal",
            ],
            "must_not_fire": ["spec-link-ok", "no-gpu-label"],
        },
    )


@sample
def annotation_invalid() -> Sample | None:
    # 12. annotation invalid (hand-edited)
    return Sample(
        "annotation-invalid",
        {
            "node.yaml": node_yaml(
                "gpu-node-12",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-nvidia-register": '[{"id":"GPU-fc28df76-54d2-c387-e52e-5f0a9495968c","count":10,"devmem":"46068"'
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "scheduler.log": sched_start()
            + sched_leader(12.5)
            + [
                f'E0815 {ts(12.6 + 15 * k)}       1 device.go:309] "failed to decode node devices" err="unexpected end of JSON input" node="gpu-node-12" device annotation="[{{\\"id\\":\\"GPU-fc28df76-54d2-c387-e52e-5f0a9495968c\\",\\"count\\":10"'
                for k in range(4)
            ],
        },
        {
            "description": "A hand-edited, truncated register annotation; the scheduler cannot decode it (case 4/5).",
            "primary_category": "annotation-missing-or-stale",
            "must_fire": ["register-annotation-invalid", "scheduler-decode-failed"],
            "must_not_fire": ["spec-link-ok", "liveness-link-ok"],
        },
    )


@sample
def annotation_empty() -> Sample | None:
    # 13. annotation empty
    return Sample(
        "annotation-empty",
        {
            "node.yaml": node_yaml(
                "gpu-node-13",
                labels={"gpu": "on"},
                annotations={"hami.io/node-nvidia-register": "[]"},
                allocatable={"nvidia.com/gpu": "0"},
            ),
            "scheduler.log": sched_start()
            + sched_leader(12.5)
            + [
                f'I0815 {ts(12.6 + 15 * k)}       1 device.go:313] "no nvidia gpu device found" node="gpu-node-13" device annotation="[]"'
                for k in range(3)
            ],
        },
        {
            "description": "All GPUs filtered out by the node config: the annotation is an empty list (case 5).",
            "primary_category": "scheduler-not-seeing-node",
            "must_fire": ["register-annotation-empty", "scheduler-no-device-found"],
            "must_not_fire": ["spec-link-ok", "count-link-ok"],
        },
    )


@sample
def rbac_patch_forbidden() -> Sample | None:
    one = [dev(0)]
    # 14. RBAC
    rb = (
        dp_start("gpu-node-14")
        + dp_serve(0.3)
        + [
            f"I0815 {ts(0.4)} {PID:>7} register.go:302] Updating node annotations with 1 device(s)",
            f"I0815 {ts(0.41)} {PID:>7} util.go:157] annotations= map[hami.io/node-nvidia-register:{reg(one)}]",
            f'E0815 {ts(0.42)} {PID:>7} register.go:307] patch node error  nodes "gpu-node-14" is forbidden: User "system:serviceaccount:kube-system:hami-device-plugin" cannot patch resource "nodes" in API group "" at the cluster scope',
            f'E0815 {ts(0.43)} {PID:>7} register.go:340] Failed to register annotation: nodes "gpu-node-14" is forbidden: User "system:serviceaccount:kube-system:hami-device-plugin" cannot patch resource "nodes" in API group "" at the cluster scope. Retrying in 5s...',
            f"I0815 {ts(5.5)} {PID:>7} register.go:273] Device info unchanged, skipping annotation update",
        ]
    )
    return Sample(
        "rbac-patch-forbidden",
        {
            "node.yaml": node_yaml(
                "gpu-node-14", labels={"gpu": "on"}, allocatable={"nvidia.com/gpu": "10"}
            ),
            "device-plugin.log": rb,
        },
        {
            "description": "The plugin's ServiceAccount cannot patch nodes after a partial upgrade (case 4).",
            "primary_category": "rbac-patch-forbidden",
            "must_fire": ["rbac-patch-forbidden", "register-annotation-absent"],
            "must_not_fire": ["spec-link-ok"],
        },
    )


@sample
def mixed_versions_csv() -> Sample | None:
    # 15. mixed versions: CSV annotation from a v2.7 plugin, v2.10 scheduler
    csv = f"{UUIDS[0]},10,46068,100,NVIDIA-NVIDIA L40S,0,true,0,hami-core:"
    return Sample(
        "mixed-versions-csv",
        {
            "node.yaml": node_yaml(
                "gpu-node-15",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-nvidia-register": csv,
                    "hami.io/node-handshake": "Reported 2026-08-15 10:19:44.123456789 +0000 UTC m=+3600.012345678",
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "scheduler.log": sched_start()
            + sched_leader(12.5)
            + [
                f'E0815 {ts(12.6 + 15 * k)}       1 device.go:309] "failed to decode node devices" err="invalid character \'G\' looking for beginning of value" node="gpu-node-15" device annotation="{csv}"'
                for k in range(4)
            ],
        },
        {
            "description": "A v2.7 device plugin (CSV annotation, Reported handshake) with a v2.10 scheduler (JSON only) (case 5).",
            "primary_category": "scheduler-not-seeing-node",
            "must_fire": ["scheduler-decode-failed", "mixed-hami-versions", "count-link-ok"],
            "must_not_fire": ["register-annotation-invalid", "liveness-link-ok"],
        },
    )


@sample
def label_selector_excludes() -> Sample | None:
    one = [dev(0)]
    # 16. label selector
    return Sample(
        "label-selector-excludes",
        {
            "node.yaml": node_yaml(
                "gpu-node-16",
                labels={"gpu": "on"},
                annotations={"hami.io/node-nvidia-register": reg(one)},
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "scheduler.log": sched_start(selector="pool=a100")
            + sched_leader(12.5)
            + sched_health(12.6, "gpu-node-a100-1", 80, 0)
            + sched_added(12.61, "gpu-node-a100-1", [dev(3)]),
        },
        {
            "description": "scheduler.nodeLabelSelector=pool=a100 and the node lacks that label (case 5 cause A).",
            "primary_category": "scheduler-not-seeing-node",
            "must_fire": ["label-selector-excludes-node", "count-link-ok", "spec-link-ok"],
            "must_not_fire": ["liveness-link-ok", "register-annotation-absent"],
        },
    )


@sample
def scheduler_follower_log() -> Sample | None:
    one = [dev(0)]
    # 17. follower log
    return Sample(
        "scheduler-follower-log",
        {
            "node.yaml": node_yaml(
                "gpu-node-17",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-nvidia-register": reg(one),
                    "hami.io/node-handshake": "Requesting_2026-08-01 07:02:11",
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "scheduler.log": sched_start()
            + [
                f"I0815 {ts(25 + 10 * k)}       1 route.go:182] Scheduler extender has not become leader yet"
                for k in range(6)
            ],
        },
        {
            "description": "Two scheduler replicas; the user attached the follower's log, which is quiet by design (case 5 cause B).",
            "primary_category": "scheduler-not-leader",
            "must_fire": [
                "scheduler-log-from-follower",
                "quiet-follower-is-normal",
                "count-link-ok",
                "spec-link-ok",
            ],
            "must_not_fire": ["liveness-link-ok", "register-annotation-absent"],
        },
    )


@sample
def xid79_gpu_lost() -> Sample | None:
    # 18. XID 79 (reference example)
    ref = Path(__file__).resolve().parent.parent.parent / "shared" / "reference"
    two_ref = [
        dev(1, typ="NVIDIA GeForce RTX 4090", mem=24564, numa=1),
        {**dev(0, typ="NVIDIA GeForce RTX 4090", mem=24564), "id": UUIDS[2]},
    ]
    two_ref[0]["id"] = UUIDS[1]
    if (ref / "example-v2.10-xid79.device-plugin.log").exists():
        return Sample(
            "xid79-gpu-lost",
            {
                "node.yaml": node_yaml(
                    "gpu-node-2",
                    labels={"gpu": "on"},
                    annotations={"hami.io/node-nvidia-register": reg(two_ref)},
                    allocatable={"nvidia.com/gpu": "0"},
                    heartbeat="2026-08-15T09:07:30Z",
                ),
                "device-plugin.log": (ref / "example-v2.10-xid79.device-plugin.log").read_text(),
                "scheduler.log": (ref / "example-v2.10-xid79.scheduler.log").read_text(),
            },
            {
                "description": "XID 79 marks GPU1 unhealthy, the next NVML call fails (GPU is lost), the plugin panics, allocatable drops to 0 and the scheduler cleans the node up (reference example).",
                "primary_category": "device-unhealthy",
                "must_fire": [
                    "xid-marked-unhealthy",
                    "nvml-device-call-failed",
                    "node-cleaned-up",
                    "plugin-restarted",
                ],
                "must_not_fire": ["count-link-ok", "no-gpu-label", "rbac-patch-forbidden"],
            },
        )
    return None  # the reference logs live in ../shared, beside the checkout


@sample
def handshake_deleted_stuck() -> Sample | None:
    # 19. handshake Deleted_ stuck (v2.9)
    return Sample(
        "handshake-deleted-stuck",
        {
            "node.yaml": node_yaml(
                "gpu-node-19",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-handshake": "Deleted_2026-08-14 22:10:04",
                    "hami.io/node-nvidia-register": reg([{**dev(0), "devicepairscore": {}}]),
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
        },
        {
            "description": "v2.8/2.9 node cleaned up once (Deleted_ handshake) though it advertises its GPU again.",
            "primary_category": "handshake-misread",
            "must_fire": ["handshake-deleted-stuck", "count-link-ok", "spec-link-ok"],
            "must_not_fire": ["register-annotation-absent", "stale-handshake-is-normal"],
        },
    )


@sample
def cdi_unresolvable() -> Sample | None:
    # 20. CDI unresolvable (field report)
    return Sample(
        "cdi-unresolvable",
        {
            "pod-describe.txt": CDI_DESCRIBE,
        },
        {
            "description": "Field report: pod bound by HAMi (bind-phase success), container start fails with unresolvable CDI device management.nvidia.com/gpu=GPU-... under runtimeClassName nvidia.",
            "primary_category": "cdi-unresolvable",
            "must_fire": ["cdi-unresolvable-device"],
            "must_not_fire": ["pod-not-scheduled-by-hami", "filtering-failed-registration-ok"],
        },
    )


@sample
def xss_hostile() -> Sample | None:
    # 22. hostile strings everywhere (report safety)
    xss = (
        '<script>document.title="PWNED"</script><img src=x onerror="document.body.dataset.pwned=1">'
    )
    return Sample(
        "xss-hostile",
        {
            "node.yaml": node_yaml(
                "gpu-node-x",
                labels={"gpu": "on", "evil": "javascript-alert"},
                annotations={
                    "hami.io/node-nvidia-register": '[{"id":"'
                    + xss
                    + '","count":"</style><script>alert(1)</script>"}]',
                    "hami.io/node-handshake": "Requesting_2026-08-01 07:02:11 </textarea><svg onload=alert(1)>",
                    "note": "[click](javascript:alert(1)) @maintainers #1 ```",
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "device-plugin.log": [
                "I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-x",
                f'E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  {xss} </style><a href="javascript:alert(1)">x</a>',
                f'E0815 09:06:22.709851  412873 register.go:307] patch node error  nodes "gpu-node-x" is forbidden: User "{xss}" cannot patch resource "nodes"',
            ],
        },
        {
            "description": "Hostile strings in annotations, labels and log lines: the report must render them as inert text.",
            "primary_category": "plugin-crash-nvml",
            "must_fire": ["register-annotation-invalid", "nvml-init-failed"],
            "must_not_fire": ["spec-link-ok"],
        },
    )


@sample
def cdi_field_report_configs() -> Sample | None:
    # 23. the CDI field report with the node's configs and specs
    return Sample(
        "cdi-field-report-configs",
        {
            "pod-describe.txt": CDI_DESCRIBE,
            "etc-nvidia-container-runtime-config.toml": 'mode = "auto"\n[nvidia-container-runtime]\n  mode = "auto"\n  [nvidia-container-runtime.modes.cdi]\n    default-kind = "nvidia.com/gpu"\n',
            "gpu-operator-toolkit-config.toml": '[nvidia-container-runtime]\n  debug = "/dev/null"\n  log-level = "info"\n  mode = "cdi"\n  runtimes = ["runc", "crun"]\n  [nvidia-container-runtime.modes]\n    [nvidia-container-runtime.modes.cdi]\n      annotation-prefixes = ["cdi.k8s.io/"]\n      default-kind = "management.nvidia.com/gpu"\n      spec-dirs = ["/etc/cdi", "/var/run/cdi"]\n    [nvidia-container-runtime.modes.legacy]\n      cuda-compat-mode = "ldconfig"\n[nvidia-container-runtime-hook]\n  path = "/usr/local/nvidia/toolkit/nvidia-container-runtime-hook"\n  skip-mode-detection = true\n',
            "etc-cdi-nvidia.yaml": "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: GPU-2bd7f9eb-5916-6dc2-dea4-1d97d1fb848e\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n",
            "var-run-cdi-management.nvidia.com-gpu.yaml": "cdiVersion: 0.5.0\nkind: management.nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n",
            "var-run-cdi-k8s.device-plugin.nvidia.com-gpu.yaml": "cdiVersion: 0.5.0\nkind: k8s.device-plugin.nvidia.com/gpu\ndevices:\n- name: GPU-2bd7f9eb-5916-6dc2-dea4-1d97d1fb848e\n  containerEdits: {}\n",
        },
        {
            "description": "The field report with the node's toolkit configs (GPU Operator copy in CDI mode, default-kind management.nvidia.com/gpu) and CDI specs: the UUID is listed under nvidia.com/gpu and k8s.device-plugin.nvidia.com/gpu, management.nvidia.com/gpu has only 'all'.",
            "primary_category": "cdi-unresolvable",
            "must_fire": ["cdi-unresolvable-device", "cdi-default-kind-without-uuids"],
            "must_not_fire": ["pod-not-scheduled-by-hami", "containerd-default-runtime-not-nvidia"],
        },
    )


@sample
def runtime_runc_default() -> Sample | None:
    # 24. k3s-like: runc default runtime, plugin without NVML
    return Sample(
        "runtime-runc-default",
        {
            "containerd-config.toml": 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n    runtime_type = "io.containerd.runc.v2"\n  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n    runtime_type = "io.containerd.runc.v2"\n',
            "device-plugin.log": dp_start("gpu-node-24")[:13]
            + [
                "E0815 09:00:00.310200  412873 factory.go:135] Incompatible strategy detected auto",
                "E0815 09:00:00.310900  412873 main.go:201] error starting plugins: error getting plugins: unable to create plugins: failed to construct resource managers: invalid device discovery strategy",
            ],
        },
        {
            "description": "containerd keeps runc as default (k3s, GPU Operator >= 25.10) and the chart sets no runtimeClassName: the plugin has no NVML.",
            "primary_category": "plugin-crash-nvml",
            "must_fire": ["no-nvml-in-container", "containerd-default-runtime-not-nvidia"],
            "must_not_fire": ["nvml-device-call-failed"],
        },
    )


@sample
def gpumem_too_large() -> Sample | None:
    # 25. request larger than any card
    return Sample(
        "gpumem-too-large",
        {
            "node.yaml": node_yaml(
                "gpu-node-25",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-nvidia-register": reg(
                        [dev(0, typ="NVIDIA GeForce RTX 4090", mem=24564)]
                    )
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: llm-infer-0\n  namespace: default\nspec:\n  schedulerName: hami-scheduler\n  containers:\n  - name: llm\n    image: vllm/vllm-openai:v0.6.0\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n        nvidia.com/gpumem: 40000\nstatus:\n  phase: Pending\n",
        },
        {
            "description": "A 40000 MiB vGPU requested on a node whose cards have 24564 MiB: no card can ever fit it.",
            "primary_category": "resource-insufficient",
            "must_fire": ["gpumem-larger-than-any-card", "count-link-ok", "spec-link-ok"],
            "must_not_fire": ["gpu-count-larger-than-node", "pod-not-scheduled-by-hami"],
        },
    )


@sample
def aks_managed_pool() -> Sample | None:
    # 26. AKS managed pool
    return Sample(
        "aks-managed-pool",
        {
            "node.yaml": node_yaml(
                "aks-gpupool-12345678-vmss000000",
                labels={
                    "gpu": "on",
                    "kubernetes.azure.com/agentpool": "gpupool",
                    "kubernetes.azure.com/dcgm-exporter": "enabled",
                    "kubernetes.azure.com/accelerator": "nvidia",
                },
                allocatable={"nvidia.com/gpu": "1"},
                taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            ),
        },
        {
            "description": "AKS pool created with the managed GPU experience: its own NVIDIA device plugin registers nvidia.com/gpu=1; HAMi has no annotation.",
            "primary_category": "aks-managed-conflict",
            "must_fire": ["aks-managed-gpu-pool", "register-annotation-absent"],
            "must_not_fire": ["untolerated-taint", "no-gpu-label"],
        },
    )


@sample
def gpu_operator_plugin_conflict() -> Sample | None:
    # 27. GPU operator device plugin next to HAMi
    return Sample(
        "gpu-operator-plugin-conflict",
        {
            "node.yaml": node_yaml(
                "gpu-node-27",
                labels={
                    "gpu": "on",
                    "nvidia.com/gpu.deploy.device-plugin": "true",
                    "nvidia.com/gpu.present": "true",
                },
                annotations={"hami.io/node-nvidia-register": reg([dev(0)])},
                allocatable={"nvidia.com/gpu": "1"},
            ),
            "pods.txt": "NAMESPACE      NAME                                       READY   STATUS    RESTARTS   AGE\ngpu-operator   nvidia-device-plugin-daemonset-x7k2p       1/1     Running   0          3d\ngpu-operator   nvidia-container-toolkit-daemonset-r4x86   1/1     Running   0          3d\nkube-system    hami-device-plugin-9dkq2                   2/2     Running   0          3d\nkube-system    hami-scheduler-6d8f9c7b5-x2k4q             2/2     Running   0          3d\n",
        },
        {
            "description": "GPU Operator installed with its device plugin enabled next to HAMi's: allocatable shows 1 (NVIDIA's plugin won), not 10.",
            "primary_category": "multiple-device-plugins",
            "must_fire": [
                "gpu-operator-device-plugin-enabled",
                "two-device-plugins-running",
                "allocatable-register-mismatch",
            ],
            "must_not_fire": ["no-gpu-label"],
        },
    )


@sample
def helm_split_count_old_key() -> Sample | None:
    # 28. chart 2.11 with the old split-count key
    return Sample(
        "helm-split-count-old-key",
        {
            "values.yaml": "global:\n  imageTag: v2.11.0\ndevicePlugin:\n  deviceSplitCount: 4\n  runtimeClassName: nvidia\nscheduler:\n  leaderElect: true\n",
        },
        {
            "description": "Chart 2.11 values still set devicePlugin.deviceSplitCount, which 2.11 no longer reads.",
            "primary_category": "scheduling-other",
            "must_fire": ["split-count-under-old-key"],
            "must_not_fire": ["split-count-under-new-key-on-old-chart"],
        },
    )


@sample
def gputype_selector_no_match() -> Sample | None:
    # 29. type selector that matches no card
    return Sample(
        "gputype-selector-no-match",
        {
            "node.yaml": node_yaml(
                "gpu-node-29",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-nvidia-register": reg(
                        [
                            dev(0, typ="NVIDIA GeForce RTX 4090", mem=24564),
                            dev(1, typ="NVIDIA GeForce RTX 4090", mem=24564),
                        ]
                    )
                },
                allocatable={"nvidia.com/gpu": "20"},
            ),
            "pod.yaml": 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-0\n  namespace: ml\n  annotations:\n    nvidia.com/use-gputype: "A100,H100"\nspec:\n  schedulerName: hami-scheduler\n  containers:\n  - name: t\n    image: pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n        nvidia.com/gpumem: 8000\nstatus:\n  phase: Pending\n',
        },
        {
            "description": "The pod asks for A100/H100 cards by annotation on a node of RTX 4090s.",
            "primary_category": "scheduling-other",
            "must_fire": ["selector-matches-no-card", "count-link-ok", "spec-link-ok"],
            "must_not_fire": ["gpumem-larger-than-any-card", "gpu-count-larger-than-node"],
        },
    )


@sample
def gpumem_limit_not_enforced() -> Sample | None:
    # 30. container without HAMi-core: nvidia-smi shows the whole card
    return Sample(
        "gpumem-limit-not-enforced",
        {
            "pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gpu-pod\n  namespace: default\nspec:\n  schedulerName: hami-scheduler\n  containers:\n  - name: c\n    image: nvidia/cuda:12.2.0-base-ubuntu22.04\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n        nvidia.com/gpumem: 3000\nstatus:\n  phase: Running\n",
            "nvidia-smi-in-pod.txt": "+---------------------------------------------------------------------------------------+\n| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n|-----------------------------------------+----------------------+----------------------+\n| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n|   0  Tesla T4                       Off | 00000000:00:07.0 Off |                    0 |\n| N/A   34C    P8               9W /  70W |      0MiB / 15360MiB |      0%      Default |\n+-----------------------------------------+----------------------+----------------------+\n",
        },
        {
            "description": "Inside a pod limited to 3000 MiB, nvidia-smi shows the card's 15360 MiB: HAMi-core is not active.",
            "primary_category": "runtime-other",
            "must_fire": ["container-sees-physical-memory"],
            "must_not_fire": ["cdi-unresolvable-device", "oci-runtime-error"],
        },
    )


@sample
def aks_plugin_pinned_elsewhere() -> Sample | None:
    # 31. AKS: plugin pinned to another pool, driver root copied from an operator setup
    return Sample(
        "aks-plugin-pinned-elsewhere",
        {
            "values.yaml": "devicePlugin:\n  nvidiaDriverRoot: /run/nvidia/driver\n  nvidiaNodeSelector:\n    kubernetes.azure.com/agentpool: gpunp\n  tolerations:\n  - key: sku\n    operator: Equal\n    value: gpu\n    effect: NoSchedule\nscheduler:\n  admissionWebhook:\n    manageNamespaceSelector: false\n",
            "node.yaml": node_yaml(
                "aks-gpu2-26114557-vmss000000",
                labels={
                    "kubernetes.azure.com/agentpool": "gpu2",
                    "gpu": "on",
                    "kubernetes.azure.com/accelerator": "nvidia",
                },
                taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            ),
        },
        {
            "description": "AKS: the plugin is pinned to pool gpunp while the node is in gpu2, and nvidiaDriverRoot was copied from a GPU Operator setup onto a driver-only pool.",
            "primary_category": "no-device-plugin-pod",
            "must_fire": [
                "aks-plugin-selector-agentpool-mismatch",
                "driver-root-from-gpu-operator",
                "untolerated-taint",
            ],
            "must_not_fire": ["aks-managed-gpu-pool", "no-gpu-label"],
        },
    )


@sample
def mig_and_operator_runc() -> Sample | None:
    # 32. MIG partitions next to hami-core sharing, GPU Operator 25.10 with runc default
    return Sample(
        "mig-and-operator-runc",
        {
            "node.yaml": node_yaml(
                "gpu-node-32",
                labels={
                    "gpu": "on",
                    "nvidia.com/mig.config": "all-1g.10gb",
                    "nvidia.com/gpu.deploy.driver": "true",
                },
                annotations={
                    "hami.io/node-nvidia-register": reg(
                        [dev(0, typ="NVIDIA A100-SXM4-80GB", mem=81920)]
                    )
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "values.yaml": "devicePlugin:\n  deviceSplitCount: 10\nscheduler:\n  leaderElect: true\n",
            "operator-pods.txt": "NAMESPACE      NAME                                       READY   STATUS    RESTARTS   AGE\ngpu-operator   gpu-operator-7d9f8c6b5-abcde               1/1     Running   0          3d\n# image: nvcr.io/nvidia/gpu-operator:v25.10.0\n",
        },
        {
            "description": "GPU Operator 25.10 (runc stays the default runtime) without devicePlugin.runtimeClassName, and MIG partitions configured on GPUs HAMi shares in hami-core mode.",
            "primary_category": "runtimeclass",
            "must_fire": ["gpu-operator-keeps-runc", "mig-mixed-with-hami-core"],
            "must_not_fire": ["driver-root-from-gpu-operator", "two-device-plugins-running"],
        },
    )


@sample
def gpu_count_exceeds_cards() -> Sample | None:
    # 33-39: one small bundle for each remaining scheduling/platform rule
    one_4090 = reg([dev(0, typ="NVIDIA GeForce RTX 4090", mem=24564)])
    return Sample(
        "gpu-count-exceeds-cards",
        {
            "node.yaml": node_yaml(
                "gpu-node-33",
                labels={"gpu": "on"},
                annotations={"hami.io/node-nvidia-register": one_4090},
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "pod.yaml": POD.format(name="two-gpus", limits="        nvidia.com/gpu: 2\n"),
        },
        {
            "description": "nvidia.com/gpu: 2 on a node with one physical card (allocatable 10 is split slots, not cards).",
            "primary_category": "resource-insufficient",
            "must_fire": ["gpu-count-larger-than-node", "scaled-allocatable-is-normal"],
            "must_not_fire": ["gpumem-larger-than-any-card"],
        },
    )


@sample
def gpucores_over_100() -> Sample | None:
    return Sample(
        "gpucores-over-100",
        {
            "pod.yaml": POD.format(
                name="cores", limits="        nvidia.com/gpu: 1\n        nvidia.com/gpucores: 150\n"
            ),
        },
        {
            "description": "nvidia.com/gpucores 150: a percentage of one card cannot exceed 100.",
            "primary_category": "scheduling-other",
            "must_fire": ["gpucores-over-100"],
            "must_not_fire": ["hami-resources-without-gpu"],
        },
    )


@sample
def gpumem_without_gpu() -> Sample | None:
    return Sample(
        "gpumem-without-gpu",
        {
            "pod.yaml": POD.format(name="mem-only", limits="        nvidia.com/gpumem: 3000\n"),
        },
        {
            "description": "gpumem requested without nvidia.com/gpu: no vGPU is requested at all.",
            "primary_category": "scheduling-other",
            "must_fire": ["hami-resources-without-gpu"],
            "must_not_fire": ["gpucores-over-100"],
        },
    )


@sample
def oci_hook_failed() -> Sample | None:
    return Sample(
        "oci-hook-failed",
        {
            "pod-describe.txt": "Name:         gpu-pod\nNamespace:    default\nNode:         gpu-node-36/10.0.0.36\nStatus:       Pending\nContainers:\n  c:\n    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       StartError\n      Message:      failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown\nEvents:\n  Type     Reason   Age   From     Message\n  ----     ------   ----  ----     -------\n  Warning  Failed   10s   kubelet  Error: failed to create containerd task: OCI runtime create failed: runc create failed: error running hook #0: exit status 1\n",
        },
        {
            "description": "The NVIDIA prestart hook fails on the node (the host's libnvidia-ml is missing): an OCI runtime error at container start, not a HAMi one.",
            "primary_category": "runtime-other",
            "must_fire": ["oci-runtime-error"],
            "must_not_fire": ["cdi-unresolvable-device"],
        },
    )


@sample
def azure_capacity() -> Sample | None:
    return Sample(
        "azure-capacity",
        {
            "az-output.txt": "(OverconstrainedAllocationRequest) Allocation failed. VM(s) with the following constraints cannot be allocated, because the condition is too restrictive. Please remove some constraints and try again. Constraints applied are:\n  - VM Size\n  - Availability Zone\n",
        },
        {
            "description": "Creating the AKS GPU node pool failed with an Azure capacity error.",
            "primary_category": "scheduling-other",
            "must_fire": ["azure-capacity-error"],
            "must_not_fire": ["aks-managed-gpu-pool"],
        },
    )


@sample
def helm_split_count_new_key() -> Sample | None:
    return Sample(
        "helm-split-count-new-key",
        {
            "values.yaml": "global:\n  imageTag: v2.10.0\ndevices:\n  nvidia:\n    deviceSplitCount: 4\nscheduler:\n  leaderElect: true\n",
        },
        {
            "description": "Chart 2.10 values use the 2.11 key devices.nvidia.deviceSplitCount, which 2.10 does not read.",
            "primary_category": "scheduling-other",
            "must_fire": ["split-count-under-new-key-on-old-chart"],
            "must_not_fire": ["split-count-under-old-key"],
        },
    )


@sample
def aks_webhook_selector_conflict() -> Sample | None:
    return Sample(
        "aks-webhook-selector-conflict",
        {
            "helm-upgrade.txt": '$ helm upgrade hami hami-charts/hami -n kube-system -f values.yaml\nError: UPGRADE FAILED: conflict occurred while applying object /hami-webhook admissionregistration.k8s.io/v1, Kind=MutatingWebhookConfiguration: Apply failed with 1 conflict: conflict with "aks-webhook-admission-controller" using admissionregistration.k8s.io/v1: .webhooks[name="vgpu.hami.io"].namespaceSelector\n',
        },
        {
            "description": "helm upgrade on AKS fails: AKS and the chart both own the webhook's namespaceSelector.",
            "primary_category": "aks-managed-conflict",
            "must_fire": ["aks-namespace-selector-ownership"],
            "must_not_fire": ["azure-capacity-error"],
        },
    )


@sample
def pod_not_scheduled_by_hami() -> Sample | None:
    # 21. default scheduler
    return Sample(
        "pod-not-scheduled-by-hami",
        {
            "pod-describe.txt": DEFAULT_SCHED_DESCRIBE,
        },
        {
            "description": "The webhook did not rewrite schedulerName; default-scheduler reports Insufficient nvidia.com/gpumem.",
            "primary_category": "scheduling-other",
            "must_fire": ["pod-not-scheduled-by-hami"],
            "must_not_fire": ["filtering-failed-registration-ok", "cdi-unresolvable-device"],
        },
    )


@sample
def two_nodes_one_crash() -> Sample | None:
    """Two GPU nodes in one bundle, each plugin log saved as `kubectl logs --tail` under its
    node's name: the tails name no node, so each finds its node by its file name. gpu-node-1
    works; gpu-node-2's plugin cannot load NVML and never registered (no annotation, no
    allocatable). The scheduler log is the cluster's and sees gpu-node-1 only."""
    one = [dev(0)]
    healthy_tail = healthy_dp("gpu-node-1", one)[len(dp_start("gpu-node-1")) :]
    crash_tail = [
        f"I0815 {ts(120)} {PID + 2:>7} config.go:257] All devices initialized successfully",
        f"E0815 {ts(120.5)} {PID + 2:>7} register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND",
        "panic: 0",
        "",
        "goroutine 58 [running]:",
        "github.com/Project-HAMi/HAMi/pkg/device-plugin/nvidiadevice/nvinternal/plugin.(*NvidiaDevicePlugin).getAPIDevices(0xc0004b8000)",
        "\t/k8s-vgpu/pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:97 +0x1e0c",
    ]
    assert not any("gpu-node" in line for line in healthy_tail + crash_tail)
    return Sample(
        "two-nodes-one-plugin-crash",
        {
            "node-1.yaml": node_yaml(
                "gpu-node-1",
                labels={"gpu": "on"},
                annotations={
                    "hami.io/node-handshake": "Requesting_2026-08-15 10:19:50",
                    "hami.io/node-nvidia-register": reg(one),
                },
                allocatable={"nvidia.com/gpu": "10"},
            ),
            "node-2.yaml": node_yaml("gpu-node-2", labels={"gpu": "on"}, allocatable={}),
            "device-plugin-gpu-node-1.log": healthy_tail,
            "device-plugin-gpu-node-2.log": crash_tail,
            "scheduler.log": healthy_sched("gpu-node-1", one),
        },
        {
            "description": "Two nodes: gpu-node-2's plugin cannot load NVML (case 2), gpu-node-1 "
            "works; each plugin log is its node's by its file name, and only gpu-node-2 fails.",
            "primary_category": "plugin-crash-nvml",
            "must_fire": ["nvml-init-failed"],
            "must_not_fire": ["count-link-ok", "spec-link-ok"],
            "nodes": {
                "gpu-node-1": {
                    "primary_category": "healthy",
                    "must_fire": ["count-link-ok", "spec-link-ok"],
                    "must_not_fire": NORMAL_FAULTS,
                    "evidence_files": [
                        "node-1.yaml",
                        "device-plugin-gpu-node-1.log",
                        "scheduler.log",
                    ],
                },
                "gpu-node-2": {
                    "primary_category": "plugin-crash-nvml",
                    "must_fire": ["nvml-init-failed"],
                    "must_not_fire": ["count-link-ok", "spec-link-ok", "liveness-link-ok"],
                    "evidence_files": ["node-2.yaml", "device-plugin-gpu-node-2.log"],
                },
            },
        },
    )


CDI_DESCRIBE = """Name:                gpu-pod
Namespace:           default
Priority:            0
Runtime Class Name:  nvidia
Service Account:     default
Node:                10-30-15-55/10.30.15.55
Start Time:          Wed, 29 Jul 2026 14:46:05 +0800
Labels:              hami.io/vgpu-node=10-30-15-55
Annotations:         hami.io/bind-phase: success
                     hami.io/bind-time: 1785307565
                     hami.io/vgpu-devices-allocated: GPU-2bd7f9eb-5916-6dc2-dea4-1d97d1fb848e,NVIDIA,24564,100:;
                     hami.io/vgpu-devices-to-allocate: ;;
                     hami.io/vgpu-node: 10-30-15-55
                     hami.io/vgpu-time: 1785307565
Status:              Running
IP:                  192.168.72.245
Containers:
  ubuntu-container:
    Container ID:  containerd://b7a8bdc793a48b31fe697421fa228615df91393de74ecdf74e582e9b7aed19b1
    Image:         ubuntu:18.04
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       StartError
      Message:      failed to create containerd task: failed to create shim task: OCI runtime create failed: could not apply required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices management.nvidia.com/gpu=GPU-2bd7f9eb-5916-6dc2-dea4-1d97d1fb848e
      Exit Code:    128
    Ready:          False
    Restart Count:  4
    Limits:
      nvidia.com/gpu:     1
      nvidia.com/gpumem:  10240
Events:
  Type     Reason     Age                From            Message
  ----     ------     ----               ----            -------
  Normal   Scheduled  2m                 hami-scheduler  Successfully assigned default/gpu-pod to 10-30-15-55
  Normal   Pulled     50s (x4 over 2m)   kubelet         Container image "ubuntu:18.04" already present on machine
  Warning  Failed     50s (x4 over 2m)   kubelet         Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: could not apply required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices management.nvidia.com/gpu=GPU-2bd7f9eb-5916-6dc2-dea4-1d97d1fb848e: unknown
  Warning  BackOff    10s (x8 over 2m)   kubelet         Back-off restarting failed container ubuntu-container in pod gpu-pod_default(6b1e2f7a-1c43-4e0a-9d7b-2f0c1a5e8b11)
"""

DEFAULT_SCHED_DESCRIBE = """Name:             gpu-pod
Namespace:        default
Node:             <none>
Status:           Pending
Containers:
  gpu-test:
    Image:      nvidia/cuda:11.0.3-base
    Limits:
      nvidia.com/gpu:       2
      nvidia.com/gpucores:  30
      nvidia.com/gpumem:    3000
Events:
  Type     Reason            Age                  From               Message
  ----     ------            ----                 ----               -------
  Warning  FailedScheduling  4m11s (x11 over 54m)  default-scheduler  0/2 nodes are available: 1 Insufficient nvidia.com/gpucores, 1 Insufficient nvidia.com/gpumem, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling..
"""


def build_all(root: Path) -> list[str]:
    """Write every sample under root; the names of the samples whose builder was skipped."""
    skipped = []
    for builder in BUILDERS:
        built = builder()
        if built is None:
            skipped.append(builder.__name__.replace("_", "-"))
        else:
            write(root, built)
    return skipped


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def differences(built: Path, kept: Path, skipped: list[str]) -> list[str]:
    """What differs between freshly built samples and the kept ones (a skipped sample's kept
    files are not compared: its source is not here to rebuild it from)."""
    new, old = _files(built), _files(kept)
    old = {k: v for k, v in old.items() if k.split("/", 1)[0] not in skipped}
    out = [f"missing from {kept.name}/: {k}" for k in sorted(new.keys() - old.keys())]
    out += [f"not built by this script: {kept.name}/{k}" for k in sorted(old.keys() - new.keys())]
    for k in sorted(new.keys() & old.keys()):
        if new[k] != old[k]:
            diff = difflib.unified_diff(
                old[k].decode("utf-8", "replace").splitlines(),
                new[k].decode("utf-8", "replace").splitlines(),
                f"{kept.name}/{k}",
                "built",
                lineterm="",
                n=1,
            )
            out.append(f"differs: {kept.name}/{k}\n" + "\n".join(list(diff)[:12]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="build in a temporary folder and compare")
    ap.add_argument("--out", type=Path, default=ROOT, help=f"where to write (default {ROOT})")
    args = ap.parse_args(argv)
    if not args.check:
        skipped = build_all(args.out)
        for name in skipped:
            print(f"skipped {name}: its source (../shared/reference) is not beside the checkout")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        skipped = build_all(Path(tmp))
        problems = differences(Path(tmp), args.out, skipped)
    for name in skipped:
        print(f"not checked {name}: its source (../shared/reference) is not beside the checkout")
    if problems:
        print(f"{len(problems)} difference(s) between {args.out} and what make_samples.py builds:")
        print("\n".join(problems))
        print("Run `python tools/make_samples.py` (or fix the builder) and read `git diff`.")
        return 1
    print(f"{len(BUILDERS) - len(skipped)} samples match {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
