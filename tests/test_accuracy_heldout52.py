"""Fifty-second to fifty-fifth measurements (issue 25, session 43): four sets of unseen real cases
(HAMi and its 4paradigm predecessor in 2022-23, clusters other than kubeadm, NVIDIA's plugin in
2018-21, pods that do not schedule) and the classes they left. Each class is checked on made-up
inputs (none copied from a real case): a scheduling summary whose counts leave no registered node,
log lines pasted without a fence, a reporter's Chinese word order, a `kubectl get ds` filtered by
grep, Volcano's older filter wording, a quoted vectorAdd failure, and a container that loses its
GPU days after it started."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, issue_verdict, verdict_of

# ---- a summary whose counts leave no registered node -------------------------------------------
FAILED = (
    "Events:\n"
    "  Warning  FailedScheduling  30s  hami-scheduler  0/{total} nodes are available: {reasons}. "
    "preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.\n"
    "  Warning  FilteringFailed   31s  hami-scheduler  no available node, 1 nodes do not meet\n"
)


def test_every_node_counted_and_the_extenders_all_unregistered(ruleset):
    """kube-scheduler's own filters rejected the other nodes (a taint's key holds dots): the
    extender was asked only about unregistered nodes, so no registered GPU node was too small."""
    for total, reasons in (
        (
            "3",
            "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
            "2 node unregistered",
        ),
        (
            "2",
            "1 node unregistered, 1 node(s) had taint {node.kubernetes.io/unreachable: }, "
            "that the pod didn't tolerate",
        ),
    ):
        text = FAILED.format(total=total, reasons=reasons)
        rule, category, confidence = verdict_of(ruleset, {"describe.txt": text})
        assert (rule, category, confidence) == (
            "evaluated-nodes-unregistered",
            "scheduler-not-seeing-node",
            "low",
        )
        found = fired(diagnose_issue(ruleset, f"# pod pending\n\n```\n{text}```\n"))
        assert "filtering-failed-registration-ok" in found  # shown as a consequence


def test_nodes_left_uncounted_keep_the_reading_of_a_request_too_big(ruleset):
    """HAMi up to v2.4 gives no reason for a registered node that did not fit: the counts fall
    short of the total, and that node is the one that did not fit."""
    text = FAILED.format(
        total="5",
        reasons="1 node unregistered, 2 node(s) didn't match Pod's node affinity/selector",
    )
    assert "evaluated-nodes-unregistered" not in fired(
        diagnose_issue(ruleset, f"# pod pending\n\n```\n{text}```\n")
    )


def test_a_described_plugin_crash_explains_the_unregistered_nodes(ruleset):
    issue = (
        "# device plugin keeps crashing\n\nThe hami-device-plugin pod crashes in a loop.\n\n```\n"
        + FAILED.format(
            total="2",
            reasons="1 node unregistered, 1 node(s) had untolerated taint "
            "{node-role.kubernetes.io/control-plane: }",
        )
        + "```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == ("plugin-crash-described", "plugin-crash-nvml")


# ---- log lines pasted without a fence ---------------------------------------------------------
def test_unfenced_hami_core_lines_are_read_as_the_log_they_are(ruleset):
    """Processes waiting on a lock held for good, pasted as lines of prose (a sentence before and
    after them): the lines are the workload's log, the sentences stay the reporter's."""
    issue = (
        "# workers hang\n\nThe pod prints:\n"
        "[HAMI-core Msg(41:139755:libvgpu.c:836)]: Initializing.....\n"
        "[HAMI-core Msg(57:139755:utils.c:34)]: unified_lock locked, waiting 1 second...\n"
        "[HAMI-core Msg(41:139755:utils.c:34)]: unified_lock locked, waiting 1 second...\n"
        "[HAMI-core Msg(63:139755:utils.c:34)]: unified_lock locked, waiting 1 second...\n"
        "and then nothing more.\n"
    )
    assert "hami-core-failure" in fired(diagnose_issue(ruleset, issue))


# ---- the reporter's own words -----------------------------------------------------------------
def test_gpumem_missing_from_the_node_in_chinese_word_order_is_normal(ruleset):
    """The negation before the resource (没有上报 X), and the node's count only in a sentence."""
    issue = (
        "# 节点没有上报 nvidia.com/gpumem\n\n"
        "describe node 只有 nvidia.com/gpu：20 ，并没有 nvidia.com/gpumem 和 nvidia.com/gpucores\n"
    )
    assert issue_verdict(ruleset, issue)[1] == "healthy"
    assert issue_verdict(ruleset, "# 节点没有上报 nvidia.com/gpumem\n")[1] == "inconclusive"


def test_a_plugin_that_did_not_come_up_in_chinese(ruleset):
    issue = "# 部署后 hami-device-plugin 没有跑起来\n\n请问是什么原因？\n"
    assert issue_verdict(ruleset, issue)[:2] == (
        "plugin-pod-missing-described",
        "no-device-plugin-pod",
    )


def test_a_container_that_loses_its_gpu_after_days(ruleset):
    issue = (
        "# Training pods lose access to the GPU after a few days\n\nnvidia-smi in the pod then "
        "fails; deleting the pod makes it work again.\n"
    )
    assert issue_verdict(ruleset, issue) == (
        "container-loses-gpu-described",
        "runtime-other",
        "low",
    )
    never = "# Pod cannot access the GPU\n\nnvidia-smi fails in the pod from the start.\n"
    assert "container-loses-gpu-described" not in fired(diagnose_issue(ruleset, never))


# ---- tables and wordings ----------------------------------------------------------------------
def test_a_daemonset_row_kept_by_grep_without_its_header(ruleset):
    """`kubectl get ds -A | grep nvidia` drops the header; the command says what the row is."""
    issue = (
        "# plugin pods never appear\n\n```\n$ kubectl get ds -A | grep nvidia\n"
        "gpu-ops   acme-nvidia-device-plugin   0   0   0   0   0   <none>   12m\n```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == (
        "device-plugin-daemonset-schedules-nowhere",
        "no-device-plugin-pod",
    )


def test_volcanos_older_filter_wording(ruleset):
    log = (
        "E0307 11:02:03.000101       1 device_info.go:187] deviceSharing err= not enough gpu "
        "fitted on this node\n"
    )
    rule, category, _ = verdict_of(ruleset, {"volcano-scheduler.log": log})
    assert category == "resource-insufficient" and rule is not None


def test_a_vectoradd_failure_quoted_without_device(ruleset):
    issue = (
        "# validator fails\n\n```\ncuda-validation Failed to allocate vector A (error code "
        "initialization error)!\n```\n"
    )
    assert issue_verdict(ruleset, issue)[1] == "runtime-other"


# ---- the second round of sets (gpu-operator's driver, HAMi in Chinese, upstream, sharing) -------
def test_a_describe_with_lines_left_out_proves_no_absence(ruleset):
    """`kubectl describe node` cut by hand (`...` in Labels and Capacity): the labels and
    resources it does not show are unknown, not missing."""
    describe = (
        "Name:               gpu-a.example.internal\nRoles:              <none>\n"
        "Labels:             beta.kubernetes.io/arch=amd64\n                    ...\n"
        "                    nvidia.com/gpu.replicas=1\n                    ...\n"
        "Capacity:\n  ...\n  cpu:  64\n"
    )
    found = fired(diagnose_issue(ruleset, f"# replicas label wrong\n\n```\n{describe}```\n"))
    assert not found & {"no-gpu-label", "gpu-resource-absent-from-capacity"}
    whole = describe.replace("                    ...\n", "").replace("  ...\n", "")
    assert "no-gpu-label" in fired(diagnose_issue(ruleset, f"# x\n\n```\n{whole}```\n"))


def test_another_vendors_accelerator_is_a_gpu_resource(ruleset):
    describe = (
        "Name:  npu-1\nCapacity:\n  cpu:  192\n  huawei.com/Ascend910B4-1:  32\n"
        "Allocatable:\n  cpu:  192\n  huawei.com/Ascend910B4-1:  32\n"
    )
    assert "gpu-resource-absent-from-capacity" not in fired(
        diagnose_issue(ruleset, f"# fifth pod\n\n```\n{describe}```\n")
    )


def test_a_shared_gpu_asked_twice_is_refused_by_design(ruleset):
    for quoted in (
        "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1",
        "invalid request: maximum request size for shared resources is 1; found 4",
    ):
        issue = f"# pod rejected\n\nThe kubelet says: {quoted}, which is unexpected\n"
        assert issue_verdict(ruleset, issue)[:2] == (
            "shared-gpu-request-above-one",
            "scheduling-other",
        )


def test_the_operators_driver_pod_failing_is_the_cause_of_the_operands_waiting(ruleset):
    pods = (
        "NAME                                   READY   STATUS             RESTARTS   AGE\n"
        "nvidia-driver-daemonset-x7k2p          0/1     CrashLoopBackOff   41         3h\n"
        "nvidia-device-plugin-daemonset-9q2lm   0/1     Init:0/1           0          3h\n"
    )
    assert verdict_of(ruleset, {"pods.txt": pods})[:2] == (
        "gpu-operator-driver-pod-failing",
        "runtime-other",
    )
    issue = (
        '# driver pod never starts\n\n`Failed to pull image "nvcr.io/nvidia/driver:550.90.07-'
        'debian12"` in the nvidia-driver-daemonset pod\n'
    )
    assert issue_verdict(ruleset, issue)[:2] == ("gpu-operator-driver-pod-failing", "runtime-other")


def test_a_summary_quoted_without_are(ruleset):
    issue = "# pending\n\nThe scheduler says `0/4 nodes available: 1 NodeUnfitPod, 3 node unregistered`\n"
    assert issue_verdict(ruleset, issue)[1] == "scheduling-other"


# ---- the review's cases ------------------------------------------------------------------------
def test_a_later_summary_with_a_registered_node_keeps_the_request_reading(ruleset):
    """An older summary counted only unregistered nodes; a later one shows a registered node that
    did not fit: the registration is fine now, and the request is what does not fit."""
    text = (
        "Events:\n"
        "  Warning  FailedScheduling  30m  hami-scheduler  0/2 nodes are available: 1 node "
        "unregistered, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.\n"
        "  Warning  FailedScheduling  2m   hami-scheduler  0/2 nodes are available: 1 NodeUnfitPod, "
        "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.\n"
        "  Warning  FilteringFailed   2m   hami-scheduler  no available node, 1 nodes do not meet\n"
    )
    assert "evaluated-nodes-unregistered" not in fired(diagnose_texts(ruleset, {"d.txt": text}))


def test_reasons_a_node_counts_twice_or_of_hamis_own_keep_their_reading(ruleset):
    """kube-scheduler counts reasons, not nodes (one node short of CPU and memory is counted
    twice), and a reason of HAMi's other than "node unregistered" is a registered node."""
    for reasons in (
        "1 Insufficient cpu, 1 Insufficient memory, 1 node unregistered",
        "1 Device type not found, 1 node unregistered, 1 node(s) had untolerated taint {a: }",
    ):
        text = FAILED.format(total="3", reasons=reasons)
        assert "evaluated-nodes-unregistered" not in fired(diagnose_texts(ruleset, {"d.txt": text}))


def test_the_operators_plugin_behind_its_deploy_label_is_not_the_plugin_that_runs_nowhere(ruleset):
    issue = (
        "# pods pending\n\n```\n$ kubectl get ds -A -o wide | grep nvidia\n"
        "gpu-operator   nvidia-device-plugin-daemonset   0   0   0   0   0   "
        "nvidia.com/gpu.deploy.device-plugin=true   9d\n```\n"
    )
    assert "device-plugin-daemonset-schedules-nowhere" not in fired(diagnose_issue(ruleset, issue))


def test_volcanos_gpu_share_filter_is_not_a_vgpu_count(ruleset):
    log = "E0307 11:02:03.000101 1 device_info.go:167] deviceSharing err= no enough gpu memory on node n1\n"
    assert "volcano-vgpu-does-not-fit" not in fired(diagnose_texts(ruleset, {"v.log": log}))


def test_reporters_sentences_that_only_look_like_the_symptoms(ruleset):
    for issue, rule in (
        (
            "# debugging\n\nAfter several hours of debugging, nvidia-smi still fails inside the pod.\n",
            "container-loses-gpu-described",
        ),
        (
            "# 问题\n\nhami-device-plugin 正常，但业务 pod 跑不起来\n",
            "plugin-pod-missing-described",
        ),
        (
            "# 限制\n\n容器内 nvidia-smi 没有显示 gpumem 设置的显存限制\n",
            "hami-resources-not-node-resources-is-normal",
        ),
    ):
        assert rule not in fired(diagnose_issue(ruleset, issue)), issue


# ---- the workload's own words ------------------------------------------------------------------
def test_the_workloads_nvml_is_not_the_plugins(ruleset):
    """pynvml's wording is a Python process's: a workload, not the Go device plugin."""
    log = (
        "DEBUG 08-29 01:02:03 [__init__.py:39] Exception happens when checking CUDA platform: "
        "NVML Shared Library Not Found\n"
    )
    assert verdict_of(ruleset, {"vllm.log": log})[:2] == (
        "workload-cannot-load-nvml",
        "runtime-other",
    )


def test_a_driver_older_than_the_image_when_the_gpu_was_reached(ruleset):
    log = (
        "I1020 08:00:01.000001 1 metrics.cc:290] Collecting metrics for GPU 0: Tesla T4\n"
        "I1020 08:00:01.100001 1 pinned_memory_manager.cc:192] failed to allocate pinned system "
        "memory: CUDA driver version is insufficient for CUDA runtime version\n"
    )
    assert verdict_of(ruleset, {"t.log": log})[:2] == (
        "cuda-driver-older-than-image",
        "runtime-other",
    )
    alone = log.splitlines()[1] + "\n"
    assert verdict_of(ruleset, {"t.log": alone})[1] == "runtimeclass"


def test_cuda_error_803_vllm_without_a_platform_and_autopilots_refusal(ruleset):
    cases = {
        "Error 803: system has unsupported display driver / cuda driver combination": (
            "cuda-driver-combination-mismatch",
            "runtime-other",
        ),
        "INFO 06-12 10:11:12 [__init__.py:248] No platform detected, vLLM is running on "
        "UnspecifiedPlatform": ("workload-sees-no-gpu-platform", "runtimeclass"),
        "GPU-using init containers are not supported in Autopilot.": (
            "gke-autopilot-rejects-gpu-spec",
            "scheduling-other",
        ),
    }
    for line, expected in cases.items():
        assert verdict_of(ruleset, {"x.log": line + "\n"})[:2] == expected, line


def test_hamis_mig_parted_failing_and_a_plugin_that_exits_and_restarts(ruleset):
    """HAMi's plugin exits when its bundled nvidia-mig-parted fails; "causes the device plugin to
    exit and restart" is the plugin's restart, not one the reporter did ("... and restart it")."""
    log = (
        "F0314 08:00:01.000001       1 server.go:1146] nvidia-mig-parted failed with exit status 1,"
        'reason:time="2025-03-14T08:00:01Z" level=error msg="all orderings failed"\n'
    )
    assert verdict_of(ruleset, {"dp.log": log})[:2] == (
        "hami-mig-parted-failed",
        "plugin-crash-nvml",
    )
    issue = "# MIG split\n\nThe split fails and causes the device plugin to exit and restart.\n"
    assert issue_verdict(ruleset, issue)[:2] == ("plugin-crash-described", "plugin-crash-nvml")


# ---- the second review's cases -----------------------------------------------------------------
def test_lines_left_out_of_a_describe_at_the_margin_end_the_section_above():
    """An indented `...` cuts its section; one at the margin says whole sections were left out,
    and the section above it (Taints) is whole."""
    from analyzer.dev.samples import node

    n = node(
        "Name:  gpu-1\nLabels:  a=b\n          ...\nTaints:  nvidia.com/gpu:NoSchedule\n...\n"
        "Capacity:\n  nvidia.com/gpu:  4\n",
        "node-describe",
    )
    assert "taints" in n.sections and "labels" in n.partial and "capacity" in n.sections
    folded = node("Name:  gpu-1\nLabels:  ...\nCapacity:\n  cpu:  8\n", "node-describe")
    assert "labels" in folded.partial and not folded.labels


def test_hami_annotations_shown_among_lines_left_out_are_read(ruleset):
    register = (
        '[{"id":"GPU-0a1b","count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4",'
        '"numa":0,"health":false}]'
    )
    describe = (
        "Name:  gpu-1\nAnnotations:  hami.io/node-handshake: Requesting_2025.08.15 09:12:44\n"
        f"              hami.io/node-nvidia-register: {register}\n              ...\n"
        "Capacity:\n  nvidia.com/gpu:  10\nAllocatable:\n  nvidia.com/gpu:  10\n"
    )
    assert "unhealthy-gpu-in-annotation" in fired(diagnose_texts(ruleset, {"d.txt": describe}))


def test_vllm_on_another_accelerator_probing_nvml_is_no_fault(ruleset):
    log = (
        "DEBUG 08-29 01:02:03 [__init__.py:39] Exception happens when checking CUDA platform: "
        "NVML Shared Library Not Found\n"
        "INFO 08-29 01:02:04 [__init__.py:244] Automatically detected platform rocm.\n"
    )
    assert "workload-cannot-load-nvml" not in fired(diagnose_texts(ruleset, {"vllm.log": log}))
