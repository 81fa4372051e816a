"""Twelfth measurement (issue 25, session 39) and classes left from the ninth and tenth: a set of
unseen real cases on the runtime and node side, other vendors' accelerators among them, found
those vendors' resources, their in-container errors and the GPU Operator's toolkit failing to
read the runtime's config unread; the earlier sets left a Jetson's GPU read as a missing
RuntimeClass and HAMi-core's crash stack unread. Each class is checked on made-up inputs (none
copied from a real case)."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, parse_texts

NO_RUNTIME_PLUGIN_LOG = (
    "I0301 10:00:00.100000       1 factory.go:107] Detected non-NVML platform: could not load "
    "NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"
    "I0301 10:00:00.100100       1 factory.go:107] Detected non-Tegra platform: "
    "/sys/devices/soc0/family file not found\n"
    "E0301 10:00:00.100200       1 factory.go:115] Incompatible platform detected\n"
)


def test_a_jetson_without_a_discovered_gpu_is_named(ruleset):
    """The plugin sees the board's Tegra files and NVML both, drops the Tegra resources and
    finds no device: a Jetson, not a node without the NVIDIA runtime."""
    log = (
        "I0510 07:00:01.000000    4242 factory.go:123] Detected NVML platform: found NVML library\n"
        "I0510 07:00:01.000100    4242 factory.go:123] Detected Tegra platform: "
        "/etc/nv_tegra_release found\n"
        "W0510 07:00:01.000200    4242 factory.go:145] Disabling Tegra-based resources on NVML system\n"
        "I0510 07:00:01.020000    4242 main.go:331] No devices found. Waiting indefinitely\n"
    )
    p = diagnose_texts(ruleset, {"device-plugin.log": log}).primary
    assert (p.rule_id, p.category, p.confidence) == (
        "jetson-gpu-not-discovered",
        "plugin-crash-nvml",
        "medium",
    )


def test_the_node_kernel_names_a_jetson_the_plugin_log_does_not(ruleset):
    node = (
        "kind: Node\nmetadata: {name: edge-7}\n"
        "status: {nodeInfo: {kernelVersion: 5.10.192-tegra, architecture: arm64}}\n"
    )
    report = diagnose_texts(
        ruleset, {"node.yaml": node, "device-plugin.log": NO_RUNTIME_PLUGIN_LOG}
    )
    assert report.primary.rule_id == "jetson-gpu-not-discovered"
    x86 = node.replace("5.10.192-tegra", "6.8.0-45-generic").replace("arm64", "amd64")
    report = diagnose_texts(ruleset, {"node.yaml": x86, "device-plugin.log": NO_RUNTIME_PLUGIN_LOG})
    assert "jetson-gpu-not-discovered" not in fired(report)
    assert report.primary.category == "plugin-crash-nvml"


def test_the_reporter_naming_the_board_counts_but_not_the_plugins_non_tegra_line(ruleset):
    body = "# plugin crash on our Orin\n\nWe run JetPack 6 on a Jetson AGX Orin.\n```\n{log}```\n"
    report = diagnose_texts(ruleset, {"issue.md": body.format(log=NO_RUNTIME_PLUGIN_LOG)})
    assert report.primary.rule_id == "jetson-gpu-not-discovered"
    plain = "# plugin crash\n\n```\n" + NO_RUNTIME_PLUGIN_LOG + "```\n"
    assert "jetson-gpu-not-discovered" not in fired(diagnose_texts(ruleset, {"issue.md": plain}))


def test_a_crash_stack_through_hami_core_is_its_crash(ruleset):
    log = (
        "!!!!!!! Segfault encountered !!!!!!!\n"
        '  File "/libvgpu/src/cuda/memory.c", line 311, in cuMemGetInfo_v2\n'
        '  File "torch/csrc/cuda/Module.cpp", line 120, in THCPModule_memGetInfo\n'
    )
    p = diagnose_texts(ruleset, {"workload.log": log}).primary
    assert (p.rule_id, p.category) == ("hami-core-crashes-workload", "runtime-other")
    other = log.replace("/libvgpu/src/cuda/memory.c", "/opt/app/src/alloc.c")
    assert "hami-core-crashes-workload" not in fired(
        diagnose_texts(ruleset, {"workload.log": other})
    )


def test_an_illegal_device_id_is_hami_cores_error(ruleset):
    log = "[HAMI-core ERROR (pid:12 thread=140011 multiprocess_memory_limit.c:840)]: Illegal device id: -7\n"
    p = diagnose_texts(ruleset, {"workload.log": log}).primary
    assert (p.rule_id, p.category) == ("hami-core-illegal-device-id", "runtime-other")
    assert "-7" in p.title


def test_the_toolkit_unable_to_read_the_runtime_config_is_named(ruleset):
    line = (
        'time="2025-02-01T09:00:00Z" level=error msg="error running nvidia-toolkit: unable to '
        "determine runtime options: unable to load containerd config: failed to load config: "
        'failed to run command chroot [/host containerd config dump]: exit status 127"\n'
    )
    p = diagnose_texts(ruleset, {"toolkit.txt": line}).primary
    assert (p.rule_id, p.category) == (
        "gpu-operator-toolkit-cannot-read-runtime-config",
        "runtime-other",
    )
    assert "containerd" in p.title and "not found" in p.title
    crio = line.replace(
        "[/host containerd config dump]: exit status 127",
        "[/host crio status config]: exit status 1",
    ).replace("containerd config", "crio config")
    p = diagnose_texts(ruleset, {"toolkit.txt": crio}).primary
    assert p.rule_id == "gpu-operator-toolkit-cannot-read-runtime-config"
    assert "crio" in p.title and "not found" not in p.title


def test_no_node_offering_another_vendors_device_is_a_missing_vendor_plugin(ruleset):
    """Every node short of a Hygon DCU for a pod: no DCU plugin registers it. The reporter's
    words about HAMi's own (NVIDIA) plugin crashing on that node do not outrank it."""
    events = (
        "  Warning  FailedScheduling  12s  hami-scheduler  0/2 nodes are available: "
        "2 Insufficient hygon.com/dcunum. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod.\n"
    )
    body = "# DCU pod pending\n\nhami-device-plugin keeps restarting on the DCU node.\n\n" + events
    for files in ({"events.txt": events}, {"issue.md": body}):
        p = diagnose_texts(ruleset, files).primary
        assert (p.rule_id, p.category) == ("no-node-offers-vendor-device", "no-device-plugin-pod")
        assert "hygon.com/dcunum" in p.title
    memory_only = events.replace("hygon.com/dcunum", "huawei.com/Ascend910B-memory")
    assert "no-node-offers-vendor-device" not in fired(
        diagnose_texts(ruleset, {"events.txt": memory_only})
    )


def test_another_vendors_device_missing_in_the_container(ruleset):
    for log in (
        "RuntimeError: HIP error: no ROCm-capable device is detected\n",
        "dcmi module initialize failed. ret is -8020\n",
    ):
        p = diagnose_texts(ruleset, {"workload.log": log}).primary
        assert (p.rule_id, p.category) == ("vendor-device-not-usable-in-container", "runtime-other")


def test_volcano_without_a_mig_geometry(ruleset):
    log = (
        'E0704 11:20:00.000000       1 utils.go:130] "extract mig geometry error and fall back to '
        'hamicore mode" err="mig type not found"\n'
    )
    p = diagnose_texts(ruleset, {"volcano-scheduler.log": log}).primary
    assert (p.rule_id, p.category) == ("volcano-mig-geometry-unknown", "scheduling-other")


def test_a_hyperkube_journal_is_the_kubelets(ruleset):
    journal = (
        "Mar 02 10:00:00 node-3 hyperkube[1811]: I0302 10:00:00.000000    1811 "
        "kubelet.go:1800] Starting kubelet main sync loop.\n"
    )
    parsed = parse_texts(ruleset, {"journal.txt": journal})
    assert [a.kind for a in parsed.artefacts] == ["kubelet-log"]


# The thirteenth set (recent HAMi releases and their features) found, on made-up inputs here:


def test_the_toolkit_unable_to_read_containerd_2s_config_is_not_the_plugins_config(ruleset):
    """'unable to load config:' is the plugin's wrap and the toolkit installer's: the toolkit's
    own reason (containerd 2.x's config version 3) names it."""
    log = (
        'time="2026-02-03T10:00:00Z" level=fatal msg="Error: unable to load config: unsupported '
        'config version: 3"\n'
    )
    report = diagnose_texts(ruleset, {"toolkit.txt": log})
    assert (report.primary.rule_id, report.primary.category) == (
        "toolkit-older-than-containerd-config",
        "runtime-other",
    )
    assert "nvidia-plugin-config-rejected" not in fired(report)
    plugin = (
        "E0203 10:00:00.000000       1 main.go:173] error starting plugins: unable to load config: "
        "unable to finalize config: unable to parse config file: error parsing config file: "
        "unmarshal error: unknown field\n"
    )
    assert diagnose_texts(ruleset, {"device-plugin.log": plugin}).primary.rule_id == (
        "nvidia-plugin-config-rejected"
    )


def test_a_webhook_denial_copied_with_a_capital_is_read(ruleset):
    text = 'Admission webhook "vgpu.hami.io" denied the request: pod has node assigned\n'
    p = diagnose_texts(ruleset, {"error.txt": text}).primary
    assert p.category == "scheduling-other" and p.rule_id == "webhook-denied-pod"


def test_a_register_value_cut_by_the_paste_is_not_a_corrupt_annotation(ruleset):
    """An opening quote never closed, a device record without its ':': the paste stopped, the
    annotation was not necessarily wrong."""
    for value in (
        "'GPU-77aa,10,24564,100,NVIDIA-NVIDIA",
        "GPU-77aa,10,24564,100,NVIDIA-NVIDIA A10",
    ):
        report = diagnose_texts(ruleset, {"ann.txt": f"hami.io/node-nvidia-register: {value}\n"})
        assert "register-annotation-invalid" not in fired(report)
        assert report.primary.category == "inconclusive"
    whole = "hami.io/node-nvidia-register: 'GPU-77aa,10,24564,100,NVIDIA-A10,0,true:'\n"
    assert "register-annotation-invalid" not in fired(diagnose_texts(ruleset, {"ann.txt": whole}))


SMI_HEAD = "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |\n"


def _smi_gpu(index: int, total_mib: int) -> str:
    """One GPU of nvidia-smi's table: its row, then its memory."""
    return (
        f"|   {index}  NVIDIA A10                Off | 00000000:0{index}:00.0 Off |        N/A |\n"
        f"| 30%   31C    P8    9W / 250W |      0MiB / {total_mib}MiB |      0%      Default |\n"
    )


def _pod_asking_gpumem(mib: int) -> str:
    return (
        "kind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  containers:\n    - name: c\n"
        f'      resources: {{limits: {{nvidia.com/gpu: "1", nvidia.com/gpumem: "{mib}"}}}}\n'
    )


def test_an_extra_uncapped_gpu_beside_a_capped_one_is_not_hami_core_missing(ruleset):
    pod = _pod_asking_gpumem(4000)
    both = SMI_HEAD + _smi_gpu(0, 4000) + _smi_gpu(1, 23028)
    report = diagnose_texts(ruleset, {"pod.yaml": pod, "smi.txt": both})
    assert report.primary.rule_id == "container-sees-more-gpus-than-allocated"
    one = SMI_HEAD + _smi_gpu(0, 23028)
    report = diagnose_texts(ruleset, {"pod.yaml": pod, "smi.txt": one})
    assert report.primary.rule_id == "container-sees-physical-memory"


def test_the_schedulers_mig_trace_is_its_log_and_a_misfit_without_a_bind(ruleset):
    trace = (
        'I0301 08:00:00.000100       1 device.go:695] "scoring pod" pod="ml/train-0" '
        'device="GPU-aa01" Memreq=0 MemPercentagereq=100 Coresreq=0 Nums=2 device index=3\n'
        "I0301 08:00:00.000200       1 device.go:598] MIG entry not found "
        "[{2g.20gb 20480 false} {2g.20gb 20480 false}]\n"
    )
    parsed = parse_texts(ruleset, {"trace.txt": trace})
    assert [a.kind for a in parsed.artefacts] == ["scheduler-log"]
    p = diagnose_texts(ruleset, {"trace.txt": trace}).primary
    assert (p.rule_id, p.category) == ("mig-request-does-not-fit", "scheduling-other")


# The fourteenth set (HAMi issues in Chinese, Volcano's vGPU, the old k8s-vgpu-scheduler):


def test_hami_resources_insufficient_in_a_bare_fit_error(ruleset):
    """ "Insufficient nvidia.com/gpumem" pasted without its event's From column: only a scheduler
    that does not know HAMi's resources says it, so the pod bypassed hami-scheduler."""
    text = "0/3 nodes are available: 3 Insufficient nvidia.com/gpumem.\n"
    p = diagnose_texts(ruleset, {"error.txt": text}).primary
    assert (p.rule_id, p.category) == (
        "hami-resources-counted-as-node-resources",
        "scheduling-other",
    )


def test_a_panic_observed_by_apimachinery_in_volcanos_log(ruleset):
    log = (
        "I0301 10:00:00.000000       1 session.go:240] Close Session 0a1b\n"
        'E0301 10:00:00.100000       1 runtime.go:79] Observed a panic: "invalid memory address or '
        'nil pointer dereference" (runtime error: invalid memory address or nil pointer dereference)\n'
        "goroutine 12 [running]:\n"
    )
    p = diagnose_texts(ruleset, {"volcano.log": log}).primary
    assert (p.rule_id, p.category) == ("scheduler-panicked", "scheduling-other")


def test_volcano_out_of_sync_and_without_device_registration(ruleset):
    sync = 'E0301 10:00:00.000000     9 node_info.go:298] "Node out of sync" name="g-3" resources=["nvidia.com/gpu"]\n'
    p = diagnose_texts(ruleset, {"volcano.log": sync}).primary
    assert p.rule_id == "volcano-node-out-of-sync"
    assert "g-3" in p.title
    uninit = "  Warning  FailedScheduling  3s  volcano  0/2 nodes are unavailable: 2 node not initialized with devicehamivgpu.\n"
    p = diagnose_texts(ruleset, {"events.txt": uninit}).primary
    assert (p.rule_id, p.category) == (
        "volcano-node-has-no-device-registration",
        "annotation-missing-or-stale",
    )


def test_a_plugin_socket_already_in_use(ruleset):
    log = (
        "E0301 10:00:00.000000       1 main.go:1] Could not start device plugin for 'nvidia.com/gpu': "
        "listen unix /var/lib/kubelet/device-plugins/nvidia-gpu.sock: bind: address already in use\n"
    )
    p = diagnose_texts(ruleset, {"device-plugin.log": log}).primary
    assert (p.rule_id, p.category) == ("plugin-socket-in-use", "multiple-device-plugins")


def test_a_gpu_pod_manifest_pinning_its_node(ruleset):
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeName: gpu-9\n  containers:\n"
        "    - name: c\n      resources: {limits: {nvidia.com/gpu: 2, nvidia.com/gpumem: 8000}}\n"
    )
    p = diagnose_texts(ruleset, {"pod.yaml": pod}).primary
    assert (p.rule_id, p.category) == ("pod-pins-node-name", "scheduling-other")
    cpu_only = pod.replace("nvidia.com/gpu: 2, nvidia.com/gpumem: 8000", "cpu: 1")
    assert "pod-pins-node-name" not in fired(diagnose_texts(ruleset, {"pod.yaml": cpu_only}))


# The fifteenth set (NVIDIA's plugin, operator and toolkit, 2024-2026):


def test_containerd_without_its_cri_plugin(ruleset):
    """`disabled_plugins = ["cri"]` (Docker's containerd package; a toolkit config written over
    its dump) read even in a config cut mid-table, where the TOML does not parse."""
    cut = (
        'version = 2\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi\n'
        '[... ...]\ndisabled_plugins = ["cri"]\nimports = ["/etc/containerd/config.toml"]\n'
    )
    p = diagnose_texts(ruleset, {"containerd.toml": cut}).primary
    assert (p.rule_id, p.category) == ("containerd-cri-plugin-disabled", "runtime-other")
    kept = cut.replace('disabled_plugins = ["cri"]', "disabled_plugins = []")
    assert "containerd-cri-plugin-disabled" not in fired(
        diagnose_texts(ruleset, {"containerd.toml": kept})
    )


# A review of the rules above (a helper, read-only) built inputs they read wrongly; each here:


def test_the_new_rules_stand_down_where_the_review_found_them_wrong(ruleset):
    hami_event = (
        "Name: vllm-0\nNamespace: default\nNode: <none>\nStatus: Pending\nEvents:\n"
        "  Type     Reason            Age   From            Message\n"
        "  ----     ------            ----  ----            -------\n"
        "  Warning  FailedScheduling  30s   hami-scheduler  0/2 nodes are available: 2 Insufficient "
        "nvidia.com/gpumem.\n"
    )
    assert "hami-resources-counted-as-node-resources" not in fired(
        diagnose_texts(ruleset, {"pod-describe.txt": hami_event})
    )
    bound = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        "    hami.io/bind-phase: success\n    hami.io/vgpu-node: gpu-2\nspec:\n"
        "  schedulerName: hami-scheduler\n  nodeName: gpu-2\n  containers:\n    - name: c\n"
        "      resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    assert "pod-pins-node-name" not in fired(diagnose_texts(ruleset, {"pod.yaml": bound}))
    cpu = 'E0301 10:00:00.000000     9 node_info.go:298] "Node out of sync" name="w-7" resources=["cpu"]\n'
    assert "volcano-node-out-of-sync" not in fired(diagnose_texts(ruleset, {"volcano.log": cpu}))
    retried = (
        "E0301 10:00:00.000000       1 main.go:1] Could not start device plugin for 'nvidia.com/gpu': "
        "listen unix /var/lib/kubelet/device-plugins/nvidia-gpu.sock: bind: address already in use\n"
        "I0301 10:00:30.000000       1 server.go:1] Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"
    )
    assert "plugin-socket-in-use" not in fired(
        diagnose_texts(ruleset, {"device-plugin.log": retried})
    )


def test_a_jetson_the_reporter_runs_elsewhere_is_not_this_x86_node(ruleset):
    body = (
        "# no GPU registered\n\nOur x86 server (kernel 5.15.0-91-generic, x86_64) registers nothing; "
        "we also run a Jetson AGX Orin in another cluster.\n```\n" + NO_RUNTIME_PLUGIN_LOG + "```\n"
    )
    report = diagnose_texts(ruleset, {"issue.md": body})
    assert "jetson-gpu-not-discovered" not in fired(report)
    assert report.primary.category == "plugin-crash-nvml"


def test_a_hosts_nvidia_smi_is_not_an_extra_gpu_in_the_container(ruleset):
    pod = _pod_asking_gpumem(20000)
    host = SMI_HEAD + _smi_gpu(0, 15360) + _smi_gpu(1, 24564)
    report = diagnose_texts(ruleset, {"pod.yaml": pod, "smi.txt": host})
    assert "container-sees-more-gpus-than-allocated" not in fired(report)


def test_a_mig_misfit_then_a_bind_elsewhere(ruleset):
    trace = (
        "I0301 08:00:00.000200       1 device.go:598] MIG entry not found [{2g.20gb 20480 false}]\n"
    )
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t-0\n  annotations: {hami.io/bind-phase: success}\n"
        "spec:\n  containers:\n    - name: c\n      resources: {limits: {nvidia.com/gpu: 1}}\n"
        "status: {phase: Running}\n"
    )
    report = diagnose_texts(ruleset, {"scheduler.log": trace, "pod.yaml": pod})
    assert "mig-request-does-not-fit" not in fired(report)


# The sixteenth set (node registration, and questions a maintainer answered "expected"):


def test_an_ssh_session_in_the_container_sees_the_whole_card(ruleset):
    body = (
        "# nvidia-smi differs\n\nkubectl exec shows the 8000MiB limit, but after installing openssh "
        "in the container, logging in via ssh shows the full memory of the card.\n"
    )
    p = diagnose_issue(ruleset, body).primary
    assert p.category == "healthy"


def test_a_gpu_node_the_scheduler_drops_is_not_a_gpu_marked_unhealthy(ruleset):
    body = "# Scheduler marks GPU nodes as unhealthy after 60s, removing them from cache\n"
    assert "gpu-unhealthy-described" not in fired(diagnose_issue(ruleset, body))
    gpu = "# The device plugin marked GPU-3 as unhealthy after an Xid\n"
    assert "gpu-unhealthy-described" in fired(diagnose_issue(ruleset, gpu))


# The seventeenth set (a broad sample, measured after the session's fixes):


def test_a_private_host_mount_under_a_propagated_volume(ruleset):
    event = (
        '  Warning  Failed  9s  kubelet  Error: failed to generate container "ab12" spec: failed to '
        'generate spec: path "/run/nvidia/driver" is mounted on "/run" but it is not a shared mount\n'
    )
    p = diagnose_texts(ruleset, {"events.txt": event}).primary
    assert (p.rule_id, p.category) == ("host-mount-not-shared", "runtime-other")
    assert "/run" in p.title
