"""Forty-third to forty-seventh measurements (issue 25, session 42): five sets of unseen real cases
(HAMi and its other vendors' plugins; NVIDIA's plugin and operator; GPU scheduling outside HAMi;
nodes and pods described; the container runtime) and the classes they left. Each class is checked
on made-up inputs (none copied from a real case): a GPU lost under the plugin's link query, the
kubelet's "no healthy devices" without the plugin's side, a plugin restart that completed (read
in a journal printed newest first), a node without the label its plugin selects, a config pasted
without a fence, errors broken by hand or named only in a title, the host's nvidia-smi beside a
pod's limit, and containerd unable to start a shim."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, verdict_of

ADMISSION = (
    "  Warning  UnexpectedAdmissionError  12s  kubelet  Allocate failed due to device plugin "
    "GetPreferredAllocation rpc failed with err: rpc error: code = Unknown desc = error getting "
    "list of preferred allocation devices: {inner}, which is unexpected\n"
)


# ---- the plugin's link query fails: a GPU lost since it started --------------------------------
def test_a_failed_link_query_is_a_lost_gpu(ruleset):
    """The running plugin reads every GPU pair's links to answer GetPreferredAllocation; a card
    that stopped answering NVML fails that query (device-unhealthy), cut or not."""
    for inner in (
        "unable to get device link information: error getting NVLink for devices (0, 3): "
        "failed to get nvlink state: Unknown Error",
        "unable to get device link information: ...",
    ):
        text = "Events:\n" + ADMISSION.format(inner=inner)
        assert verdict_of(ruleset, {"describe.txt": text}) == (
            "gpu-lost-while-choosing-devices",
            "device-unhealthy",
            "medium",
        )


def test_the_plugins_own_nvml_access_is_not_a_lost_gpu(ruleset):
    """nvml.Init or a permission failing is the plugin's own NVML access (plugin-crash-nvml)."""
    for inner in (
        "unable to get device link information: error calling nvml.Init: Driver Not Loaded",
        "Unable to retrieve list of available devices: error creating nvml.Device 0: nvml: "
        "Insufficient Permissions",
    ):
        text = "Events:\n" + ADMISSION.format(inner=inner)
        rule, category, _ = verdict_of(ruleset, {"describe.txt": text})
        assert (rule, category) == ("plugin-nvml-failed-choosing-devices", "plugin-crash-nvml")


# ---- the kubelet's "no healthy devices present" ----------------------------------------------
NO_HEALTHY = (
    "  Warning  UnexpectedAdmissionError  20s  kubelet  Allocate failed due to no healthy devices "
    "present; cannot allocate unhealthy devices example.com/npu-a, which is unexpected\n"
)


def test_the_kubelets_no_healthy_devices_alone_is_low(ruleset):
    """The kubelet's check fails alike for devices the plugin marked and for a plugin not yet
    registered (its own comment names a reboot): alone it says little."""
    assert verdict_of(ruleset, {"describe.txt": "Events:\n" + NO_HEALTHY}) == (
        "kubelet-has-no-healthy-device-unexplained",
        "device-unhealthy",
        "low",
    )


def test_the_plugins_own_unhealthy_mark_makes_it_medium(ruleset):
    """The plugin's log says which device it marked: the devices themselves went bad. "No longer
    healthy" alone is no such word (the kubelet says it when device IDs change, too)."""
    xid = (
        "I0303 10:00:02.118001       1 health.go:159] XidCriticalError: Xid=79 on "
        "Device=GPU-6f3a3b1c-1d2e-4f5a-8b9c-0d1e2f3a4b5c; marking device as unhealthy.\n"
    )
    files = {"describe.txt": "Events:\n" + NO_HEALTHY, "dp.log": xid}
    assert "kubelet-has-no-healthy-device" in fired(diagnose_texts(ruleset, files))
    no_longer = NO_HEALTHY.replace(
        "no healthy devices present", "previously allocated devices are no longer healthy"
    )
    assert verdict_of(ruleset, {"describe.txt": "Events:\n" + no_longer})[2] == "low"


def test_a_kubelet_message_broken_by_hand_is_still_read(ruleset):
    """A reporter who breaks the message after its semicolon keeps its first half."""
    issue = (
        "# NPUs stay unhealthy\n\n```\nWarning  UnexpectedAdmissionError  kubelet\n"
        "  Allocate failed due to no healthy devices present;\n"
        "  cannot allocate unhealthy devices example.com/npu-a\n```\n"
    )
    primary = diagnose_issue(ruleset, issue).worst.primary
    assert (primary.rule_id, primary.category) == (
        "kubelet-has-no-healthy-device-unexplained",
        "device-unhealthy",
    )
    assert "no healthy device to allocate" in primary.title  # no empty resource name in it


def test_kubelet_without_restarting_is_no_kubelet_restart(ruleset):
    """ "republished to the kubelet without restarting the pod" names no kubelet restart: the
    registration race is not read from it."""
    issue = (
        "# devices stay unhealthy\n\n```\n" + NO_HEALTHY + "```\n\nA device that recovers "
        "should be republished to kubelet without restarting the Pod.\n"
    )
    assert "admission-before-plugin-reregistered" not in fired(diagnose_issue(ruleset, issue))


# ---- a plugin restart that completed -----------------------------------------------------------
EOF_LINE = (
    'Mar 03 10:00:{s} gpu-a kubelet[901]: E0303 10:00:{s}.100000     901 client.go:90] "ListAndWatch '
    'ended unexpectedly for device plugin" err="EOF" resource="example.com/npu-a"\n'
)
REG_LINE = (
    'Mar 03 10:00:{s} gpu-a kubelet[901]: I0303 10:00:{s}.200000     901 server.go:160] "Got '
    'registration request from device plugin with resource" resourceName="example.com/npu-a"\n'
)


def test_a_restart_that_completed_is_no_lost_plugin(ruleset):
    """The stream ended and the plugin registered again three seconds later: its devices are
    back. Read by the klog times, so a journal printed newest first (`journalctl -r`) says it too."""
    for log in (
        EOF_LINE.format(s="05") + REG_LINE.format(s="08"),
        REG_LINE.format(s="08") + EOF_LINE.format(s="05"),  # newest first
    ):
        assert "kubelet-lost-device-plugin" not in fired(
            diagnose_texts(ruleset, {"kubelet.log": log})
        )


def test_a_plugin_lost_again_after_it_registered_is_lost(ruleset):
    log = EOF_LINE.format(s="05") + REG_LINE.format(s="08") + EOF_LINE.format(s="40")
    assert "kubelet-lost-device-plugin" in fired(diagnose_texts(ruleset, {"kubelet.log": log}))
    newest_first = REG_LINE.format(s="08") + EOF_LINE.format(s="40")
    assert "kubelet-lost-device-plugin" in fired(
        diagnose_texts(ruleset, {"kubelet.log": newest_first})
    )


# ---- the reporter's own findings ----------------------------------------------------------------
def test_a_node_without_its_plugins_label_is_no_plugin_pod(ruleset):
    issue = (
        "# no nvidia.com/gpu in allocatable\n\nAllocatable shows only cpu and memory.\n\n"
        "**Comment by reporter:**\n\nSolved: I had not set the gpu=on label on the new node, so "
        "the device plugin never ran there.\n"
    )
    primary = diagnose_issue(ruleset, issue).worst.primary
    assert (primary.rule_id, primary.category) == (
        "node-label-missing-described",
        "no-device-plugin-pod",
    )


def test_an_error_named_only_in_the_title_is_read(ruleset):
    """The MPS daemon's wait, named in the title without the inner error."""
    issue = "# Failed to start plugin: error waiting for MPS daemon\n\nOn k3s with MPS sharing.\n"
    primary = diagnose_issue(ruleset, issue).worst.primary
    assert (primary.rule_id, primary.confidence) == ("mps-daemon-not-ready", "low")
    assert primary.title.endswith("which does not answer")


# ---- a config pasted without a fence -----------------------------------------------------------
def test_a_containerd_config_pasted_without_a_fence_is_read(ruleset):
    """Its tables and keys make a config the runtime rules read (here: runc the default)."""
    issue = (
        "# NVML fails in the plugin on k3s\n\nHere is my containerd config:\n\n"
        '[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n\n'
        '[plugins.cri.containerd.runtimes."nvidia"]\n  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins.cri.containerd.runtimes."nvidia".options]\n'
        '  BinaryName = "/usr/bin/nvidia-container-runtime"\n\nWhat is wrong?\n'
    )
    report = diagnose_issue(ruleset, issue)
    assert "containerd-default-runtime-not-nvidia" in fired(report)
    assert report.worst.primary.category == "runtimeclass"


# ---- the host's nvidia-smi beside a pod's limit ------------------------------------------------
def test_nvidia_smi_beside_a_pods_limit_is_low(ruleset):
    """An issue pastes the host's nvidia-smi next to a pod asking gpumem: nothing says the
    output came from the container, so HAMi-core not loaded is only a low reading."""
    smi = (
        "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |\n"
        "| N/A   34C    P8     9W /  70W |      0MiB / 23028MiB |      0%      Default |\n"
    )
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: t, namespace: d}\nspec:\n  containers:\n"
        "  - name: c\n    resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 8000}}\n"
    )
    assert verdict_of(ruleset, {"smi.txt": smi, "pod.yaml": pod}) == (
        "container-sees-physical-memory",
        "runtime-other",
        "low",
    )


# ---- containerd cannot start a shim ------------------------------------------------------------
def test_containerd_unable_to_start_a_shim_is_a_runtime_failure(ruleset):
    line = (
        'E0505 10:00:00.000000    1201 kuberuntime_manager.go:772] "CreatePodSandbox for pod failed"'
        ' err="rpc error: code = Unknown desc = failed to create containerd task: failed to start '
        "shim: containerd-shim resolves to executable in current directory (./containerd-shim): "
        'unknown" pod="default/gpu-a"\n'
    )
    rule, category, _ = verdict_of(ruleset, {"kubelet.log": line})
    assert (rule, category) == ("oci-runtime-error", "runtime-other")


def test_another_plugins_registration_is_no_restart_of_this_one(ruleset):
    """The registration that ends the loss must be for the resource whose stream ended."""
    log = EOF_LINE.format(s="05") + REG_LINE.format(s="08").replace(
        "example.com/npu-a", "rdma/hca_shared_devices_a"
    )
    assert "kubelet-lost-device-plugin" in fired(diagnose_texts(ruleset, {"kubelet.log": log}))


def test_a_registration_the_kubelet_refused_is_no_restart(ruleset):
    """The kubelet prints the request before its checks: one it then refuses brings nothing back."""
    refused = (
        'Mar 03 10:00:08 gpu-a kubelet[901]: E0303 10:00:08.300000     901 server.go:170] "Error '
        'connecting to device plugin client" err="failed to get device plugin options: context '
        'deadline exceeded"\n'
    )
    log = EOF_LINE.format(s="05") + REG_LINE.format(s="08") + refused
    assert "kubelet-lost-device-plugin" in fired(diagnose_texts(ruleset, {"kubelet.log": log}))


def test_a_loss_after_new_year_is_later_than_a_registration_before_it(ruleset):
    """No year in the bundle: Dec 31 then Jan 1, in file order, is one night, not a year back."""
    reg = REG_LINE.format(s="08").replace("Mar 03", "Dec 31").replace("I0303", "I1231")
    loss = EOF_LINE.format(s="05").replace("Mar 03", "Jan 01").replace("E0303", "E0101")
    first = EOF_LINE.format(s="01").replace("Mar 03", "Dec 31").replace("E0303", "E1231")
    log = first + reg + loss
    assert "kubelet-lost-device-plugin" in fired(diagnose_texts(ruleset, {"kubelet.log": log}))


def test_a_title_above_an_unfenced_config_stays_the_title(ruleset):
    """A Markdown heading is no TOML comment: the title and the reboot it names stay prose."""
    issue = (
        "# GPU pods fail after the node rebooted\n"
        '[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n'
        '[plugins.cri.containerd.runtimes."nvidia"]\n  runtime_type = "io.containerd.runc.v2"\n\n'
        "```\n" + NO_HEALTHY + "```\n"
    )
    assert "admission-before-plugin-reregistered" in fired(diagnose_issue(ruleset, issue))


def test_an_old_plugins_unknown_error_is_a_lost_gpu(ruleset):
    """v0.8-v0.14 wrapped the link query as "unable to retrieve list of available devices"."""
    inner = "Unable to retrieve list of available devices: error creating nvml.Device 3: nvml: Unknown Error"
    text = "Events:\n" + ADMISSION.format(inner=inner)
    assert verdict_of(ruleset, {"describe.txt": text})[:2] == (
        "gpu-lost-while-choosing-devices",
        "device-unhealthy",
    )


# ---- from the forty-eighth set (the workload side) ----------------------------------------------
def test_a_limit_check_of_a_device_without_a_limit_is_no_failure(ruleset):
    """HAMi-core compares each device's limit with the cache another job may have written: a
    device the process has no limit for (0 expected) is its routine check, not a failure."""
    routine = (
        "[HAMI-core ERROR (pid:31 thread=140211 multiprocess_memory_limit.c:401)]: Limit "
        "inconsistency detected for 9th device, 0 expected, get 100\n"
    )
    assert "hami-core-failure" not in fired(diagnose_texts(ruleset, {"app.log": routine}))
    real = routine.replace("9th device, 0 expected", "0th device, 8589934592 expected")
    assert "hami-core-failure" in fired(diagnose_texts(ruleset, {"app.log": real}))


def test_a_refused_gpu_reset_leaves_a_mig_mode_change_pending(ruleset):
    log = (
        'time="2025-01-02T10:00:01Z" level=debug msg="At least one mode change pending"\n'
        'time="2025-01-02T10:00:09Z" level=error msg="\\nResetting GPU 00000000:00:05.0 is not '
        'supported.\\n"\n'
    )
    assert verdict_of(ruleset, {"mig-manager.log": log}) == (
        "mig-mode-change-needs-reset",
        "runtime-other",
        "medium",
    )


# ---- from the fiftieth set (HAMi 2024-2026) -----------------------------------------------------
def test_a_scheduler_crash_in_the_reporters_words(ruleset):
    for title in ("vgpu-scheduler-extender concurrent map writes crash", "使用某GPU，调度器崩溃"):
        primary = diagnose_issue(ruleset, f"# {title}\n\nPods stay Pending.\n").worst.primary
        assert (primary.rule_id, primary.category) == (
            "scheduler-crash-described",
            "scheduling-other",
        )


def test_gos_fatal_error_in_the_extender_is_its_crash(ruleset):
    """Go's runtime throws ("fatal error: concurrent map writes") end the process like a panic;
    the stack's first frame the scheduler claims makes it the scheduler's."""
    log = (
        "fatal error: concurrent map writes\n\ngoroutine 412 [running]:\n"
        "github.com/Project-HAMi/HAMi/pkg/scheduler.(*Scheduler).Filter(0xc000123450)\n"
        "\t/k8s-vgpu/pkg/scheduler/scheduler.go:512 +0x2a5\n"
    )
    rule, category, _ = verdict_of(ruleset, {"extender.txt": log})
    assert (rule, category) == ("scheduler-panicked", "scheduling-other")


def test_no_binding_pod_quoted_without_its_node(ruleset):
    issue = (
        "# MIG pod rejected\n\nThe pod asks for nvidia.com/mig-1g.10gb and still fails with "
        "`UnexpectedAdmissionError: no binding pod found`.\n"
    )
    primary = diagnose_issue(ruleset, issue).worst.primary
    assert (primary.rule_id, primary.category) == (
        "allocate-failed-at-admission",
        "scheduling-other",
    )
