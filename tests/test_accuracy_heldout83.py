"""Eighty-third to eighty-eighth measurements (issue 25, session 45): blind sets of unseen real cases
and the classes they left, each checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import (
    diagnose_issue,
    diagnose_texts,
    fired,
    issue_verdict,
    parse_texts,
    verdict_of,
)

# ---- an image pull failure as the kubelet's journal logs it ----------------------------------------
KUBELET_PULL = (
    "Dec 06 10:11:02 gpu-1 kubelet[1630]: E1206 10:11:02.114630    1630 kuberuntime_image.go:53] "
    '"Failed to pull image" err="rpc error: code = NotFound desc = failed to pull and unpack image '
    '\\"nvcr.io/nvidia/k8s-device-plugin:v0.14.9\\": failed to resolve reference '
    '\\"nvcr.io/nvidia/k8s-device-plugin:v0.14.9\\": nvcr.io/nvidia/k8s-device-plugin:v0.14.9: '
    'not found" image="nvcr.io/nvidia/k8s-device-plugin:v0.14.9"\n'
)


def test_the_kubelets_structured_pull_failure_names_the_image(ruleset):
    """The kubelet's structured log quotes the image after its error, not after the words: the
    error's own containerd text ("failed to pull and unpack image ...") names it first, with the
    registry's "not found" after it."""
    rule, category, _ = verdict_of(ruleset, {"kubelet.log": KUBELET_PULL})
    assert (rule, category) == ("device-plugin-image-cannot-be-pulled", "no-device-plugin-pod")
    title = diagnose_texts(ruleset, {"kubelet.log": KUBELET_PULL}).primary.title
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.14.9 (the registry does not hold it)" in title


# ---- Volcano's own HAMi device layer (v1.13+) --------------------------------------------------------
def test_volcanos_hami_device_layer_short_of_cards_is_resource_insufficient(ruleset):
    """Volcano v1.13+ schedules HAMi's devices with a layer of its own, whose words are not the
    older vGPU filter's: "no enough <vendor> device available! raw req_nums N cur req_nums M"."""
    log = (
        "I0301 10:00:00.000000       1 device_info.go:495] fit false. dev ID GPU-0\n"
        "I0301 10:00:00.000100       1 device_info.go:504] no enough nvidia device available! "
        "raw req_nums 8 cur req_nums 3\n"
    )
    report = diagnose_texts(ruleset, {"volcano-scheduler.log": log})
    assert (report.primary.rule_id, report.primary.category) == (
        "volcano-hami-devices-do-not-fit",
        "resource-insufficient",
    )
    assert "(8 asked, 3 short)" in report.primary.title


# ---- an init container's own script is its spec, not its output -------------------------------------
def test_a_describes_args_are_not_the_operands_wait(ruleset):
    """A describe shows the toolkit-validation init container's script (`do echo waiting for nvidia
    container stack to be setup`) in its Args, and the container Completed: no toolkit wait."""
    describe = (
        "Init Containers:\n"
        "  toolkit-validation:\n"
        "    Image:         nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.3.0\n"
        "    Command:\n"
        "      sh\n"
        "      -c\n"
        "    Args:\n"
        "      until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for nvidia "
        "container stack to be setup; sleep 5; done\n"
        "    State:          Terminated\n"
        "      Reason:       Completed\n"
        "      Exit Code:    0\n"
    )
    assert verdict_of(ruleset, {"pod-describe.txt": describe})[1] != "plugin-init-toolkit-wait"
    log = "2024-06-20T10:00:52.000000000Z stdout F waiting for nvidia container stack to be setup\n"
    assert verdict_of(ruleset, {"toolkit-validation.log": log * 3})[1] == "plugin-init-toolkit-wait"


# ---- the node's own stack below the runtime: SELinux, the kernel module's flavour -------------------
def test_an_enforced_selinux_denial_on_nvidia_files_is_a_runtime_fault(ruleset):
    """An AVC denial of a GPU file to a confined container is the cause, not a missing driver;
    permissive=1 only logs."""
    avc = (
        'type=AVC msg=audit(1700000000.1:9): avc:  denied  { read } for  pid=42 comm="nvidia-smi" '
        'name="params" dev="tmpfs" ino=7 scontext=system_u:system_r:container_t:s0:c1,c2 '
        "tcontext=system_u:object_r:container_runtime_tmpfs_t:s0 tclass=file permissive=P\n"
    )
    issue = "# GPU pods get Permission denied\n\nonly privileged pods work:\n> "
    assert issue_verdict(ruleset, issue + avc.replace("=P", "=0"))[:2] == (
        "selinux-denies-gpu-access",
        "runtime-other",
    )
    assert (
        verdict_of(ruleset, {"audit.log": avc.replace("=P", "=1")})[0]
        != "selinux-denies-gpu-access"
    )


def test_a_gpu_that_needs_the_open_kernel_modules_explains_the_shortage(ruleset):
    """The reporter quotes the scheduler's "Insufficient nvidia.com/gpu" and the driver's words
    for its cause: the cause wins."""
    issue = (
        "# pods Pending on new nodes\n\nGPU pods stay Pending with `0/1 nodes are available: 1 "
        "Insufficient nvidia.com/gpu`. dmesg:\n```\n[    5.5] NVRM: The NVIDIA GPU 0000:02:00.0 "
        "(PCI ID: 10de:2c58)\n               NVRM: installed in this system requires use of the "
        "NVIDIA open kernel modules.\n```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == (
        "driver-needs-open-kernel-modules",
        "runtime-other",
    )


def test_nvidia_smi_finding_no_devices_is_the_drivers_fault_at_low_confidence(ruleset):
    issue = (
        "# no GPU on the node\n\n`nvidia-smi` reports `No devices were found`, and the device "
        "plugin registers 0 GPUs, so pods stay Pending with Insufficient nvidia.com/gpu.\n"
    )
    assert issue_verdict(ruleset, issue) == ("driver-sees-no-gpu", "runtime-other", "low")


# ---- another component's restart is no plugin crash, nor a taint ------------------------------------
def test_a_plugin_that_tolerates_kubelet_restarts_neither_crashes_nor_lacks_a_toleration(ruleset):
    issue = (
        "# nvidia.com/gpu is 0 after a kubelet failure\n\n"
        "**Comment by maintainer:**\n\nThe second error should be easier to fix since the device "
        "plugin tolerates `kubelet` restarts.\n"
    )
    fired_ids = fired(diagnose_issue(ruleset, issue))
    assert not fired_ids & {"plugin-crash-described", "plugin-taint-described"}, fired_ids
    crash = "# plugin\n\nthe device plugin keeps restarting every few minutes\n"
    assert issue_verdict(ruleset, crash)[0] == "plugin-crash-described"


# ---- a node's YAML with the paste's own "...." ------------------------------------------------------
def test_a_status_block_with_lines_left_out_is_read_and_zero_is_not_absent(ruleset):
    """The reporter's "......." between `allocatable:` and the GPU line broke the YAML and the
    recognition; read as a gap, the resource at 0 is the kubelet's, not an absent resource."""
    node = (
        '  allocatable:\n    .......\n    nvidia.com/gpu: "0"\n    ....\n'
        '  capacity:\n    .......\n    nvidia.com/gpu: "0"\n    ....\n'
    )
    parsed = parse_texts(ruleset, {"node.yaml": node})
    assert [a.kind for a in parsed.artefacts] == ["node"]
    assert verdict_of(ruleset, {"node.yaml": node}) == (
        "gpu-resource-at-zero",
        "no-allocatable-kubelet-socket",
        "low",
    )


def test_labels_with_lines_left_out_do_not_convict_a_missing_label(ruleset):
    """Labels shown in part ("...") may hold gpu=on among the lines left out."""
    node = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels:\n"
        '    kubernetes.io/hostname: gpu-1\n    ...\nstatus:\n  capacity:\n    cpu: "8"\n'
        '  allocatable:\n    cpu: "8"\n'
    )
    assert "no-gpu-label" not in fired(diagnose_texts(ruleset, {"node.yaml": node}))
    whole = node.replace("    ...\n", "")
    assert "no-gpu-label" in fired(diagnose_texts(ruleset, {"node.yaml": whole}))


# ---- other components that load NVML: the DCGM exporter, the DRA driver's kubelet plugin ------------
def test_the_dcgm_exporters_nvml_failure_is_its_pods_runtime_not_the_plugin(ruleset):
    log = (
        'time=2026-01-05T10:00:00.543Z level=INFO msg="Starting dcgm-exporter" Version=4.8.4\n'
        'time=2026-01-05T10:00:00.547Z level=ERROR msg="Cannot init NVML library; err: '
        'ERROR_LIBRARY_NOT_FOUND"\n'
        "time=2026-01-05T10:00:00.566Z level=ERROR msg=ERROR_LIBRARY_NOT_FOUND\n"
    )
    rule, category, _ = verdict_of(ruleset, {"dcgm-exporter.log": log})
    assert (rule, category) == ("dcgm-exporter-cannot-load-nvml", "runtimeclass")


def test_the_dra_drivers_prestart_check_names_its_driver_root(ruleset):
    log = (
        "2025-09-20T04:47:12Z  /driver-root (/ on host): nvidia-smi: not found, "
        "libnvidia-ml.so.1: not found, current contents: [bin  boot  dev  etc  usr  var].\n"
    )
    report = diagnose_texts(ruleset, {"kubelet-plugin.log": log})
    assert report.primary.rule_id == "dra-driver-finds-no-gpu-driver"
    assert "(/ on the host)" in report.primary.title


# ---- the reporter's own test takes HAMi-core out --------------------------------------------------
def test_a_workload_that_runs_with_hami_core_bypassed_blames_hami_core(ruleset):
    issue = (
        "# training hangs in NCCL init on a HAMi node\n\nWith `CUDA_DISABLE_CONTROL=true` set on the "
        "pod the same job works fine.\n"
    )
    assert issue_verdict(ruleset, issue) == (
        "hami-core-fault-when-bypassed",
        "runtime-other",
        "low",
    )
    negated = issue.replace("the same job works fine", "the same job still doesn't work")
    assert issue_verdict(ruleset, negated)[0] != "hami-core-fault-when-bypassed"


# ---- containerd's handlers on two cgroup drivers ------------------------------------------------------
def test_the_nvidia_handler_without_runcs_systemd_cgroup_is_named(ruleset):
    config = (
        "version = 2\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
        "  SystemdCgroup = true\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    )
    assert "nvidia-runtime-cgroup-driver-differs" in fired(
        diagnose_texts(ruleset, {"config.toml": config})
    )
    agreed = config + "  SystemdCgroup = true\n"
    assert "nvidia-runtime-cgroup-driver-differs" not in fired(
        diagnose_texts(ruleset, {"config.toml": agreed})
    )


# ---- GKE's own driver installer -------------------------------------------------------------------
def test_gkes_driver_installer_failing_means_no_driver(ruleset):
    """GKE's nvidia-driver-installer DaemonSet restarting is the node without a driver, not a
    shortage of GPUs (the e2e framework's words, and a pods listing): the plugin has no NVML to
    load, as four blind builders read it (sets 115, 143 and two of 152; it was runtime-other)."""
    log = (
        "INFO: At 2020-07-17 17:43:16 +0000 UTC - event for nvidia-driver-installer-t8rtn: "
        "{kubelet gke-pool-1} BackOff: Back-off restarting failed container\n"
        "INFO: \tInit container nvidia-driver-installer ready: false, restart count 6\n"
    )
    assert verdict_of(ruleset, {"e2e.log": log})[:2] == (
        "gke-driver-installer-failing",
        "plugin-crash-nvml",
    )
