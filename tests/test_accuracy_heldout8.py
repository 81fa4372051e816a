"""Eighth and ninth measurements (issue 25, session 38). A set of unseen real cases, most of them
about the scheduler, gave three verdicts that were wrong at high confidence; each class is checked
here on made-up inputs (none copied from a real case): per-node "node unregistered" lines read as
"every node unregistered"; a FitError whose reasons leave a node out (the extender's rejection)
read as "every node rejected for non-GPU reasons"; a gRPC message-size failure at admission
explained as an annotation lookup; and the causes they hid: a panic in the extender's request
handler, vgpu-memory at 0. The ninth set (device-plugin side) missed the plugin's MIG memory
query refused by NVML, pasted without a klog header, and a validator line cut mid-message. The
tenth (the workload side) missed libcuda.so.1 absent in the container, HAMi-core's routine exit
message taken for an error, its ERROR lines (a space before the parenthesis) not read as a
workload's log, its older shared-region wording, and a usage count wrapped around 2^64."""

from __future__ import annotations

from conftest import diagnose_texts, fired

PER_NODE_UNREGISTERED = (
    'I0602 09:12:40.101000       1 scheduler.go:360] "node unregistered" node="cpu-a1" '
    'error="node cpu-a1 not found"\n'
    'I0602 09:12:40.101100       1 scheduler.go:360] "node unregistered" node="cpu-a2" '
    'error="node cpu-a2 not found"\n'
)
HANDLER_PANIC = (
    "2025/06/02 09:12:40 http2: panic serving 127.0.0.1:41872: runtime error: index out of "
    "range [4] with length 4\n"
    "goroutine 873 [running]:\n"
    "net/http.(*http2serverConn).runHandler.func1()\n"
    "\t/usr/local/go/src/net/http/h2_bundle.go:6185 +0x145\n"
    "github.com/Project-HAMi/HAMi/pkg/scheduler.(*Scheduler).Filter(0xc0002ab040, {0xc0, 0x5})\n"
    "\t/k8s-vgpu/pkg/scheduler/scheduler.go:520 +0x2cc\n"
)


def test_per_node_unregistered_lines_are_not_every_node_unregistered(ruleset):
    """The extender's per-node lines name nodes without HAMi devices (CPU nodes, normal): no
    count is in them, so they cannot say every candidate is unregistered."""
    report = diagnose_texts(ruleset, {"scheduler.log": PER_NODE_UNREGISTERED})
    assert "nodes-unregistered" not in fired(report)


def test_a_panic_in_the_extenders_handler_is_the_verdict(ruleset):
    report = diagnose_texts(ruleset, {"scheduler.log": PER_NODE_UNREGISTERED + HANDLER_PANIC})
    p = report.primary
    assert (p.rule_id, p.category) == ("scheduler-request-panicked", "scheduling-other")
    assert "index out of range" in p.title
    assert "scheduler-panicked" not in fired(report)  # the process did not exit


def test_a_fit_error_that_leaves_a_node_out_is_not_every_node_for_non_gpu_reasons(ruleset):
    """Old kube-schedulers leave the nodes HAMi's extender rejected out of the summary: four
    of five counted, the fifth (the GPU node) rejected for a reason not shown."""
    log = (
        "I0124 08:49:33.398379       1 factory.go:453] Unable to schedule ml/train-0: no fit: "
        "0/5 nodes are available: 4 node(s) didn't match node selector.; waiting\n"
    )
    report = diagnose_texts(ruleset, {"kube-scheduler.log": log})
    assert "pod-rejected-for-non-gpu-reasons" not in fired(report)
    counted = log.replace("0/5", "0/4")  # every node counted: the claim holds
    assert "pod-rejected-for-non-gpu-reasons" in fired(
        diagnose_texts(ruleset, {"kube-scheduler.log": counted})
    )


def test_a_grpc_size_failure_at_admission_is_explained_as_such(ruleset):
    describe = (
        "Name:         llm-0\nNamespace:    ml\nStatus:       Failed\n"
        "Reason:       UnexpectedAdmissionError\n"
        "Message:      Pod was rejected: Allocate failed due to device plugin "
        "GetPreferredAllocation rpc failed with err: rpc error: code = ResourceExhausted desc = "
        "grpc: received message larger than max (9437184 vs. 4194304), which is unexpected\n"
    )
    p = diagnose_texts(ruleset, {"pod-describe.txt": describe}).primary
    assert p.rule_id == "device-list-over-grpc-limit"
    assert "9437184" in p.title and "GetPreferredAllocation" in p.title


def test_vgpu_memory_at_zero_beside_vgpus_is_the_memory_factor(ruleset):
    """Volcano's plugin lists memory as one device per MiB by default: on big GPUs the list
    passes the kubelet's gRPC limit and vgpu-memory stays 0 while vgpu-number arrived."""
    describe = (
        "Name:               gpu-h100-2\nRoles:              <none>\nCapacity:\n"
        "  volcano.sh/vgpu-cores:   400\n  volcano.sh/vgpu-memory:  0\n"
        "  volcano.sh/vgpu-number:  40\n"
    )
    p = diagnose_texts(ruleset, {"node-describe.txt": describe}).primary
    assert (p.rule_id, p.category) == (
        "vgpu-memory-advertised-as-zero",
        "no-allocatable-kubelet-socket",
    )
    assert "40 vGPUs" in p.title


def test_the_plugins_mig_query_refused_by_nvml_is_read_without_a_log_header(ruleset):
    """go-nvlib's wording, pasted alone (no klog header: the file is plain text)."""
    p = diagnose_texts(
        ruleset, {"paste.txt": "error getting parent memory info: Insufficient Permissions\n"}
    ).primary
    assert (p.rule_id, p.category) == ("nvml-mig-permission-denied", "plugin-crash-nvml")


def test_a_validator_line_cut_inside_its_message_still_counts(ruleset):
    report = diagnose_texts(
        ruleset,
        {"validator.txt": "Failed to allocate device vector A (error code no CUDA-capable devi\n"},
    )
    assert "gpu-operator-validation-workload-failed" in fired(report)


def test_libcuda_missing_in_the_container_is_the_driver_not_injected(ruleset):
    text = "$ kubectl exec -it cuda-0 -- bash\n/bin/bash: error while loading shared libraries: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    p = diagnose_texts(ruleset, {"exec.txt": text}).primary
    assert (p.rule_id, p.category) == ("workload-driver-libraries-not-injected", "runtimeclass")


def test_hami_cores_exit_message_asked_about_is_healthy(ruleset):
    """Asked about in the issue's words (its title quoting the line): HAMi-core's routine message,
    the answer. (A bundle of only the workload's log stays inconclusive: a normal finding answers
    a question the issue asks, and nothing there shows the node.)"""
    from analyzer.analyze import AnalyzeOptions, Issue, analyze

    text = "# nvidia-smi in the pod prints multiprocess_memory_limit.c:499)]: Calling exit handler 30\n\nIs this a problem?\n"
    p = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report.primary
    assert p.category == "healthy"


def test_hami_core_error_lines_make_a_workload_log(ruleset):
    from conftest import parse_texts

    text = "[HAMI-core ERROR (pid:7 thread=140012345678848 libvgpu.c:940)]: cuInit failed:100\n"
    [artefact] = parse_texts(ruleset, {"app.txt": text}).artefacts
    assert artefact.kind == "workload-log"


def test_the_older_shared_region_wording_is_read(ruleset):
    text = "Fail to open shrreg /tmp/vgpu/vudevshr/cache:errno=13\npython: multiprocess_memory_limit.c:622: try_create_shrreg: Assertion `0' failed.\n"
    assert "hami-core-failure" in fired(diagnose_texts(ruleset, {"train.log": text}))


def test_a_usage_count_near_two_to_the_64_is_hami_cores_accounting(ruleset):
    text = "[HAMI-core ERROR (pid:1 thread=140012345678848 allocator.c:53)]: Device 0 OOM 18446744073700000000 / 24146608128\n"
    p = diagnose_texts(ruleset, {"train.log": text}).primary
    assert p.rule_id == "hami-core-usage-wrapped"
    assert "hami-core-oom" not in {
        f.rule_id for f in diagnose_texts(ruleset, {"train.log": text}).nodes[0].findings
    }


POD_FOLDED = """apiVersion: v1
kind: Pod
metadata:
  name: train-0
  namespace: ml
spec:
  schedulerName: hami-scheduler
status:
  conditions:
  - lastProbeTime: null
    message: '0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane:
      }, 2 SECOND. preemption: 0/3 nodes
      are available: 3 Preemption is not helpful for scheduling.'
    reason: Unschedulable
    status: "False"
    type: PodScheduled
  phase: Pending
"""


def test_a_folded_fit_error_in_a_pods_yaml_is_read_whole(ruleset):
    """kubectl folds the condition's message over lines: its second reason is on the next line.
    Read line by line, a GPU reason there was out of sight (the non-GPU claim fired at high) and
    so was the end of a non-GPU one (a cut summary counts for nothing)."""
    gpu = POD_FOLDED.replace("SECOND", "Insufficient nvidia.com/gpumem")
    assert "pod-rejected-for-non-gpu-reasons" not in fired(
        diagnose_texts(ruleset, {"pod.yaml": gpu})
    )
    selector = POD_FOLDED.replace("SECOND", "node(s) didn''t match Pod''s node affinity/selector")
    p = diagnose_texts(ruleset, {"pod.yaml": selector}).primary
    assert p.rule_id == "pod-rejected-for-non-gpu-reasons"
    assert "selector" in p.title
