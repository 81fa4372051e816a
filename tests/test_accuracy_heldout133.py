"""Hundred-and-thirty-third to hundred-and-thirty-sixth measurements (issue 25, session 51): blind
sets of unseen real cases and the class they left, checked on made-up inputs (none copied from a
real case)."""

from __future__ import annotations

from conftest import issue_verdict, verdict_of

LEGACY = "GPU-7c1e,10,46068,100,NVIDIA-NVIDIA L40S,0,true,0,hami-core:"
DECODE = (
    'E0301 08:12:44.100200       1 device.go:{line}] "failed to decode node devices" '
    'err="invalid character \'G\' looking for beginning of value" node="infer-7" '
    f'device annotation="{LEGACY}"\n'
)


# ---- the mock device plugin's decode failure is not the scheduler's ----------------------------------
def test_the_mock_plugins_decode_failure_is_the_annotation_format_not_the_scheduler(ruleset):
    log = (
        "I0301 08:12:44.001000       1 config.go:116] Loading device configuration from file: "
        "/device-config.yaml\n"
        + DECODE.format(line=104)
        + "I0301 08:12:44.100400       1 device.go:164] no device GPU on this node\n"
    )
    verdict = verdict_of(ruleset, {"device-plugin.log": log})
    assert verdict[:2] == (
        "mock-device-plugin-cannot-decode-annotation",
        "annotation-missing-or-stale",
    )


def test_the_mock_plugin_named_in_the_pasted_command_is_enough(ruleset):
    body = (
        "# mock plugin shows gpumem 0\n\n```\n"
        "$ kubectl logs -n kube-system hami-mock-device-plugin-daemonset-q2x8v\n"
        + DECODE.format(line=106)
        + "```\n"
    )
    assert issue_verdict(ruleset, body)[:2] == (
        "mock-device-plugin-cannot-decode-annotation",
        "annotation-missing-or-stale",
    )


def test_the_schedulers_own_decode_failure_stays_the_schedulers(ruleset):
    log = (
        'I0301 08:12:40.000000       1 scheduler.go:414] "Entering RegisterFromNodeAnnotations"\n'
        + DECODE.format(line=309)
    )
    verdict = verdict_of(ruleset, {"scheduler.log": log})
    assert verdict[:2] == ("scheduler-decode-failed", "scheduler-not-seeing-node")


# ---- a driver container whose compiler is older than the kernel's --------------------------------
def test_a_driver_build_with_an_older_gcc_than_the_kernels_is_the_drivers_failure(ruleset):
    log = (
        "Compiling NVIDIA driver kernel modules...\n"
        "warning: the compiler differs from the one used to build the kernel\n"
        "  The kernel was built by: x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0) 13.2.0\n"
        "  You are using:           cc (Ubuntu 11.4.0) 11.4.0\n"
        "cc: error: unrecognized command-line option '-ftrivial-auto-var-init=zero'\n"
    )
    verdict = verdict_of(ruleset, {"nvidia-driver-ctr.log": log})
    assert verdict[:2] == ("gpu-operator-driver-failed", "runtime-other")


def test_the_compiler_warning_alone_is_no_failure(ruleset):
    log = (
        "Compiling NVIDIA driver kernel modules...\n"
        "warning: the compiler differs from the one used to build the kernel\n"
        "  The kernel was built by: x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0) 12.3.0\n"
        "  You are using:           cc (Ubuntu 12.1.0) 12.1.0\n"
    )
    assert verdict_of(ruleset, {"nvidia-driver-ctr.log": log})[0] != "gpu-operator-driver-failed"


# ---- a vGPU pod that Volcano's preemption does not serve -------------------------------------------
def _preempt_issue(prose: str, resource: str) -> str:
    return (
        f"# {prose}\n\nA training job at priority 1000 waits while a batch job holds the card.\n\n"
        f"```yaml\nspec:\n  containers:\n  - resources:\n      limits:\n        {resource}: 2\n```\n"
    )


def test_a_vgpu_pod_that_does_not_preempt_is_volcanos_preemption(ruleset):
    for prose in ("Higher priority vGPU job does not preempt the lower one", "vGPU 任务无法抢占"):
        verdict = issue_verdict(ruleset, _preempt_issue(prose, "volcano.sh/vgpu-number"))
        assert verdict == ("volcano-vgpu-preemption-not-device-aware", "scheduling-other", "low")


def test_preemption_words_without_volcanos_vgpu_say_nothing_of_it(ruleset):
    verdict = issue_verdict(ruleset, _preempt_issue("Job does not preempt", "nvidia.com/gpu"))
    assert verdict[0] != "volcano-vgpu-preemption-not-device-aware"
    events = (
        "# vGPU pod pending\n\n```\n  Warning  FailedScheduling  9s  volcano  0/2 nodes are "
        "available: 2 Insufficient volcano.sh/vgpu-number. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod.\n```\n"
    )
    assert issue_verdict(ruleset, events)[0] != "volcano-vgpu-preemption-not-device-aware"


# ---- the review's counter-examples: each line's owner, not a word anywhere in the bundle ------------
def test_the_charts_mock_plugin_in_a_pods_list_leaves_the_scheduler_its_failure(ruleset):
    files = {
        "scheduler.log": (
            'I0301 08:12:40.000000       1 scheduler.go:414] "Entering RegisterFromNodeAnnotations"\n'
            + DECODE.format(line=309)
        ),
        "pods.txt": (
            "NAMESPACE     NAME                            READY   STATUS    RESTARTS   AGE\n"
            "kube-system   hami-mock-device-plugin-x2k9q   1/1     Running   0          2d\n"
        ),
    }
    assert verdict_of(ruleset, files)[:2] == (
        "scheduler-decode-failed",
        "scheduler-not-seeing-node",
    )


def test_an_unknown_compiler_flag_outside_a_driver_build_is_no_driver_failure(ruleset):
    body = (
        "# building HAMi-core fails\n\n```\n$ make build\n"
        "gcc: error: unrecognized command-line option '-fstack-clash-protection'\n"
        "make: *** [Makefile:20: build] Error 1\n```\n"
    )
    assert issue_verdict(ruleset, body)[0] != "gpu-operator-driver-failed"


def test_a_victims_complaint_is_no_preemption_failure(ruleset):
    prose = "Our batch vGPU pod should never be preempted but it gets preempted anyway"
    verdict = issue_verdict(ruleset, _preempt_issue(prose, "volcano.sh/vgpu-number"))
    assert verdict[0] != "volcano-vgpu-preemption-not-device-aware"


# ---- the last sets: a CDI device cut off by the paste, a validator waiting for a disabled plugin --------
def test_an_unresolvable_cdi_device_whose_name_the_paste_cut_is_still_cdis(ruleset):
    event = (
        "  Warning  Failed  3s  kubelet  Error: failed to create containerd task: failed to create "
        "shim task: OCI runtime create failed: could not apply required modification to OCI "
        "specification: error modifying OCI spec: failed to inject CDI devices: unresolvable CDI "
        "devices\n"
    )
    verdict = verdict_of(ruleset, {"events.txt": event})
    assert verdict[:2] == ("cdi-unresolvable-device", "cdi-unresolvable")


def test_a_validator_waiting_where_the_operators_plugin_is_off_is_no_toolkit_wait(ruleset):
    listing = (
        "NAME                              READY   STATUS     RESTARTS   AGE\n"
        "nvidia-operator-validator-7hx2p   0/1     Init:3/4   6          31m\n"
    )
    label = "    nvidia.com/gpu.deploy.device-plugin: 'false'\n"
    verdict = verdict_of(ruleset, {"pods.txt": listing, "labels.txt": label})
    assert verdict[:2] == (
        "gpu-operator-validator-waits-for-a-disabled-plugin",
        "no-device-plugin-pod",
    )
    assert verdict_of(ruleset, {"pods.txt": listing})[0] != verdict[0]


# ---- an image for another architecture: the entrypoint the kernel cannot execute ----------------------
def test_an_entrypoint_the_kernel_cannot_execute_is_the_images_architecture(ruleset):
    events = (
        "Events:\n  Type     Reason   Age   From     Message\n"
        "  Warning  Failed   12s   kubelet  Error: failed to create containerd task: failed to "
        "create shim task: OCI runtime create failed: runc create failed: unable to start container "
        'process: exec: "/usr/bin/hami-device-plugin": exec format error: unknown\n'
        "  Warning  BackOff  3s    kubelet  Back-off restarting failed container\n"
    )
    verdict = verdict_of(ruleset, {"describe.txt": events})
    assert verdict[:2] == ("image-for-another-architecture", "runtime-other")
    crash = "exec /k8s-vgpu/bin/device-plugin: exec format error\n"
    assert verdict_of(ruleset, {"plugin.log": crash})[0] == "image-for-another-architecture"


def test_a_missing_executable_is_no_architecture_mismatch(ruleset):
    event = (
        "  Warning  Failed  3s  kubelet  Error: failed to create containerd task: OCI runtime "
        'create failed: runc create failed: unable to start container process: exec: "nvidia-smi": '
        "executable file not found in $PATH: unknown\n"
    )
    assert verdict_of(ruleset, {"events.txt": event})[0] != "image-for-another-architecture"
