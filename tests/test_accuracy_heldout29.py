"""Twenty-ninth and thirtieth measurements (issue 25, session 41): two sets of unseen real cases
(HAMi and its neighbours; NVIDIA's operator, toolkit and the small distributions) and the classes
they and the twenty-eighth left. Each class is checked on made-up inputs (none copied from a real
case): a GPU Operator driver container whose kernel modules do not compile, CUDA's "driver version
is insufficient" (no driver mounted, more often than an old one), the ClusterPolicy controller's
own reconcile error, and a crash frame in HAMi-core named by module and symbol."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, parse_texts, verdict_of

DRIVER_CTR = """\
DRIVER_ARCH is x86_64
Creating directory NVIDIA-Linux-x86_64-570.86.15
Resolving Linux kernel version...
Proceeding with Linux kernel version 6.8.0-1021-azure
Installing Linux kernel headers...
Compiling NVIDIA driver kernel modules...
make[2]: *** [scripts/Makefile.build:243: /usr/src/nvidia-570.86.15/kernel/nvidia/nv.o] Error 1
make[1]: *** [Makefile:1925: /usr/src/nvidia-570.86.15/kernel] Error 2
make: *** [Makefile:234: __sub-make] Error 2
Stopping NVIDIA persistence daemon...
Unloading NVIDIA driver kernel modules...
Unmounting NVIDIA driver rootfs...
"""


# ---- the driver container cannot compile the kernel modules --------------------------------
def test_a_driver_container_log_is_the_operators_log(ruleset):
    """The driver container's script prints its steps in words of its own; a paste of them is
    the GPU Operator's log, not a text nobody reads for its kind."""
    parsed = parse_texts(ruleset, {"driver.txt": DRIVER_CTR})
    assert [a.kind for a in parsed.artefacts] == ["gpu-operator-log"]


def test_kernel_modules_that_do_not_compile_are_a_failed_driver(ruleset):
    """kbuild's error on the driver's own sources: no driver was installed; the node's runtime
    has nothing to give, whatever waits on it (a runtime fault, not the plugin's wait)."""
    assert verdict_of(ruleset, {"driver.txt": DRIVER_CTR}) == (
        "gpu-operator-driver-failed",
        "runtime-other",
        "high",
    )


def test_a_compiler_warning_and_a_bare_make_error_are_no_failed_build(ruleset):
    """The kernel warns that the compiler differs whenever its version text does (gcc against cc
    of one release); `make: *** [...] modules` names no NVIDIA source."""
    text = (
        "Compiling NVIDIA driver kernel modules...\n"
        "warning: the compiler differs from the one used to build the kernel\n"
        "  The kernel was built by: gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n"
        "  You are using:           cc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\n"
        "make: *** [Makefile:89: modules] Error 2\n"
    )
    assert "gpu-operator-driver-failed" not in fired(diagnose_texts(ruleset, {"d.txt": text}))


# ---- CUDA's "driver version is insufficient" -------------------------------------------------
INSUFFICIENT = (
    "[Vector addition of 50000 elements]\n"
    "Failed to allocate device vector A (error code CUDA driver version is insufficient for CUDA"
    " runtime version)!\n"
)


def test_cuda_driver_insufficient_is_most_often_no_driver_mounted(ruleset):
    """CUDA returns it when libcuda.so is missing as well as when it is old; on a cluster the
    usual cause is a pod run by runc. Low: the same line follows an old driver."""
    assert verdict_of(ruleset, {"validator.log": INSUFFICIENT}) == (
        "cuda-finds-no-usable-driver",
        "runtimeclass",
        "low",
    )


def test_cuda_driver_insufficient_under_nvidias_runtime_is_no_runtime_class(ruleset):
    """The pod ran with runtimeClassName: nvidia, so the driver was mounted: not runc's doing."""
    describe = (
        "Name:         train-0\nNamespace:    ml\nNode:         gpu-1/10.0.0.5\n"
        "Status:       Failed\nContainers:\n  train:\n    Image:  example/train:cuda12.4\n"
        "    Limits:\n      nvidia.com/gpu:  1\nRuntime Class Name:  nvidia\n"
        "Events:       <none>\n"
    )
    app = "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version\n"
    for runtime_class in ("nvidia", "nvidia-cdi"):
        text = describe.replace("Class Name:  nvidia", f"Class Name:  {runtime_class}")
        report = diagnose_texts(ruleset, {"describe.txt": text, "app.log": app})
        assert "cuda-finds-no-usable-driver" not in fired(report), runtime_class


def test_the_validators_other_errors_keep_their_rule(ruleset):
    text = INSUFFICIENT.replace(
        "CUDA driver version is insufficient for CUDA runtime version", "unknown error"
    )
    assert verdict_of(ruleset, {"validator.log": text}) == (
        "gpu-operator-validation-workload-failed",
        "runtime-other",
        "medium",
    )


def test_cuda_driver_insufficient_quoted_in_an_issue(ruleset):
    text = (
        "# cuda-vector-add fails on k3s\n\nThe test pod says:\n\n```\n"
        + INSUFFICIENT
        + "```\n\nnvidia-smi works on the host.\n"
    )
    p = diagnose_issue(ruleset, text).primary
    assert (p.rule_id, p.category) == ("cuda-finds-no-usable-driver", "runtimeclass")


# ---- the ClusterPolicy controller's own error ------------------------------------------------
def test_controller_runtimes_reconciler_error_of_the_cluster_policy(ruleset):
    """controller-runtime logs a failed reconcile itself, under the controller's name (a logger
    before v0.15, a JSON key after): the operands are not deployed."""
    old = (
        "1.7001e+09\tERROR\tcontroller.clusterpolicy-controller\tReconciler error\t"
        '{"name": "cluster-policy", "namespace": "", "error": "no matches for kind'
        ' \\"RuntimeClass\\" in version \\"node.k8s.io/v1beta1\\""}\n'
    )
    new = (
        '{"level":"error","ts":"2026-01-05T10:00:00Z","msg":"Reconciler error",'
        '"controller":"clusterpolicy-controller","name":"cluster-policy",'
        '"error":"failed to get kernel version for node gpu-1"}\n'
    )
    for text in (old, new):
        assert verdict_of(ruleset, {"operator.log": text})[:2] == (
            "gpu-operator-reconcile-failed",
            "no-device-plugin-pod",
        )


# ---- a crash frame in HAMi-core --------------------------------------------------------------
def test_a_crash_reporters_frame_in_libvgpu(ruleset):
    """A crash reporter names a frame by module and symbol; one in libvgpu.so is a crash inside
    HAMi-core's hook, and its offset (`+0xd2`) is no count of GPUs."""
    text = (
        "Thread backtrace:\n"
        "000: libc.so.6!__sigaction+0x50\n"
        "001: libvgpu.so!cuMemHostAlloc+0x1f4\n"
        "002: libexample.so!example_start+0x3d9f\n"
    )
    report = diagnose_texts(ruleset, {"crash.txt": text})
    assert report.primary.rule_id == "hami-core-crashes-workload"
    hang = "#1  0x00007f3a1c2b4e52 in lock_shrreg () from /usr/local/vgpu/libvgpu.so\n"
    assert "hami-core-crashes-workload" not in fired(diagnose_texts(ruleset, {"bt.txt": hang}))
    (log,) = parse_texts(ruleset, {"crash.txt": text}).logs
    assert "sym-node-gpu-count" not in {sig for sigs in log.frame["sigs"] for sig in sigs}


# ---- every node short of cpu and memory too ------------------------------------------------
def test_nodes_short_of_cpu_and_memory_too_are_a_shortage(ruleset):
    """ "N Insufficient nvidia.com/gpu" on all N nodes reads as no node advertising GPUs, unless
    every node is short of cpu or memory as well: full nodes (a cluster to scale up)."""
    full = (
        "  Warning  FailedScheduling  20s  default-scheduler  0/6 nodes are available:"
        " 6 Insufficient cpu, 6 Insufficient memory, 6 Insufficient nvidia.com/gpu.\n"
    )
    assert "no-node-offers-a-gpu" not in fired(diagnose_texts(ruleset, {"events.txt": full}))
    only_gpu = full.replace("6 Insufficient cpu, 6 Insufficient memory, ", "")
    assert "no-node-offers-a-gpu" in fired(diagnose_texts(ruleset, {"events.txt": only_gpu}))
    some = full.replace("6 Insufficient cpu, 6 Insufficient memory", "2 Insufficient cpu")
    assert "no-node-offers-a-gpu" in fired(diagnose_texts(ruleset, {"events.txt": some}))
    # kube-scheduler sorts its reasons as "count reason" strings: a smaller cpu count comes first,
    # and every node short of memory still says full nodes
    memory = full.replace("6 Insufficient cpu", "3 Insufficient cpu")
    assert "no-node-offers-a-gpu" not in fired(diagnose_texts(ruleset, {"events.txt": memory}))
    # another pod's cpu shortage says nothing of the GPU pod's FitError
    web = "  Warning  FailedScheduling  30s  default-scheduler  0/6 nodes are available:"
    web += " 6 Insufficient cpu.\n"
    assert "no-node-offers-a-gpu" in fired(diagnose_texts(ruleset, {"events.txt": web + only_gpu}))


# ---- gpushare's placeholder: its extender's miss, or a second stack beside HAMi ---------------
PLACEHOLDER = (
    "  Warning  Failed  3s  kubelet  Error: failed to create containerd task: OCI runtime create"
    " failed: error running hook #0: error running hook: exit status 1, stdout: , stderr:"
    " nvidia-container-cli: device error: no-gpu-has-2048MiB-to-run: unknown device: unknown\n"
)


def test_gpushares_placeholder_alone_is_its_extenders_miss(ruleset):
    assert verdict_of(ruleset, {"events.txt": PLACEHOLDER})[:2] == (
        "gpushare-extender-did-not-assign",
        "scheduling-other",
    )


def test_gpushares_placeholder_beside_hami_is_a_second_stack(ruleset):
    beside = "  Normal  Scheduled  9s  hami-scheduler  Successfully assigned ml/a-0 to gpu-2\n"
    assert verdict_of(ruleset, {"events.txt": beside + PLACEHOLDER})[:2] == (
        "gpushare-plugin-answered",
        "multiple-device-plugins",
    )


# ---- containerd's default from its table shown whole -----------------------------------------
K3S_CONFIG = """\
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "rancher/mirrored-pause:3.6"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  disable_snapshot_annotations = true

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia".options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def test_lines_left_out_after_the_cri_table_keep_its_default(ruleset):
    """A paste with lines left out below the CRI containerd table still shows that table whole:
    no default_runtime_name in it is containerd's runc."""
    elided_after = K3S_CONFIG + "[... ...]\n"
    assert "containerd-default-runtime-not-nvidia" in fired(
        diagnose_texts(ruleset, {"config.toml": elided_after})
    )


def test_a_paste_cut_in_the_header_after_the_cri_table_keeps_its_default(ruleset):
    """The CRI table's keys all shown, the paste cut inside the next table's header line."""
    cut = K3S_CONFIG[: K3S_CONFIG.index(".runtimes.runc]") + len(".runtimes.runc")]
    assert "containerd-default-runtime-not-nvidia" in fired(
        diagnose_texts(ruleset, {"config.toml": cut})
    )


def test_lines_left_out_inside_the_cri_table_leave_the_default_unknown(ruleset):
    """Whatever the mark: `...` or `[... ...]` (which opens with a bracket, as a header would)."""
    for mark in ("  ...", "[... ...]"):
        inside = K3S_CONFIG.replace(
            '  snapshotter = "overlayfs"\n', f'  snapshotter = "overlayfs"\n{mark}\n'
        )
        assert "containerd-default-runtime-not-nvidia" not in fired(
            diagnose_texts(ruleset, {"config.toml": inside})
        ), mark


# ---- a GPU with no /dev/nvidiaN, a DRA driver never registered ---------------------------------
def test_a_gpu_without_a_device_minor_number(ruleset):
    """NVML has no minor number for a GPU that is not /dev/nvidiaN (WSL2's /dev/dxg, Tegra)."""
    log = (
        "I0101 10:00:00.000000       1 main.go:256] Starting Plugins.\n"
        "panic: Unable to load resource managers to manage plugin devices: error building device"
        " map: error building GPU device map: error building GPU Device: error getting device"
        " paths: error getting GPU device minor number: Not Supported\n"
    )
    assert verdict_of(ruleset, {"device-plugin.log": log})[:2] == (
        "gpu-without-device-node",
        "plugin-crash-nvml",
    )


def test_a_dra_driver_registered_late_is_no_missing_plugin(ruleset):
    """The kubelet says it on every try until the plugin registers: a pod running afterwards."""
    describe = (
        "Name:         train-0\nNamespace:    ml\nStatus:       Running\nEvents:\n"
        "  Type     Reason                         Age               From     Message\n"
        "  ----     ------                         ----              ----     -------\n"
        "  Warning  FailedPrepareDynamicResources  70s (x3 over 2m)  kubelet  Failed to prepare"
        " dynamic resources: prepare dynamic resources: DRA driver gpu.example.com is not"
        " registered\n"
        "  Normal   Started                        10s               kubelet  Started container t\n"
    )
    assert "dra-driver-not-on-node" not in fired(
        diagnose_texts(ruleset, {"describe.txt": describe})
    )
    # a running pod of its own does not explain another pod's event
    other = describe.replace("FailedPrepareDynamicResources", "Pulled").replace(
        "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.example.com"
        " is not registered",
        "Container image already present",
    )
    event = (
        "default  5s  Warning  FailedPrepareDynamicResources  pod/train-1  Failed to prepare"
        " dynamic resources: prepare dynamic resources: DRA driver gpu.example.com is not"
        " registered\n"
    )
    report = diagnose_texts(ruleset, {"describe.txt": other, "events.txt": event})
    assert "dra-driver-not-on-node" in fired(report)


def test_a_dra_driver_the_kubelet_does_not_know(ruleset):
    """With DRA the driver's kubelet plugin plays the device plugin's part."""
    event = (
        "  Warning  FailedPrepareDynamicResources  5s (x3 over 30s)  kubelet  Failed to prepare"
        " dynamic resources: prepare dynamic resources: DRA driver gpu.example.com is not"
        " registered\n"
    )
    assert verdict_of(ruleset, {"events.txt": event})[:2] == (
        "dra-driver-not-on-node",
        "no-device-plugin-pod",
    )


def test_a_cdi_error_broken_into_lines_at_its_colons(ruleset):
    """A reporter breaks a long event message after each colon: `invalid CDI Spec:` ends a line."""
    text = (
        "FailedPrepareDynamicResources: Failed to prepare dynamic resources:\n"
        "  unable to create CDI spec file for claim:\n"
        "  failed to write spec: invalid CDI Spec:\n"
        '  failed add device "abc-gpu-0": invalid device, empty device edits\n'
    )
    assert verdict_of(ruleset, {"event.txt": text})[:2] == ("cdi-spec-problem", "cdi-unresolvable")


def test_a_plugin_that_registers_again_on_its_served_server(ruleset):
    """grpc-go stops a process that registers a service on a server already serving: the
    plugin's restart after the kubelet's socket changed, quoted in an issue's prose."""
    text = (
        "# device plugin panics on start\n\nAfter the kubelet.sock event the plugin exits with"
        ' FATAL: [core] grpc: Server.RegisterService after Server.Serve for "v1beta1.DevicePlugin"'
        " and the pod restarts.\n"
    )
    p = diagnose_issue(ruleset, text).primary
    assert (p.rule_id, p.category) == (
        "plugin-restart-reregisters-on-a-served-server",
        "plugin-crash-nvml",
    )


# ---- the last two sets: MPS, HAMi-core's bare tag, an unlicensed vGPU --------------------------
def test_the_mps_daemon_not_answering_is_no_kubelet_registration(ruleset):
    """NVIDIA's plugin logs every Start error as "Failed to start plugin": the MPS daemon's is
    not the kubelet's socket."""
    log = (
        "E0310 10:00:05.000000       1 main.go:409] Failed to start plugin: error waiting for MPS"
        " daemon: error checking MPS daemon health: failed to send command to MPS daemon: exit"
        " status 1\n"
    )
    # the plugin's start fails: plugin-crash-nvml, as the 120th, 131st and 137th sets' builders read
    # it (session 51; it was runtime-other)
    assert verdict_of(ruleset, {"device-plugin.log": log})[:2] == (
        "mps-daemon-not-ready",
        "plugin-crash-nvml",
    )
    assert "kubelet-register-failed" not in fired(
        diagnose_texts(ruleset, {"device-plugin.log": log})
    )
    mps = "error waiting for MPS daemon: error checking MPS daemon health: failed to send command"
    mps += " to MPS daemon: exit status 1"
    kubelet = log.replace(mps, "dial unix /var/lib/kubelet/device-plugins/kubelet.sock: connect:")
    assert "kubelet-register-failed" in fired(diagnose_texts(ruleset, {"dp.log": kubelet}))
    # a bare deadline is also what serving the plugin's own socket says: no claim on kubelet.sock
    own = log.replace(mps, "context deadline exceeded")
    assert "kubelet-register-failed" not in fired(diagnose_texts(ruleset, {"dp.log": own}))


def test_hami_cores_tag_without_its_header_is_a_workload_log(ruleset):
    text = "[HAMI-core Msg]: unified_lock locked, waiting 1 second...\n" * 3
    parsed = parse_texts(ruleset, {"app.txt": text})
    assert [a.kind for a in parsed.artefacts] == ["workload-log"]


def test_an_unlicensed_vgpu(ruleset):
    smi = (
        "vGPU Software Licensed Product\n"
        "    Product Name                      : NVIDIA Virtual Compute Server\n"
        "    License Status                    : Unlicensed (Restricted)\n"
    )
    assert verdict_of(ruleset, {"smi-q.txt": smi})[:2] == ("vgpu-guest-unlicensed", "runtime-other")
    grace = smi.replace("Unlicensed (Restricted)", "Unlicensed (Unrestricted)")
    assert "vgpu-guest-unlicensed" not in fired(diagnose_texts(ruleset, {"smi-q.txt": grace}))


# ---- the last pair of sets: a renamed count resource, the driver that cannot start the GPU -----
def test_gpumem_with_a_renamed_count_resource_and_an_allocation(ruleset):
    """The chart may rename the count resource (nvidia.com/vgpu); HAMi allocated the pod a
    device, so it did ask for a vGPU."""
    pod = (
        "kind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        "    hami.io/vgpu-devices-allocated: 'GPU-0aa6b97c-d386-26ba-a94a-b9d27c2e3a71,NVIDIA,1000,0:;'\n"
        "spec:\n  containers:\n  - name: c\n    resources:\n"
        "      limits: {nvidia.com/vgpu: 1, nvidia.com/gpumem: 1000}\n"
    )
    assert "hami-resources-without-gpu" not in fired(diagnose_texts(ruleset, {"pod.yaml": pod}))


def test_the_driver_that_cannot_start_the_gpu_for_want_of_its_firmware(ruleset):
    dmesg = (
        "[    5.0] nvidia 0000:3b:00.0: Direct firmware load for nvidia/550.90.07/gsp_ga10x.bin"
        " failed with error -2\n"
        "[    5.0] NVRM: RmFetchGspRmImages: No firmware image found\n"
        "[    5.0] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x61:0x56:1927)\n"
    )
    report = diagnose_texts(ruleset, {"dmesg.txt": dmesg})
    assert (report.primary.rule_id, report.primary.category) == (
        "driver-cannot-initialise-gpu",
        "runtime-other",
    )
    assert "nvidia/550.90.07/gsp_ga10x.bin" in report.primary.title


# ---- from the last two sets: a binary for a newer glibc, Docker without the runtime ------------
def test_a_plugin_binary_built_for_a_newer_glibc(ruleset):
    log = (
        "nvidia-kubevirt-gpu-device-plugin: /lib64/libc.so.6: version `GLIBC_2.34' not found"
        " (required by nvidia-kubevirt-gpu-device-plugin)\n"
    )
    report = diagnose_texts(ruleset, {"device-plugin.log": log})
    assert (report.primary.rule_id, report.primary.category) == (
        "binary-needs-newer-glibc",
        "runtime-other",
    )
    assert "GLIBC_2.34" in report.primary.title


def test_docker_without_the_nvidia_runtime(ruleset):
    out = "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n"
    assert verdict_of(ruleset, {"out.txt": out})[:2] == (
        "docker-runtime-not-configured",
        "runtimeclass",
    )


def test_volcanos_missing_register_annotation_warning_is_a_note(ruleset):
    """Logged for every node without the device: a note, never a fault."""
    log = (
        "W1201 01:55:32.883264 40728 device_info.go:97] Failed to get node devices. nodeName n1,"
        " deviceType Ascend310P, error annos not found hami.io/node-register-Ascend310P\n"
    )
    report = diagnose_texts(ruleset, {"scheduler.log": log})
    assert "volcano-device-register-absent-is-routine" in fired(report)
    assert report.primary.category == "inconclusive"
