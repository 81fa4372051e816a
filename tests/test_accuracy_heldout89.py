"""Eighty-ninth to ninety-first measurements (issue 25, session 46): blind sets of unseen real cases
and the classes they left, each checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, issue_verdict, parse_texts, verdict_of

# ---- a panic of NVIDIA's plugin built in GOPATH (up to 1.0.0-beta) ----------------------------------
OLD_PLUGIN_PANIC = (
    "panic: runtime error: index out of range\n"
    "\n"
    "goroutine 1 [running]:\n"
    "main.buildDeviceList(0xc420010f00, 0x2, 0x2)\n"
    "\t/go/src/nvidia-device-plugin/nvidia.go:61 +0x2a1\n"
    "main.main()\n"
    "\t/go/src/nvidia-device-plugin/main.go:38 +0x9c\n"
)


def test_an_old_nvidia_plugins_panic_is_the_plugins_crash(ruleset):
    """The plugin's package was `main`, built under /go/src/nvidia-device-plugin: the frame's path
    is what names the component, even in a paste recognised as nothing but text."""
    rule, category, _ = verdict_of(ruleset, {"trace.txt": OLD_PLUGIN_PANIC})
    assert (rule, category) == ("plugin-restarted", "plugin-crash-nvml")
    # another program's stack under a GOPATH of its own claims nothing
    other = OLD_PLUGIN_PANIC.replace("nvidia-device-plugin", "my-tool")
    assert verdict_of(ruleset, {"trace.txt": other})[0] is None


# ---- a compute limit that does not hold is HAMi-core's, in the container ----------------------------
def test_a_compute_limit_not_enforced_points_at_hami_core(ruleset):
    """Forced (GPU_CORE_UTILIZATION_POLICY=force), or with what the limiter misses (CUDA graphs,
    no process found), a compute limit that does not hold is HAMi-core's limiter."""
    for text in (
        "# gpucores has no effect\n\nGPU_CORE_UTILIZATION_POLICY=force is set and the pod asks "
        "nvidia.com/gpucores: 20, but the gpucores limit is not enforced.\n",
        "# 算力限制失效\n\n设置了 nvidia.com/gpucores: 30，但是用 CUDA Graph 时算力限制不生效。\n",
        "# CUDA_DEVICE_SM_LIMIT never throttles\n\nThe watcher logs userutil=0 while the GPU is "
        "busy.\n",
    ):
        assert issue_verdict(ruleset, text)[:2] == (
            "core-limit-not-enforced-described",
            "runtime-other",
        ), text


def test_a_compute_limit_on_a_gpu_the_pod_has_alone_is_the_default_policy(ruleset):
    """Under the default policy HAMi-core throttles only while the GPU is shared (HAMi#737's
    answer); a maintainer's advice to set force is not the reporter's setting."""
    text = (
        '# gpucores\n\nnvidia.com/gpucores: "50" is set, but GPU-Util still reaches 100.\n\n'
        "**Comment by maintainer:**\n\nYou can set GPU_CORE_UTILIZATION_POLICY=force to "
        "enforce it.\n"
    )
    report = diagnose_issue(ruleset, text)
    assert "core-limit-alone-on-gpu-is-normal" in fired(report)
    assert "core-limit-not-enforced-described" not in fired(report)
    assert report.worst.primary.category == "healthy"


def test_other_limits_quotas_and_scheduling_are_not_a_compute_limit(ruleset):
    """Another limit's words between "gpucores" and the verb, a quota's, or a scheduling question
    (review of the first version: each was read as the compute limit not holding)."""
    for text in (
        "# pod pending\n\n```\n0/2 nodes are available: 2 Insufficient nvidia.com/gpucores, "
        "2 node(s) didn't match Pod's node affinity/selector.\n```\n",
        "# gpumem\n\nI set gpucores and gpumem on the pod, but the gpumem limit does not work.\n",
        "# 显存\n\n我们的算力平台用 HAMi 做 GPU 共享，设置 gpumem 后显存限制不生效。\n",
        "# HAMi 算力切分后显存限制失效\n\n如题。\n",
        "# pending\n\nrequest nvidia.com/gpucores: 100 and it does not work, the pod stays Pending.\n",
    ):
        report = diagnose_issue(ruleset, text)
        assert "core-limit-not-enforced-described" not in fired(report), text


# ---- node-feature-discovery refusing GPU Feature Discovery's labels ----------------------------------
def test_nfd_master_refusing_the_nvidia_namespace_is_named(ruleset):
    log = (
        'E0412 08:00:01.000000       1 nfd-master.go:470] Namespace "nvidia.com" is not allowed. '
        'Ignoring label "nvidia.com/gpu.product"\n'
        'E0412 08:00:01.000100       1 nfd-master.go:470] Namespace "nvidia.com" is not allowed. '
        'Ignoring label "nvidia.com/gpu.count"\n'
    )
    report = diagnose_texts(ruleset, {"nfd-master.log": log})
    assert (report.primary.rule_id, report.primary.category) == (
        "nfd-drops-nvidia-labels",
        "scheduling-other",
    )
    assert "nvidia.com/gpu.product" in report.nodes[0].findings[0].explanation


# ---- Volcano's enqueue step refusing a job ----------------------------------------------------------
def test_volcanos_queue_quota_refusal_is_a_queue_problem(ruleset):
    """The PodGroup is refused before any pod exists: not the node, not HAMi."""
    events = (
        "Events:\n"
        "  Type     Reason         Age   From     Message\n"
        "  Warning  Unschedulable  40s   volcano  0/0 tasks in gang unschedulable: pod group is "
        "not ready, 2 minAvailable\n"
        "  Normal   Unschedulable  10s   volcano  queue resource quota insufficient: "
        "insufficient nvidia.com/gpu\n"
    )
    report = diagnose_texts(ruleset, {"podgroup-describe.txt": events})
    assert (report.primary.rule_id, report.primary.category) == (
        "volcano-queue-rejects-job",
        "scheduling-other",
    )
    assert "insufficient nvidia.com/gpu" in report.primary.title


# ---- an AMD GPU asked about NVIDIA's stack ----------------------------------------------------------
def test_an_amd_gpu_stated_in_prose_comes_before_nvidias_runtime(ruleset):
    text = (
        "# Found no NVIDIA driver\n\nWe run AMD Instinct MI210 GPUs on these nodes.\n\n```\n"
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
        "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n```\n"
    )
    assert issue_verdict(ruleset, text)[:2] == ("gpu-is-amd-described", "runtime-other")
    for other in (
        "We run AMD EPYC CPUs and NVIDIA GPUs",
        "We have AMD CPU and NVIDIA GPU nodes",
        "We run AMD and NVIDIA GPUs in the same cluster",
        "我们用的是 AMD 的 CPU，GPU 是 A100",
    ):
        said = text.replace("We run AMD Instinct MI210 GPUs on these nodes.", other)
        assert issue_verdict(ruleset, said)[0] != "gpu-is-amd-described", other
    # an AMD GPU with no NVIDIA failure: HAMi schedules AMD GPUs itself
    question = "# AMD\n\nDoes HAMi support AMD GPUs? We use AMD Instinct MI300X GPUs.\n"
    assert "gpu-is-amd-described" not in fired(diagnose_issue(ruleset, question))


# ---- Docker's daemon.json --------------------------------------------------------------------------
DAEMON_RUNC = (
    '{\n    "exec-opts": ["native.cgroupdriver=systemd"],\n    "log-driver": "json-file"\n}\n'
)
DAEMON_NVIDIA = (
    '{\n    "default-runtime": "nvidia",\n    "runtimes": {\n        "nvidia": {\n'
    '            "path": "/usr/bin/nvidia-container-runtime",\n            "runtimeArgs": []\n'
    "        }\n    }\n}\n"
)
NVML_FAILS = (
    "2021/03/04 10:00:00 Loading NVML\n"
    "2021/03/04 10:00:00 Failed to initialize NVML: could not load NVML library.\n"
)


def node_running(runtime: str) -> str:
    return (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\nstatus:\n  nodeInfo:\n"
        f"    containerRuntimeVersion: {runtime}\n"
    )


def test_daemon_json_is_recognised_and_read(ruleset):
    from analyzer.facts import runtime
    from analyzer.facts.model import FactSet

    parsed = parse_texts(ruleset, {"daemon.json": DAEMON_NVIDIA})
    assert [a.kind for a in parsed.artefacts] == ["docker-daemon-config"]
    facts = FactSet()
    runtime.produce(parsed.configs, facts)
    assert facts.value("docker.default_runtime") == "nvidia"
    assert facts.value("docker.runtimes") == ["nvidia"]


def test_docker_without_a_default_nvidia_runtime_is_the_runtimes_fault(ruleset):
    files = {"daemon.json": DAEMON_RUNC, "dp.log": NVML_FAILS}
    report = diagnose_texts(ruleset, files)
    # beside the plugin's NVML failure (the primary, as with containerd's default runtime)
    assert report.primary.rule_id == "nvml-init-failed"
    runtime = [
        f for f in report.nodes[0].findings if f.rule_id == "docker-default-runtime-not-nvidia"
    ]
    assert [f.category for f in runtime] == ["runtimeclass"]
    # on a node known to run Docker, the NVML failure's own text points at daemon.json
    docker = {**files, "node.yaml": node_running("docker://20.10.7")}
    assert "restart of Docker" in diagnose_texts(ruleset, docker).nodes[0].findings[0].explanation
    # containerd's default is nvidia: that runtime starts the pods, not Docker
    ctd = '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n'
    assert "docker-default-runtime-not-nvidia" not in fired(
        diagnose_texts(ruleset, {**files, "containerd.toml": ctd})
    )
    # nvidia is the default: Docker's config is right
    assert "docker-default-runtime-not-nvidia" not in fired(
        diagnose_texts(ruleset, {"daemon.json": DAEMON_NVIDIA, "dp.log": NVML_FAILS})
    )
    # the kubelet runs containerd: Docker's config does not start the pods
    files["node.yaml"] = node_running("containerd://1.7.2")
    assert "docker-default-runtime-not-nvidia" not in fired(diagnose_texts(ruleset, files))


def test_docker_set_up_while_the_kubelet_runs_containerd(ruleset):
    files = {
        "daemon.json": DAEMON_NVIDIA,
        "dp.log": NVML_FAILS,
        "node.yaml": node_running("containerd://1.6.8"),
    }
    assert "docker-nvidia-but-kubelet-runs-other-runtime" in fired(diagnose_texts(ruleset, files))
    files["node.yaml"] = node_running("docker://20.10.7")
    assert "docker-nvidia-but-kubelet-runs-other-runtime" not in fired(
        diagnose_texts(ruleset, files)
    )


# ---- HAMi-core's reading of the card: less free than the limit allows -------------------------------
def test_a_card_with_less_free_than_the_limit_allows_is_named(ruleset):
    """An allocation under the vGPU limit fails on the card itself: the limit is larger than the
    card (memory oversubscribed) or other processes hold the card."""
    over = (
        "[HAMI-core Msg(9:1:memory.c:512)]: orig free=536870912 total=16106127360 "
        "limit=32212254720 usage=1073741824\n"
        "[HAMI-core ERROR (pid:9 thread=1 allocator.c:115)]: cuMemoryAllocate failed res=2\n"
    )
    report = diagnose_texts(ruleset, {"train.log": over})
    assert (report.primary.rule_id, report.primary.category) == (
        "hami-core-card-short-of-limit",
        "runtime-other",
    )
    assert "512 MiB free" in report.primary.title
    assert "oversubscribed" in report.nodes[0].findings[0].explanation
    # other processes hold a card the limit fits in
    held = over.replace("limit=32212254720", "limit=8589934592")
    finding = diagnose_texts(ruleset, {"train.log": held}).nodes[0].findings[0]
    assert "Other processes hold the rest of the card" in finding.explanation
    # a card with room: HAMi-core's failure, as before
    room = held.replace("orig free=536870912", "orig free=15032385536")
    assert verdict_of(ruleset, {"train.log": room})[0] == "hami-core-failure"


# ---- Volcano's gang: a PodGroup that waits for its minAvailable pods --------------------------------
def test_volcanos_gang_waiting_is_named_and_the_queue_explains_it(ruleset):
    gang = (
        "  Warning  Unschedulable  3m  volcano  1/1 tasks in gang unschedulable: pod group is not "
        "ready, 1 Pending, 3 minAvailable\n"
    )
    report = diagnose_texts(ruleset, {"events.txt": gang})
    assert (report.primary.rule_id, report.primary.category) == (
        "volcano-gang-not-ready",
        "scheduling-other",
    )
    assert "(1/1 tasks pending, 3 needed together)" in report.primary.title
    # the queue refusing the job is why its gang waits
    queued = gang + "  Normal   Unschedulable  1m  volcano  queue resource quota insufficient\n"
    report = diagnose_texts(ruleset, {"events.txt": queued})
    assert report.primary.rule_id == "volcano-queue-rejects-job"
    assert [c.rule_id for c in report.nodes[0].findings[0].consequences] == [
        "volcano-gang-not-ready"
    ]


# ---- the NVIDIA hook under crun, and the operator's operands paused ---------------------------------
def test_the_nvidia_hook_failing_under_crun_is_a_runtime_fault(ruleset):
    """crun words a failed hook "error executing hook `PATH` (exit code: N)", without its output."""
    describe = (
        "Events:\n  Type     Reason  Age  From     Message\n"
        "  Warning  Failed  2m   kubelet  Error: container create failed: error executing hook "
        "`/usr/bin/nvidia-container-runtime-hook` (exit code: 1)\n"
    )
    report = diagnose_texts(ruleset, {"pod-describe.txt": describe})
    assert (report.primary.rule_id, report.primary.category) == (
        "nvidia-hook-fails-under-crun",
        "runtime-other",
    )
    other = describe.replace("/usr/bin/nvidia-container-runtime-hook", "/usr/libexec/my-hook")
    assert verdict_of(ruleset, {"pod-describe.txt": other})[0] != "nvidia-hook-fails-under-crun"


def test_operands_paused_for_a_driver_upgrade_leave_no_device_plugin(ruleset):
    labels = (
        "                    nvidia.com/gpu.deploy.dcgm=paused-for-driver-upgrade\n"
        "                    nvidia.com/gpu.deploy.device-plugin=paused-for-driver-upgrade\n"
        "                    nvidia.com/gpu.deploy.driver=true\n"
    )
    node = (
        "kind: Node\nmetadata:\n  name: gpu-1\n  labels:\n"
        "    nvidia.com/gpu.deploy.device-plugin: paused-for-mig-change\n"
    )
    for files in ({"labels.txt": labels}, {"node.yaml": node}):
        rule, category, _ = verdict_of(ruleset, files)
        assert (rule, category) == ("gpu-operator-operands-paused", "no-device-plugin-pod"), files


# ---- a k3s version as the kube-scheduler image's tag ------------------------------------------------
def test_a_build_suffix_in_the_kube_scheduler_tag_stops_hami_scheduler(ruleset):
    event = (
        "  Warning  InspectFailed  8s (x5 over 50s)  kubelet  Failed to apply default image tag "
        '"registry.k8s.io/kube-scheduler:v1.29.3+rke2r1": couldn\'t parse image name '
        '"registry.k8s.io/kube-scheduler:v1.29.3+rke2r1": invalid reference format\n'
    )
    report = diagnose_texts(ruleset, {"events.txt": event})
    assert (report.primary.rule_id, report.primary.category) == (
        "hami-kube-scheduler-tag-has-build-suffix",
        "scheduling-other",
    )
    assert "v1.29.3+rke2r1" in report.primary.title


HEALTHY_NODE = (
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\nstatus:\n  allocatable:\n"
    '    nvidia.com/gpu: "10"\n  capacity:\n    nvidia.com/gpu: "10"\n  nodeInfo:\n'
    "    containerRuntimeVersion: {runtime}\n"
)


def test_a_node_offering_gpus_is_not_convicted_by_its_daemon_json(ruleset):
    """Review: a daemon.json beside a node whose plugin registered GPUs convicted a healthy node."""
    for daemon, runtime in (
        (DAEMON_RUNC, "docker://20.10.7"),
        (DAEMON_NVIDIA, "containerd://1.6.8"),
    ):
        files = {"daemon.json": daemon, "node.yaml": HEALTHY_NODE.format(runtime=runtime)}
        found = fired(diagnose_texts(ruleset, files))
        assert not found & {
            "docker-default-runtime-not-nvidia",
            "docker-nvidia-but-kubelet-runs-other-runtime",
        }, runtime


def test_daemon_json_pastes_read_whole_and_last(ruleset):
    """Review: a fragment without its braces was read as a whole file (no default: runc); of two
    pastes the first was taken; a log pasted right under it was not scanned."""
    fragment = (
        '# NVML\n\n```json\n    "runtimes": {\n        "nvidia": {"path": '
        '"/usr/bin/nvidia-container-runtime", "runtimeArgs": []}\n    }\n```\n'
    )
    assert "docker-default-runtime-not-nvidia" not in fired(diagnose_issue(ruleset, fragment))
    changed = (
        "# NVML\n\nBefore, my daemon.json was\n\n```\n" + DAEMON_RUNC + "```\n\nI changed it to\n\n"
        "```\n" + DAEMON_NVIDIA + "```\n"
    )
    assert "docker-default-runtime-not-nvidia" not in fired(diagnose_issue(ruleset, changed))
    mixed = "$ cat /etc/docker/daemon.json\n" + DAEMON_NVIDIA + "$ kubectl logs dp-1\n" + NVML_FAILS
    assert verdict_of(ruleset, {"paste.txt": mixed})[0] == "nvml-init-failed"
