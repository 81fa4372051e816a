"""Seventy-fourth to seventy-sixth measurements (issue 25, session 44): three sets of unseen real
cases (HAMi with other vendors' accelerators, other GPU-sharing projects, pods whose describe is
the evidence) and the classes they left. Each class is checked on made-up inputs (none copied from
a real case): a log copied out of a terminal UI's frame, the Ascend plugin's start and device-share
failures, a device list over the kubelet's gRPC limit, Helm refusing a provider's version, an image
of the GPU stack that cannot be pulled, and a kubelet with no GPU at all at admission."""

from __future__ import annotations

from analyzer.bundle.text import unframe
from conftest import diagnose_issue, fired, issue_verdict, parse_texts, verdict_of

# ---- a log copied out of k9s's frame -------------------------------------------------------------
FRAMED = (
    "│                    Autoscroll:On      FullScreen:Off     Timestamps:Off     Wrap:On     │\n"
    "│ I0412 07:01:10.100000       1 main.go:117] version: v1.2.0-0a1b2c3d                 │\n"
    "│ I0412 07:01:10.100100       1 main.go:118] using config file: /device-config.yaml   │\n"
    "│ F0412 07:01:10.320000       1 main.go:133] load config failed, error is can not find vnpu config for chip 310P9\n"
)


def test_a_log_copied_out_of_a_terminal_frame_is_read_as_the_log(ruleset):
    """Every line opening with k9s's bar: the frame comes off and the fatal line is read, in a
    file and unfenced in an issue (the bar kept them from being log lines at all)."""
    assert verdict_of(ruleset, {"device-plugin.log": FRAMED})[:2] == (
        "ascend-plugin-exits-at-start",
        "plugin-crash-nvml",
    )
    issue = f"# plugin restarts\n\nthe device-plugin prints:\n{FRAMED}\nversion v2.6\n"
    assert issue_verdict(ruleset, issue)[:2] == (
        "ascend-plugin-exits-at-start",
        "plugin-crash-nvml",
    )


def test_a_framed_log_is_recognised_as_a_log_and_a_drawing_is_left(ruleset):
    """Inside the frame its lines were no log's (plain text, no timeline); two framed lines are
    a drawing, not a pane, and keep their bars."""
    parsed = parse_texts(ruleset, {"device-plugin.log": FRAMED})
    assert [a.kind for a in parsed.artefacts] == ["klog"]
    assert unframe("│ a\n│ b\nc") == "│ a\n│ b\nc"


# ---- HAMi's Ascend plugin -------------------------------------------------------------------------
def test_the_ascend_plugin_without_npu_smi_fails_every_allocation(ruleset):
    """The kubelet's admission error carries the plugin's reason: npu-smi is not in its
    container, which is neither a scheduling nor a device fault."""
    event = (
        "  Warning  UnexpectedAdmissionError  4s  kubelet  Allocate failed due to rpc error: "
        "code = Unknown desc = apply device-share for pod team-a/llm-0: npu-smi set device-share "
        "-i 3 -c 0 -d 1: npu-smi not found in [/usr/local/sbin/npu-smi] or PATH: , which is "
        "unexpected\n"
    )
    rule, category, _ = verdict_of(ruleset, {"pod-describe.txt": f"Events:\n{event}"})
    assert (rule, category) == ("ascend-allocation-cannot-run-npu-smi", "runtime-other")


def test_the_ascend_driver_refusing_device_share_stops_the_plugin(ruleset):
    log = (
        "E0601 11:00:00.000000       1 main.go:84] Failed to start plugin server: enable node "
        "device-share: npu-smi set device-share -i 2 -c 0 -d 1: exit status 203:\n"
        "Status : Fail\n"
    )
    rule, category, _ = verdict_of(ruleset, {"device-plugin.log": log})
    assert (rule, category) == ("ascend-device-share-refused-by-driver", "plugin-crash-nvml")


# ---- a device list over the kubelet's gRPC limit --------------------------------------------------
def test_a_device_list_too_large_for_the_kubelet(ruleset):
    """ListAndWatch named, or the bare gRPC error quoted beside the kubelet marking the
    resource unhealthy: the node shows 0 of it (registration), not an admission failure."""
    named = (
        'E0301 08:00:00.000000    2001 client.go:90] "ListAndWatch ended unexpectedly for device '
        'plugin" err="rpc error: code = ResourceExhausted desc = grpc: received message larger '
        'than max (6100000 vs. 4194304)" resource="example.com/vmem"\n'
    )
    bare = (
        "grpc: received message larger than max (6100000 vs. 4194304)\n"
        "I0301 08:00:00.100000    2001 manager.go:440] Mark all resources Unhealthy for "
        "resource example.com/vmem\n"
    )
    for files in ({"kubelet.log": named}, {"other.txt": "ResourceExhausted desc = " + bare}):
        assert verdict_of(ruleset, files)[:2] == (
            "device-list-over-grpc-limit-at-listandwatch",
            "no-allocatable-kubelet-socket",
        ), files


# ---- Helm refusing a provider-suffixed version ----------------------------------------------------
def test_helm_refusing_a_provider_suffixed_version(ruleset):
    """An install that stopped at Helm's kubeVersion check deployed nothing, the device plugin
    pod neither (as an image that cannot be pulled: session 52's 151st set read it so), and is
    not read when the constraint already admits pre-releases."""
    issue = (
        "# install fails on GKE\n\n```\n$ helm install hami hami-charts/hami -n kube-system\n"
        "Error: INSTALLATION FAILED: chart requires kubeVersion: >= 1.16.0 which is incompatible "
        "with Kubernetes v1.30.5-gke.1014001\n```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == (
        "helm-chart-refuses-provider-version",
        "no-device-plugin-pod",
    )
    fine = issue.replace(">= 1.16.0 ", ">= 1.18.0-0 ").replace("v1.30.5-gke.1014001", "v1.17.2")
    assert "helm-chart-refuses-provider-version" not in fired(diagnose_issue(ruleset, fine))


# ---- an image of the GPU stack that cannot be pulled ----------------------------------------------
PULL = '  Warning  Failed  12s  kubelet  Failed to pull image "{image}": {why}\n'


def test_an_image_of_the_gpu_stack_that_cannot_be_pulled(ruleset):
    """The plugin's image: no plugin pod; an operand's image: the operator's chain waits; any
    other image (the workload's, the driver's with rules of its own) is not this."""
    cases = (
        (
            "registry.example/nvidia/k8s-device-plugin:v9.9",
            "rpc error: code = NotFound desc = not found",
        ),
        ("registry.example/projecthami/hami:v9.9.9", "rpc error: code = NotFound desc = not found"),
        ("nvcr.io/nvidia/k8s/container-toolkit:v0.0.1", "manifest unknown: manifest unknown"),
    )
    want = (
        ("device-plugin-image-cannot-be-pulled", "no-device-plugin-pod"),
        ("hami-image-cannot-be-pulled", "no-device-plugin-pod"),  # its scheduler runs it too: low
        ("gpu-operator-image-cannot-be-pulled", "runtime-other"),
    )
    for (image, why), expected in zip(cases, want, strict=True):
        text = "Events:\n" + PULL.format(image=image, why=why)
        assert verdict_of(ruleset, {"pod-describe.txt": text})[:2] == expected, image
    for image in ("docker.io/library/python:3.12", "nvidia/cuda:12.4.1-base", "x/hamilton:v1"):
        other = "Events:\n" + PULL.format(image=image, why="not found")
        assert not fired(diagnose_issue(ruleset, other)) & {
            "device-plugin-image-cannot-be-pulled",
            "hami-image-cannot-be-pulled",
            "gpu-operator-image-cannot-be-pulled",
        }, image


# ---- the kubelet with no GPU at admission ---------------------------------------------------------
def test_a_kubelet_with_no_gpu_at_admission_is_a_registration_gap(ruleset):
    """capacity 0 at the kubelet's admission: no plugin registered then; a capacity that is not
    0 is a shortage, and not this rule's."""
    msg = "Pod Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: {u}, capacity: {c}"
    text = "Status:  Failed\nReason:  OutOfnvidia.com/gpu\nMessage:  " + msg + "\n"
    assert verdict_of(ruleset, {"pod-describe.txt": text.format(u=0, c=0)})[:2] == (
        "kubelet-has-no-gpu-at-admission",
        "no-allocatable-kubelet-socket",
    )
    busy = diagnose_issue(ruleset, "```\n" + text.format(u=4, c=4) + "```\n")
    assert "kubelet-has-no-gpu-at-admission" not in fired(busy)


# ---- the 77th and 78th sets: other schedulers' pods, DRA -------------------------------------------
def test_pytorch_finding_no_driver_is_the_runtime_not_the_plugin(ruleset):
    """PyTorch's "Found no NVIDIA driver" in a pod: the driver's libraries were not injected
    (runc); not when the pod already runs nvidia's runtime class."""
    issue = (
        "# notebook sees no GPU\n\n```\nRuntimeError: Found no NVIDIA driver on your system. Please "
        "check that you have an NVIDIA GPU and installed a driver from "
        "http://www.nvidia.com/Download/index.aspx\n```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == ("workload-finds-no-driver-library", "runtimeclass")


def test_an_nvml_error_of_another_pod_beside_a_plugin_said_to_run_fine(ruleset):
    """The reporter clears the device plugin and quotes a helper pod's NVML error: the runtime
    of that pod, at low, not the plugin crashing at medium; without those words, the plugin,
    when the quote is a device plugin's own wording. (Session 53: "unable to initialize NVML"
    is go-nvml's example wording, which no device plugin prints, so quoted alone it is another
    pod's too, whoever the reporter blames: tests/test_accuracy_heldout165.py.)"""
    quoted = 'fails with "unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND"'
    cleared = f"# pods fail\n\nOur quota agent pod {quoted}.\n\nThe device plugin pods are running fine.\n"
    assert issue_verdict(ruleset, cleared) == ("other-pod-cannot-load-nvml", "runtimeclass", "low")
    plain = '# plugin fails\n\nThe plugin fails with "nvml init failed: ERROR_LIBRARY_NOT_FOUND".\n'
    assert issue_verdict(ruleset, plain)[:2] == ("nvml-init-failed", "plugin-crash-nvml")


def test_an_unresolvable_cdi_device_with_a_placeholder_name(ruleset):
    """A reporter's `<uid>` in the device's name (redacted by hand) is still a device name."""
    event = (
        "  Warning  Failed  5s  kubelet  Error: failed to create containerd container: CDI device "
        "injection failed: unresolvable CDI devices k8s.gpu.example.com/gpu=<uid>-gpu-1\n"
    )
    assert verdict_of(ruleset, {"pod-describe.txt": f"Events:\n{event}"})[1] == "cdi-unresolvable"


def test_a_dra_driver_not_registered_names_no_single_cause(ruleset):
    """ "DRA driver X is not registered": its plugin absent or a kubelet that lost it; the line
    alone does not say which, so the reading is low even in a whole describe."""
    describe = (
        "Name:         job-7\nNamespace:    lab\nStatus:       Pending\nEvents:\n"
        "  Type     Reason                         Age   From     Message\n"
        "  ----     ------                         ----  ----     -------\n"
        "  Warning  FailedPrepareDynamicResources  9s    kubelet  Failed to prepare dynamic "
        "resources: prepare dynamic resources: DRA driver gpu.example.com is not registered\n"
    )
    rule, _, confidence = verdict_of(ruleset, {"pod-describe.txt": describe})
    assert (rule, confidence) == ("dra-driver-not-on-node", "low")


def test_what_leaves_the_kubelet_without_a_gpu_is_the_verdict(ruleset):
    """A plugin image that cannot be pulled, or the Ascend plugin stopping at start over
    npu-smi, explains the kubelet's capacity 0 at admission and its generic start failure."""
    admission = (
        "Status:  Failed\nReason:  OutOf{r}\nMessage:  Pod Node didn't have enough resource: "
        "{r}, requested: 1, used: 0, capacity: 0\n"
    )
    pull = "Events:\n" + PULL.format(
        image="nvcr.io/nvidia/k8s-device-plugin:v0.99.0",
        why="rpc error: code = NotFound desc = not found",
    )
    files = {"pod-describe.txt": admission.format(r="nvidia.com/gpu"), "plugin-describe.txt": pull}
    assert verdict_of(ruleset, files)[0] == "device-plugin-image-cannot-be-pulled"
    log = (
        "E0101 00:00:01.000000       1 main.go:84] Failed to start plugin server: enable node "
        "device-share: npu-smi set device-share -i 0 -c 0 -d 1: npu-smi not found in "
        "[/usr/local/sbin/npu-smi] or PATH: \n"
        "F0101 00:00:01.000000       1 main.go:167] start PluginServer failed, error is enable node "
        "device-share: npu-smi set device-share -i 0 -c 0 -d 1: npu-smi not found in "
        "[/usr/local/sbin/npu-smi] or PATH: \n"
    )
    files = {
        "device-plugin.log": log,
        "pod-describe.txt": admission.format(r="huawei.com/Ascend910B"),
    }
    assert verdict_of(ruleset, files)[:2] == (
        "ascend-plugin-cannot-run-npu-smi",
        "plugin-crash-nvml",
    )


def test_hami_cores_own_error_named_in_prose_with_a_placeholder(ruleset):
    """A bug report that names HAMi-core's "Illegal device id" with `<random>` for the number
    is HAMi-core's fault in the workload, not a case with nothing to read."""
    issue = (
        "# crash in cuMemCreate hook\n\nThe hook passes an uninitialized `dev`, which logs "
        "`Illegal device id: <random>`, and then every process in the pod crashes.\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == ("hami-core-illegal-device-id", "runtime-other")


# ---- the 81st and 82nd sets -----------------------------------------------------------------------
def test_nvidia_smis_words_quoted_in_a_sentence_are_not_the_plugins_line(ruleset):
    """The plugin's line ends in its own full stop; a sentence that quotes the same words with
    Markdown emphasis ends in its own: a workload container's NVML, not the plugin's."""
    issue = (
        '# containers lose GPUs\n\nAfter a few hours my pods lose access to the GPU with **"Failed '
        'to initialize NVML: Unknown Error"**.\n'
    )
    assert issue_verdict(ruleset, issue)[:2] == ("container-nvml-unknown-error", "runtime-other")


def test_a_runtime_handler_without_its_type(ruleset):
    """containerd's own validation error, without the kubelet's wrapper around it."""
    line = (
        'level=error msg="RunPodSandbox failed" error="failed to start sandbox \\"0a1b\\": create '
        'container failed validation: container.Runtime.Name must be set: invalid argument"\n'
    )
    assert verdict_of(ruleset, {"containerd.log": line})[:2] == (
        "containerd-runtime-handler-without-type",
        "runtime-other",
    )


def test_a_plugin_said_to_run_but_not_fine_keeps_its_nvml_reading(ruleset):
    """ "Running normally, but nvidia.com/gpu is 0" describes a plugin that runs without GPUs,
    and Chinese negations or questions say it does not run well: the plugin's NVML failure."""
    error = "nvml init failed: ERROR_LIBRARY_NOT_FOUND"
    for said in (
        f"The device plugin pods are running normally, but nvidia.com/gpu is 0. Its log: {error}",
        f"hami-device-plugin的pod无法正常运行，日志报错：{error}",
        f"hami-device-plugin 运行正常吗？日志报错：{error}",
    ):
        assert issue_verdict(ruleset, f"# no gpu\n\n{said}\n")[:2] == (
            "nvml-init-failed",
            "plugin-crash-nvml",
        ), said


def test_koordlets_minor_number_warning_is_not_the_device_plugin(ruleset):
    line = (
        "W0301 10:04:28.556216  1520 collector_gpu_linux.go:72] nvml init gpu data, error unable "
        "to get device minor number: Not Supported\n"
    )
    assert verdict_of(ruleset, {"koordlet.log": line})[:3] == (
        "koordlet-gpu-minor-unsupported",
        "device-unhealthy",
        "low",
    )
