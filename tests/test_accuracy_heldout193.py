"""Hundred-and-ninety-third and later measurements (issue 25, session 55): blind sets of unseen
real cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

import pytest

from conftest import diagnose_texts, fired

PROBE = "nvidia-smi 2>&1 | grep -q 'Failed to initialize NVML: Unknown Error' && exit 1 || exit 0"


def _pod(containers: str, status: str) -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: trainer-0\n  namespace: ml\nspec:\n"
        "  containers:\n" + containers + "  nodeName: gpu-7\nstatus:\n" + status
    )


RUNNING = (
    "  containerStatuses:\n  - name: cuda\n    ready: true\n    restartCount: 0\n"
    "    state:\n      running:\n        startedAt: '2026-03-03T09:00:00Z'\n  phase: Running\n"
)


# ---- what a pod runs is not what happened to it -------------------------------------------------
def test_a_running_pods_probe_grepping_for_the_nvml_error_is_no_such_error(ruleset):
    """A pod's YAML is searched for its status messages, not for its probes' commands."""
    containers = (
        "  - image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04\n    livenessProbe:\n"
        "      exec:\n        command:\n        - sh\n        - -c\n        - " + PROBE + "\n"
        "      periodSeconds: 30\n    name: cuda\n    resources:\n      limits:\n"
        "        nvidia.com/gpu: '1'\n"
    )
    report = diagnose_texts(ruleset, {"pod.yaml": _pod(containers, RUNNING)})
    assert "container-nvml-unknown-error" not in fired(report)


def test_a_probe_opening_its_container_item_ends_at_the_items_next_key(ruleset):
    """`- livenessProbe:` (a probe first in its list item) is left out up to the item's next key,
    and a command's list items at the key's own column are part of it."""
    from analyzer.parse.unscanned import blank_blocks

    text = (
        "  containers:\n  - livenessProbe:\n      exec:\n        command:\n        - sh\n"
        "        - " + PROBE + "\n    name: cuda\n  - lifecycle:\n      preStop: {}\n"
        "    image: nvcr.io/nvidia/k8s-device-plugin:v0.17.1\nstatus:\n  phase: Running\n"
    )
    kept = blank_blocks(text, ruleset.catalogue.kinds["pod"].unscanned).split("\n")
    assert [line for line in kept if line] == [
        "  containers:",
        "    name: cuda",
        "    image: nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
        "status:",
        "  phase: Running",
    ]
    assert len(kept) == len(text.split("\n"))  # every other line keeps its number


def test_a_describes_probe_line_is_no_error_but_its_failure_event_is(ruleset):
    describe = (
        "Name:         trainer-0\nNamespace:    ml\nNode:         gpu-7/10.0.0.7\n"
        "Status:       Running\nContainers:\n  cuda:\n    Image:          nvcr.io/nvidia/cuda:12.4.1\n"
        "    State:          Running\n    Ready:          True\n"
        "    Liveness:       exec [sh -c " + PROBE + "] delay=0s timeout=1s period=30s\n"
        "    Limits:\n      nvidia.com/gpu:  1\n"
        "Events:\n  Type    Reason   Age  From     Message\n  ----    ------   ---  ----     -------\n"
        "  Normal  Started  5m   kubelet  Started container cuda\n"
    )
    assert "container-nvml-unknown-error" not in fired(
        diagnose_texts(ruleset, {"pod-describe.txt": describe})
    )
    failed = describe + (
        "  Warning  Unhealthy  1m  kubelet  Liveness probe failed: "
        "Failed to initialize NVML: Unknown Error\n"
    )
    assert "container-nvml-unknown-error" in fired(
        diagnose_texts(ruleset, {"pod-describe.txt": failed})
    )


def test_a_pods_status_message_is_still_read(ruleset):
    """The blocks left out are the probes' only: a terminated container's message is evidence."""
    status = (
        "  containerStatuses:\n  - name: cuda\n    lastState:\n      terminated:\n"
        "        exitCode: 255\n        message: 'Failed to initialize NVML: Unknown Error'\n"
        "        reason: Error\n    ready: false\n    restartCount: 4\n  phase: Running\n"
    )
    containers = (
        "  - image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04\n    name: cuda\n    resources:\n"
        "      limits:\n        nvidia.com/gpu: '1'\n"
    )
    assert "container-nvml-unknown-error" in fired(
        diagnose_texts(ruleset, {"pod.yaml": _pod(containers, status)})
    )


# ---- a pod that names its node is HAMi's fault only where HAMi serves it --------------------------
PINNED = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: cdi-test\nspec:\n  nodeName: gpu-3\n"
    "  runtimeClassName: nvidia-cdi\n  containers:\n  - name: cuda\n    image: ubuntu:22.04\n"
    "    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
)


def test_a_pinned_pod_with_nothing_of_hami_is_no_hami_fault(ruleset):
    """NVIDIA's plugin alone is handed a pinned pod's devices by the kubelet: nothing to blame."""
    assert "pod-pins-node-name" not in fired(diagnose_texts(ruleset, {"pod.yaml": PINNED}))


def test_a_pinned_pod_where_hami_is_named_is_the_fault(ruleset):
    issue = "We installed HAMi v2.5 and the pod below never gets its vGPU.\n"
    report = diagnose_texts(ruleset, {"pod.yaml": PINNED, "issue.txt": issue})
    assert report.primary.rule_id == "pod-pins-node-name"


# ---- an image pull seen only as the kubelet's back-off --------------------------------------------
def test_an_operand_image_seen_only_backing_off_is_a_pull_failure(ruleset):
    """Once the pulls' own Failed events age out, the events table keeps the back-off."""
    events = (
        "  Normal   BackOff  61s (x210 over 50m)  kubelet  Back-off pulling image "
        '"nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.0"\n'
        "  Warning  Failed   61s (x210 over 50m)  kubelet  Error: ImagePullBackOff\n"
    )
    assert "25.10 on" in _pull_explanation(ruleset, events)  # the validator is the operator's image
    assert "25.10 on" not in _pull_explanation(ruleset, events.replace("v25.10.0", "v24.9.2"))


def _pull_explanation(ruleset, events: str) -> str:
    report = diagnose_texts(ruleset, {"events.txt": events})
    assert report.primary.rule_id == "gpu-operator-image-cannot-be-pulled"
    (finding,) = [f for f in report.nodes[0].findings if f.rule_id == report.primary.rule_id]
    return finding.explanation


# ---- runc cannot make a GPU device node in the container ----------------------------------------
def test_a_device_node_runc_cannot_bind_mount_is_named(ruleset):
    """In a user namespace runc bind-mounts each device node; the line is cut where a terminal
    wrapped it, the node still on it."""
    events = (
        '  Warning  Failed  25s  kubelet  Error: container create failed: time="2026-01-04T09:19:12Z" leve\n'
        'l=error msg="runc create failed: unable to start container process: error during container init: '
        "error creating device nodes: mount /dev/nvidiactl:/var/lib/containers/storag\n"
        'e/overlay/ab12/merged/dev/nvidiactl (via /proc/self/fd/14), flags: 0x1000: no such file or directory"\n'
    )
    report = diagnose_texts(ruleset, {"events.txt": events})
    assert report.primary.rule_id == "gpu-device-node-not-created-in-container"
    assert "/dev/nvidiactl" in report.primary.title
    fuse = events.replace("/dev/nvidiactl", "/dev/fuse")
    assert "gpu-device-node-not-created-in-container" not in fired(
        diagnose_texts(ruleset, {"events.txt": fuse})
    )


# ---- the GPU Operator's validator: which check fails ---------------------------------------------
def test_the_kubelets_back_off_names_the_failing_validation_without_claiming_why(ruleset):
    status = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nvidia-operator-validator-q2w8e\n"
        "  namespace: gpu-operator\nspec:\n  containers:\n  - name: nvidia-operator-validator\n"
        "status:\n  initContainerStatuses:\n  - name: toolkit-validation\n    restartCount: 9\n"
        "    state:\n      waiting:\n        message: back-off 5m0s restarting failed "
        "container=toolkit-validation pod=nvidia-operator-validator-q2w8e_gpu-operator(4f1d)\n"
        "        reason: CrashLoopBackOff\n  phase: Pending\n"
    )
    report = diagnose_texts(ruleset, {"pod.yaml": status})
    assert report.primary.rule_id == "gpu-operator-validation-failing"
    assert report.primary.category == "inconclusive"
    assert "toolkit-validation" in report.primary.title
    hook = status + (
        "---\n# events\n  Warning  Failed  3m  kubelet  Error: failed to create containerd task: "
        "OCI runtime create failed: runc create failed: unable to start container process: "
        "error during container init: error running hook #0: error running hook: exit status 1, "
        "stdout: , stderr: nvidia-container-cli: initialization error: load library failed: "
        "libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown\n"
    )
    assert diagnose_texts(ruleset, {"pod.yaml": status, "events.txt": hook}).primary.category == (
        "runtime-other"
    )


def test_an_operand_crashing_beside_a_toolkit_still_initialising_is_not_the_gpu(ruleset):
    """ "Its waits are done, so the driver and toolkit work" does not hold when the same listing
    shows the toolkit's own pods still waiting."""
    pods = (
        "NAME                                       READY   STATUS             RESTARTS        AGE\n"
        "nvidia-container-toolkit-daemonset-664n2   0/1     Init:0/1           0               42h\n"
        "nvidia-dcgm-exporter-cv6rg                 0/1     CrashLoopBackOff   495 (32s ago)   42h\n"
    )
    assert "gpu-operator-operand-crash-looping" not in fired(
        diagnose_texts(ruleset, {"pods.txt": pods})
    )
    alone = pods.replace("Init:0/1   ", "Running    ").replace("0/1     Running", "1/1     Running")
    assert "gpu-operator-operand-crash-looping" in fired(
        diagnose_texts(ruleset, {"pods.txt": alone})
    )


# ---- a review's reproducers (a helper, read-only), each a class ----------------------------------
def test_describe_prints_a_probes_script_over_lines_at_column_0(ruleset):
    describe = (
        "Name:         trainer-0\nNamespace:    ml\nStatus:       Running\nContainers:\n  cuda:\n"
        "    State:          Running\n    Limits:\n      nvidia.com/gpu:  1\n"
        "    Liveness:       exec [/bin/sh -c set -e\nout=$(nvidia-smi 2>&1 || true)\n"
        'if echo "$out" | grep -q "Failed to initialize NVML: Unknown Error"; then exit 1; fi\n'
        "] delay=10s timeout=5s period=30s #success=1 #failure=3\n    Environment:    <none>\n"
        "    Mounts:\n      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access (ro)\n"
        "Conditions:\n  Type              Status\n  Ready             True\n"
        "QoS Class:                   BestEffort\nEvents:\n"
        "  Type    Reason   Age  From     Message\n  ----    ------   ---  ----     -------\n"
        "  Normal  Started  5m   kubelet  Started container cuda\n"
    )
    assert "container-nvml-unknown-error" not in fired(
        diagnose_texts(ruleset, {"pod-describe.txt": describe})
    )


@pytest.mark.parametrize(
    "error",
    [
        "error creating device nodes: mount src=/dev/nvidiactl, dst=/run/containerd/io.containerd"
        ".runtime.v2.task/k8s.io/4f1c/rootfs/dev/nvidiactl, dstFd=/proc/thread-self/fd/9, "
        "flags=MS_BIND: no such file or directory: unknown",  # runc 1.2
        "error creating device nodes: mknodat /run/containerd/io.containerd.runtime.v2.task/k8s.io"
        "/4f1c/rootfs/dev/nvidia0: no such device or address: unknown",
        "mount `/dev/nvidia-caps/nvidia-cap1` to `/dev/nvidia-caps/nvidia-cap1`: "
        "No such file or directory",  # crun
    ],
)
def test_the_runtimes_other_wordings_of_a_device_node_not_made(ruleset, error):
    events = f"  Warning  Failed  25s  kubelet  Error: container create failed: {error}\n"
    report = diagnose_texts(ruleset, {"events.txt": events})
    assert report.primary.rule_id == "gpu-device-node-not-created-in-container"
    assert "/dev/nvidia" in report.primary.title


def test_a_pinned_pod_asking_a_share_of_gpu_memory_is_hamis(ruleset):
    share = PINNED.replace(
        "nvidia.com/gpu: 1\n", "nvidia.com/gpu: 1\n        nvidia.com/gpumem-percentage: 50\n"
    )
    assert diagnose_texts(ruleset, {"pod.yaml": share}).primary.rule_id == "pod-pins-node-name"


def test_an_operand_crashing_beside_a_toolkit_that_cannot_pull_is_not_the_gpu(ruleset):
    pods = (
        "NAME                                       READY   STATUS             RESTARTS   AGE\n"
        "gpu-feature-discovery-m22qg                0/1     CrashLoopBackOff   6          11m\n"
        "nvidia-container-toolkit-daemonset-jxsjk   0/1     ImagePullBackOff   0          11m\n"
    )
    assert "gpu-operator-operand-crash-looping" not in fired(
        diagnose_texts(ruleset, {"pods.txt": pods})
    )


def test_a_ready_validator_ends_an_old_back_off_and_the_namespace_is_the_lines(ruleset):
    event = (
        "  Warning  BackOff  20m (x5 over 25m)  kubelet  Back-off restarting failed container "
        "driver-validation in pod nvidia-operator-validator-x7k2q_nvidia-gpu-operator(1f0c)\n"
    )
    report = diagnose_texts(ruleset, {"events.txt": event})
    (finding,) = [f for f in report.nodes[0].findings if f.rule_id == report.primary.rule_id]
    assert report.primary.rule_id == "gpu-operator-validation-failing"
    assert all("-n nvidia-gpu-operator " in r.command for r in finding.remediation if r.command)
    ready = "nvidia-operator-validator-x7k2q   1/1     Running   4 (7m ago)   21m\n"
    assert "gpu-operator-validation-failing" not in fired(
        diagnose_texts(ruleset, {"events.txt": event, "pods.txt": ready})
    )


# ---- a second review's reproducers ---------------------------------------------------------------
def test_a_log_pasted_right_below_a_describes_probe_script_is_read_as_the_log(ruleset):
    describe = (
        "Name:         trainer-0\nNamespace:    ml\nStatus:       Running\nContainers:\n  cuda:\n"
        "    Liveness:       exec [/bin/sh -c set -e\nnvidia-smi -L\n"
        "] delay=10s timeout=5s period=30s #success=1 #failure=3\n    Environment:    <none>\n"
    )
    log = (
        "I0303 09:00:00.000001       1 main.go:155] Starting OS watcher.\n"
        "E0303 09:00:00.000002       1 main.go:132] Failed to initialize NVML: could not load "
        "NVML library.\n"
    )
    report = diagnose_texts(ruleset, {"paste.txt": describe + log})
    kinds = {a.kind for a in report.inventory}
    assert {"pod-describe", "device-plugin-log"} <= kinds


def test_a_ready_validator_on_another_node_leaves_a_failing_one_reported(ruleset):
    pods = (
        "NAME                              READY   STATUS                  RESTARTS      AGE\n"
        "nvidia-operator-validator-x7k2q   0/1     Init:CrashLoopBackOff   7 (90s ago)   14m\n"
        "nvidia-operator-validator-m9p4z   1/1     Running                 0             14m\n"
    )
    assert "gpu-operator-validation-failing" in fired(diagnose_texts(ruleset, {"pods.txt": pods}))


def test_a_refused_mknod_is_a_privilege_and_an_unmount_is_no_start_failure(ruleset):
    eperm = (
        "  Warning  Failed  9s  kubelet  Error: container create failed: mknod `/dev/nvidia0`: "
        "Operation not permitted\n"
    )
    report = diagnose_texts(ruleset, {"events.txt": eperm})
    (finding,) = [f for f in report.nodes[0].findings if f.rule_id == report.primary.rule_id]
    assert report.primary.rule_id == "gpu-device-node-not-created-in-container"
    assert "may not create device nodes" in finding.explanation
    umount = "  Warning  FailedKillPod  9s  kubelet  error killing pod: crun: umount `/dev/nvidia0`: Device or resource busy\n"
    assert "gpu-device-node-not-created-in-container" not in fired(
        diagnose_texts(ruleset, {"events.txt": umount})
    )
