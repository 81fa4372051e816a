"""Ninety-fifth to ninety-seventh measurements (issue 25, session 47): blind sets of unseen real
cases and the classes they left, each checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, issue_verdict, verdict_of

# ---- the GPU Operator's toolkit failing, not waiting ----------------------------------------------
OPERATOR_PODS = """\
NAME                                       READY   STATUS             RESTARTS       AGE
gpu-feature-discovery-q7w2k                1/1     Running            0              41m
nvidia-container-toolkit-daemonset-p9x4r   0/1     {toolkit:<18} 11 (3m ago)    41m
nvidia-dcgm-exporter-h2m8c                 1/1     Running            0              41m
nvidia-device-plugin-daemonset-b6t5n       1/1     Running            0              41m
nvidia-operator-validator-k3v9z            1/1     Running            0              41m
"""


def test_a_crashing_toolkit_is_the_runtime_setup_not_a_wait(ruleset):
    """A toolkit pod in CrashLoopBackOff has passed its wait for the driver and fails itself, while
    it installs the NVIDIA runtime: not the 'plugin waits for the toolkit' category."""
    rule, category, confidence = verdict_of(
        ruleset, {"pods.txt": OPERATOR_PODS.format(toolkit="CrashLoopBackOff")}
    )
    assert (rule, category, confidence) == (
        "gpu-operator-toolkit-pod-failing",
        "runtime-other",
        "medium",
    )
    waiting = diagnose_texts(ruleset, {"pods.txt": OPERATOR_PODS.format(toolkit="Init:0/1")})
    assert "gpu-operator-toolkit-pod-failing" not in fired(waiting)
    assert "gpu-operator-pods-not-ready" in fired(waiting)


# ---- the driver container cannot reach its OS package repositories --------------------------------
DRIVER_LOG = """\
Starting installation of NVIDIA driver version 535.161.08 for Linux kernel version 4.18.0-513.el8.x86_64
Stopping NVIDIA persistence daemon...
Unloading NVIDIA driver kernel modules...
Checking NVIDIA driver packages...
Updating the package cache...
{error}
Stopping NVIDIA persistence daemon...
"""


def test_a_driver_container_without_its_package_repositories_is_named(ruleset):
    """yum's, dnf's or apt's failure to reach a repository, after the driver container's own
    package step, or the driver script's own words: the driver cannot be built."""
    for error in (
        "Error: Failed to download metadata for repo 'baseos': Cannot download repomd.xml: "
        "Curl error (6): Couldn't resolve host name",
        "Cannot find a valid baseurl for repo: updates/7/x86_64",
        "FATAL: failed to reach RHEL package repositories.  Ensure that the cluster can access "
        "the proper networks.",
    ):
        rule, category, _ = verdict_of(ruleset, {"driver.log": DRIVER_LOG.format(error=error)})
        assert (rule, category) == (
            "gpu-operator-driver-package-repos-unreachable",
            "runtime-other",
        ), error
    # the package manager's words alone, in an image build, are not the driver container's
    build = (
        "Step 4/7 : RUN dnf -y install gcc\n"
        "Error: Failed to download metadata for repo 'baseos': Cannot download repomd.xml\n"
    )
    assert "gpu-operator-driver-package-repos-unreachable" not in fired(
        diagnose_texts(ruleset, {"build.log": build})
    )


# ---- NVIDIA's MPS control daemon and its servers --------------------------------------------------
def test_the_mps_control_daemons_failing_step_is_named(ruleset):
    """The control daemon's own error outranks the plugin's 'error waiting for MPS daemon'."""
    log = (
        "I0302 08:10:00.000000 1 main.go:197] Retrieving MPS daemons.\n"
        "E0302 08:10:00.100000 1 main.go:213] Failed to start MPS daemon: error setting compute "
        "mode EXCLUSIVE_PROCESS: nvidia-smi: Insufficient Permissions\n"
        "I0302 08:10:00.100100 1 main.go:132] Failed to start one or more MPS deamons. Retrying in "
        "30s...\n"
        "E0302 08:10:05.000000 1 main.go:409] Failed to start plugin: error waiting for MPS daemon: "
        "error checking MPS daemon health: failed to send command to MPS daemon: exit status 1\n"
    )
    report = diagnose_texts(ruleset, {"mps.log": log})
    assert report.primary.rule_id == "mps-control-daemon-failing"
    assert "compute mode" in report.primary.title
    retry_only = log.splitlines()[2]
    assert "mps-control-daemon-failing" not in fired(
        diagnose_texts(ruleset, {"mps.log": retry_only})
    )


def test_an_mps_server_dying_is_a_runtime_fault(ruleset):
    """The control log's server that exits at once: clients of that user cannot use MPS."""
    control = (
        "[2025-03-02 08:10:00.100 Control    31] Starting new server 57 for user 0\n"
        "[2025-03-02 08:10:00.180 Control    31] Server encountered a fatal exception. Shutting down\n"
        "[2025-03-02 08:10:00.190 Control    31] Server 57 exited with status 1\n"
    )
    assert verdict_of(ruleset, {"control.log": control})[:2] == ("mps-server-dies", "runtime-other")
    clean = control.replace("exited with status 1", "exited with status 0").splitlines()
    quiet = "\n".join(line for line in clean if "fatal" not in line)
    assert "mps-server-dies" not in fired(diagnose_texts(ruleset, {"control.log": quiet}))


# ---- a node that is down --------------------------------------------------------------------------
NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-a
status:
  conditions:
  - type: Ready
    status: "{status}"
    reason: {reason}
    message: {message}
"""


def test_a_node_that_is_not_ready_is_named_with_its_reason(ruleset):
    down = NODE.format(
        status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status."
    )
    report = diagnose_texts(ruleset, {"node.yaml": down})
    assert "node-not-ready" in fired(report)
    finding = next(
        f for n in report.nodes for f in n.all_findings() if f.rule_id == "node-not-ready"
    )
    assert "Kubelet stopped posting node status" in finding.title
    up = NODE.format(
        status="True", reason="KubeletReady", message="kubelet is posting ready status"
    )
    assert "node-not-ready" not in fired(diagnose_texts(ruleset, {"node.yaml": up}))


def test_the_node_controllers_taints_in_the_schedulers_reasons_name_a_node_down(ruleset):
    """The node controller's taint is a node down, not a toleration the pod lacks: it is the
    verdict even where the other nodes are ruled out for reasons of their own."""
    event = (
        "# GPU pod pending\n\n```\nWarning  FailedScheduling  2m  default-scheduler  0/2 nodes are "
        "available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) had "
        "untolerated taint {node-role.kubernetes.io/control-plane: }.\n```\n"
    )
    assert issue_verdict(ruleset, event)[:2] == ("node-not-ready", "scheduling-other")
    selector = event.replace(
        "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
        "1 node(s) didn't match Pod's node affinity/selector",
    )
    report = diagnose_issue(ruleset, selector)
    assert report.worst.primary.rule_id == "node-not-ready"
    assert "pod-rejected-for-non-gpu-reasons" not in fired(report)
    control_plane = event.replace("node.kubernetes.io/not-ready", "node-role.kubernetes.io/master")
    assert "node-not-ready" not in fired(diagnose_issue(ruleset, control_plane))


# ---- helm waiting for HAMi's certificate jobs ------------------------------------------------------
def test_helm_giving_up_on_hamis_certificate_job_is_named(ruleset):
    """helm's debug output names the hook Job it waited for, and its error says the hook failed:
    HAMi's certificate job did not finish. Another chart's hook is not HAMi's."""
    debug = (
        "client.go:712: [debug] Watching for changes to Job vgpu-admission-create with timeout of "
        "3m0s\n"
        "client.go:779: [debug] vgpu-admission-create: Jobs active: 0, jobs failed: 1, jobs "
        "succeeded: 0\n"
        "Error: UPGRADE FAILED: failed pre-upgrade: job vgpu-admission-create failed: "
        "BackoffLimitExceeded\n"
    )
    rule, category, confidence = verdict_of(ruleset, {"helm.txt": debug})
    assert (rule, category, confidence) == (
        "hami-admission-job-did-not-finish",
        "scheduling-other",
        "low",
    )
    other = debug.replace("vgpu-admission-create", "keycloak-db-init")
    assert "hami-admission-job-did-not-finish" not in fired(
        diagnose_texts(ruleset, {"helm.txt": other})
    )


# ---- second round (sets 98-99, blind on the first round's fixes) ---------------------------------
def test_a_gpu_container_without_its_nvidia_smi_ran_under_runc(ruleset):
    """nvidia-smi is in no image: a container that cannot find it did not get the NVIDIA runtime.
    Another missing command is the image's own business."""
    event = (
        "Events:\n  Warning  Failed  4s  kubelet  Error: failed to create containerd task: failed to "
        "create shim task: OCI runtime create failed: runc create failed: unable to start container "
        'process: exec: "nvidia-smi": executable file not found in $PATH: unknown\n'
    )
    rule, category, _ = verdict_of(ruleset, {"describe.txt": event})
    assert (rule, category) == ("gpu-container-without-nvidia-runtime", "runtimeclass")
    other = event.replace('"nvidia-smi"', '"torchrun"')
    assert "gpu-container-without-nvidia-runtime" not in fired(
        diagnose_texts(ruleset, {"describe.txt": other})
    )


def test_a_node_said_to_offer_no_gpu_is_not_a_shortage(ruleset):
    """ "Insufficient nvidia.com/gpu" beside someone saying the node advertises no GPU reads as the
    plugin offering nothing, not as GPUs taken; GPUs named only for their vGPU resources are not it."""
    text = (
        "# Insufficient nvidia.com/gpu on my single node\n\n**Comment by maintainer:**\n\n"
        "Looks like the device plugin is not advertising any GPUs on that node; can you share its "
        "log?\n"
    )
    report = diagnose_issue(ruleset, text)
    assert report.worst.primary.rule_id == "no-gpu-advertised-described"
    assert "insufficient-gpu-described" in fired(report)  # explained by it, not the verdict
    vgpu = "# 资源没有上报\n\nkubelet 没有上报 nvidia.com/gpumem 和 nvidia.com/gpucores。\n"
    assert "no-gpu-advertised-described" not in fired(diagnose_issue(ruleset, vgpu))


# ---- the review's counter-examples (each fired a rule of this session before it was fixed) --------
def test_the_reviews_counter_examples_convict_nothing(ruleset):
    """Other charts' certificate jobs, nvidia-smi run by kubectl exec, apt's warning before the real
    failure, a node without GPUs, 'advertise' said of other things, a healthy node's unquoted True."""
    cases = {
        "hami-admission-job-did-not-finish": {
            "helm.txt": "client.go:712: [debug] Watching for changes to Job "
            "ingress-nginx-admission-create with timeout of 5m0s\n"
            "Error: INSTALLATION FAILED: failed post-install: 1 error occurred:\n"
        },
        "gpu-container-without-nvidia-runtime": {
            "exec.txt": "$ kubectl exec -n kube-system hami-scheduler-7d9f -- nvidia-smi\n"
            "error: Internal error occurred: error executing command in container: failed to exec in "
            "container: failed to start exec: OCI runtime exec failed: exec failed: unable to start "
            'container process: exec: "nvidia-smi": executable file not found in $PATH: unknown\n'
        },
        "gpu-operator-driver-package-repos-unreachable": {
            "driver.log": "Updating the package cache...\n"
            "W: Failed to fetch http://archive.ubuntu.com/ubuntu/dists/jammy/InRelease  Temporary "
            "failure resolving 'archive.ubuntu.com'\n"
            "Installing Linux kernel headers...\n"
        },
    }
    for rule, files in cases.items():
        assert rule not in fired(diagnose_texts(ruleset, files)), rule
    for prose in (
        "# Insufficient nvidia.com/gpu\n\nThe master node shows allocatable nvidia.com/gpu: 0 "
        "(expected), the workers have 8.\n",
        "# question\n\nhami-scheduler does not advertise devices itself, right?\n",
        "# gpumem missing\n\nThe plugin is not advertising GPU memory at all.\n",
    ):
        assert "no-gpu-advertised-described" not in fired(diagnose_issue(ruleset, prose)), prose
    healthy = NODE.replace('status: "{status}"', "status: {status}").format(
        status="True", reason="KubeletReady", message="kubelet is posting ready status"
    )
    assert "node-not-ready" not in fired(diagnose_texts(ruleset, {"node.yaml": healthy}))


def test_the_node_controllers_taint_in_the_older_wording(ruleset):
    """Kubernetes 1.18-1.24 said 'had taint {...}, that the pod didn't tolerate'."""
    text = (
        "# pending\n\n```\n0/2 nodes are available: 1 node(s) had taint {node.kubernetes.io/"
        "unreachable: }, that the pod didn't tolerate, 1 node(s) had taint {node-role.kubernetes.io/"
        "master: }, that the pod didn't tolerate.\n```\n"
    )
    report = diagnose_issue(ruleset, text)
    assert report.worst.primary.rule_id == "node-not-ready"
    assert "pod-rejected-for-non-gpu-reasons" not in fired(report)


# ---- third round (sets 100-101, blind on the second round's fixes) ---------------------------------
def test_every_gpu_false_in_the_old_csv_register_is_not_a_verdict(ruleset):
    """HAMi's plugin before v2.4.0 wrote health false for every device (bb73deda): in the 7-field
    format, false on all of them says nothing; one false among trues still convicts."""
    register = ",10,24576,100,NVIDIA-NVIDIA GeForce RTX 3090,0,{}:"
    node = (
        "kind: Node\nmetadata: {{name: n1, annotations: {{hami.io/node-nvidia-register: '{}'}}}}\n"
    )
    all_false = node.format("".join("GPU-" + str(k) + register.format("false") for k in range(4)))
    report = diagnose_texts(ruleset, {"node.yaml": all_false})
    assert "unhealthy-gpu-in-annotation" not in fired(report)
    assert "csv7-register-all-false-before-v2-4" in fired(report)
    assert report.primary.category != "device-unhealthy"
    one_false = node.format("GPU-0" + register.format("true") + "GPU-1" + register.format("false"))
    assert verdict_of(ruleset, {"node.yaml": one_false})[:2] == (
        "unhealthy-gpu-in-annotation",
        "device-unhealthy",
    )


def test_operator_pods_not_ready_is_a_wait_only(ruleset):
    """An operand whose main container keeps crashing got past its waits, and the driver's own
    init container waits for nothing of the toolkit's: neither is 'waiting for the toolkit'."""
    crashing = (
        "NAME                                     READY   STATUS             RESTARTS      AGE\n"
        "gpu-feature-discovery-x7k2p              0/1     CrashLoopBackOff   5 (1m ago)    9m\n"
        "nvidia-container-toolkit-daemonset-q2w   1/1     Running            0             9m\n"
    )
    driver = (
        "NAME                              READY   STATUS     RESTARTS   AGE\n"
        "nvidia-driver-daemonset-8hq2m     0/1     Init:0/1   0          20s\n"
    )
    for pods in (crashing, driver):
        report = diagnose_texts(ruleset, {"pods.txt": pods})
        assert "gpu-operator-pods-not-ready" not in fired(report), pods
        assert report.primary.category != "plugin-init-toolkit-wait", pods
    waiting = driver.replace("nvidia-driver-daemonset-8hq2m", "nvidia-dcgm-exporter-8hq2m")
    assert verdict_of(ruleset, {"pods.txt": waiting})[:2] == (
        "gpu-operator-pods-not-ready",
        "plugin-init-toolkit-wait",
    )
