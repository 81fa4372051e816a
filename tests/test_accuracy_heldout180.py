"""Hundred-and-eightieth and later measurements (issue 25, session 54): blind sets of unseen real
cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

import pytest

from conftest import diagnose_texts, fired, issue_verdict, verdict_of

LOST = "Failed to initialize NVML: Unknown Error\n"


# ---- the kubelet's static CPU manager rewrites a GPU container's device cgroup ------------------------
def test_a_static_cpu_manager_explains_a_container_losing_its_gpu(ruleset):
    """Low while nothing shows whether the device plugin passes the device specs (HAMi's does by
    default); medium once its log shows it does not."""
    issue = (
        "# nvidia-smi in the pod fails a few seconds after start\n\n"
        "Our kubelets run with `--cpu-manager-policy=static --reserved-cpus=0-1`. The pod requests\n"
        'cpu: "4" and nvidia.com/gpu: 1.\n\n'
        "```\n$ kubectl exec trainer-0 -- nvidia-smi\n" + LOST + "```\n"
    )
    assert issue_verdict(ruleset, issue) == (
        "static-cpu-manager-drops-gpu-devices",
        "runtime-other",
        "low",
    )
    plugin = (
        "\n```\n"
        'I0303 09:00:00.000001 1 main.go:267] "Starting NVIDIA Device Plugin" version="v0.17.1"\n'
        "I0303 09:00:00.000002 1 main.go:270] Starting FS watcher for /var/lib/kubelet/device-plugins\n"
        "```\n"
    )
    assert issue_verdict(ruleset, issue + plugin) == (
        "static-cpu-manager-drops-gpu-devices",
        "runtime-other",
        "medium",
    )


def test_the_kubelets_own_lines_name_the_static_policy(ruleset):
    files = {
        "kubelet.log": (
            "Mar 03 09:10:11 gpu-7 kubelet[2211]: I0303 09:10:11.204417    2211 cpu_manager.go:214] "
            '"Starting CPU manager" policy="static"\n'
        ),
        "app.log": LOST,
    }
    assert verdict_of(ruleset, files)[0] == "static-cpu-manager-drops-gpu-devices"


def test_a_plugin_passing_the_device_specs_leaves_the_daemon_reload_reading(ruleset):
    """With the device nodes in the spec, the CPU manager's rewrite keeps them: the generic
    reading (a systemd daemon-reload) stays."""
    files = {
        "kubelet-config.yaml": "kind: KubeletConfiguration\ncpuManagerPolicy: static\n",
        "device-plugin.log": (
            'I0303 09:00:00.000001 1 flags.go:36] FLAG: --pass-device-specs="true"\n'
        ),
        "app.log": LOST,
    }
    report_rules = verdict_of(ruleset, files)
    assert report_rules[0] == "container-nvml-unknown-error"


def test_a_policy_other_than_static_is_no_lead(ruleset):
    files = {
        "kubelet-config.yaml": "kind: KubeletConfiguration\ncpuManagerPolicy: none\n",
        "app.log": LOST,
    }
    assert verdict_of(ruleset, files)[0] == "container-nvml-unknown-error"


def test_the_static_policy_alone_is_no_fault(ruleset):

    files = {"kubelet-config.yaml": "kind: KubeletConfiguration\ncpuManagerPolicy: static\n"}
    assert "static-cpu-manager-drops-gpu-devices" not in fired(diagnose_texts(ruleset, files))


# ---- a workload that finds no NVIDIA driver in its container ---------------------------------------
OLLAMA_EMPTY = (
    'time=2025-06-02T08:00:01.000Z level=INFO source=gpu.go:204 msg="looking for compatible GPUs"\n'
    'time=2025-06-02T08:00:01.001Z level=DEBUG source=gpu.go:491 msg="gpu library search" '
    'globs="[/usr/local/nvidia/lib64/libcuda.so** /usr/lib*/libcuda.so*]"\n'
    'time=2025-06-02T08:00:01.002Z level=DEBUG source=gpu.go:525 msg="discovered GPU libraries" '
    "paths=[]\n"
)


def test_ollama_finding_no_driver_library_is_a_container_without_the_nvidia_runtime(ruleset):
    assert verdict_of(ruleset, {"ollama.log": OLLAMA_EMPTY}) == (
        "workload-got-no-nvidia-driver",
        "runtimeclass",
        "low",
    )


def test_a_shell_without_nvidia_smi_in_the_pod_reads_the_same(ruleset):
    issue = (
        "# GPU not used by the pod\n\n"
        "```\n$ kubectl logs deploy/llm-server\n"
        "starting server...\n"
        "/app/start.sh: line 12: nvidia-smi: command not found\n"
        "falling back to CPU\n```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == ("workload-got-no-nvidia-driver", "runtimeclass")


def test_ollama_that_found_nvidias_library_is_no_such_case(ruleset):
    """Ollama's ROCm search is empty on every NVIDIA node; what matters is the NVIDIA one."""
    log = (
        'time=2024-03-01T10:00:00.000Z level=INFO source=gpu.go:265 msg="Searching for GPU '
        'management library libnvidia-ml.so"\n'
        'time=2024-03-01T10:00:00.001Z level=INFO source=gpu.go:311 msg="Discovered GPU libraries: '
        '[/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15]"\n'
        'time=2024-03-01T10:00:00.002Z level=INFO source=gpu.go:265 msg="Searching for GPU '
        'management library librocm_smi64.so"\n'
        'time=2024-03-01T10:00:00.003Z level=INFO source=gpu.go:311 msg="Discovered GPU libraries: []"\n'
    )
    assert verdict_of(ruleset, {"ollama.log": log})[0] != "workload-got-no-nvidia-driver"


def test_a_pod_run_with_the_nvidia_runtime_class_is_not_read_as_missing_it(ruleset):
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: llm-0\n  namespace: ai\nspec:\n"
        "  runtimeClassName: nvidia\n  containers:\n  - name: llm\n    image: example/llm:1\n"
    )
    files = {"pod.yaml": pod, "ollama.log": OLLAMA_EMPTY}
    assert verdict_of(ruleset, files)[0] != "workload-got-no-nvidia-driver"


# ---- the owner-references admission plugin: a writer that may not delete what it owns --------------
def test_an_owner_reference_refused_for_want_of_delete_is_an_rbac_gap(ruleset):
    log = (
        "E0601 10:00:00.000000       1 main.go:80] failed to update NodeFeature object "
        '"nvidia-features-for-gpu-9": nodefeatures.nfd.k8s-sigs.io "nvidia-features-for-gpu-9" '
        "is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>\n"
    )
    assert verdict_of(ruleset, {"gpu-feature-discovery.log": log}) == (
        "owner-reference-permission-missing",
        "rbac-patch-forbidden",
        "medium",
    )


def test_a_plain_rbac_denial_keeps_its_own_reading(ruleset):
    log = (
        'E0601 10:00:00.000000       1 main.go:80] nodes "gpu-9" is forbidden: User '
        '"system:serviceaccount:gpu-operator:gpu-operator" cannot patch resource "nodes" in API '
        'group "" at the cluster scope\n'
    )
    assert verdict_of(ruleset, {"gpu-operator.log": log})[0] == "gpu-stack-rbac-forbidden"


# ---- pod security refusing a GPU component beside the device plugin, as `-o yaml` folds it ---------
def test_a_folded_scc_refusal_of_the_mps_control_daemon_is_read(ruleset):
    status = (
        "status:\n"
        "  conditions:\n"
        '  - lastTransitionTime: "2026-01-05T10:00:00Z"\n'
        '    message: \'pods "mps-control-daemon-5e2b-77c1-6d9f8b7c5-"\n'
        "      is forbidden: unable to validate against any security context constraint: [provider\n"
        "      restricted-v2: .spec.hostPID: Invalid value: true: Host PID is not allowed to be used,\n"
        '      provider restricted-v2: .spec.volumes[0]: Invalid value: "hostPath": hostPath volumes\n'
        "      are not allowed to be used]'\n"
        "    reason: FailedCreate\n"
        "    type: ReplicaFailure\n"
    )
    assert verdict_of(ruleset, {"deployment-status.txt": status}) == (
        "gpu-component-pods-forbidden-by-pod-security",
        "runtime-other",
        "medium",
    )


def test_gpu_feature_discovery_refused_by_pod_security_admission(ruleset):
    events = (
        "Warning  FailedCreate  2m (x15 over 4m)  daemonset-controller  Error creating: pods "
        '"gpu-feature-discovery-" is forbidden: violates PodSecurity "baseline:latest": hostPath '
        'volumes (volumes "host-sys")\n'
    )
    assert verdict_of(ruleset, {"events.txt": events})[0] == (
        "gpu-component-pods-forbidden-by-pod-security"
    )


def test_a_reporter_saying_their_cpu_pods_lack_nvidia_smi_is_no_such_case(ruleset):
    """Prose that quotes the shell's error about pods that use no GPU: they have no driver by
    design (a later blind set's one wrong line)."""
    issue = (
        "# worker crashes at start\n\n"
        "None of the pods I launch use the GPUs. Running `nvidia-smi` in one gives "
        "`bash: nvidia-smi: command not found`.\n"
    )
    assert issue_verdict(ruleset, issue)[0] != "workload-got-no-nvidia-driver"


def test_a_pod_that_asks_for_no_gpu_is_not_read_as_missing_the_runtime(ruleset):
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etl-0\n  namespace: data\nspec:\n"
        "  containers:\n  - name: etl\n    image: example/etl:1\n"
        "    resources:\n      limits:\n        cpu: '2'\n"
    )
    files = {"pod.yaml": pod, "session.txt": "$ nvidia-smi\nbash: nvidia-smi: command not found\n"}
    assert verdict_of(ruleset, files)[0] != "workload-got-no-nvidia-driver"


# ---- the review's reproducers, made up anew ---------------------------------------------------------
def test_the_memory_managers_static_policy_is_not_the_cpu_managers(ruleset):
    kubelet = (
        'I0601 10:00:00.000001    2211 cpu_manager.go:214] "Starting CPU manager" policy="none"\n'
        'I0601 10:00:05.000001    2211 policy_static.go:110] "Allocate" pod="ml/train-0" '
        'containerName="cuda"\n'
    )
    files = {"kubelet.log": kubelet, "app.log": LOST}
    assert verdict_of(ruleset, files)[0] == "container-nvml-unknown-error"


def test_the_device_plugins_own_nvml_failure_is_not_explained_by_the_cpu_manager(ruleset):
    files = {
        "kubelet.log": (
            'I0601 10:00:00.000001    2211 cpu_manager.go:214] "Starting CPU manager" '
            'policy="static"\n'
        ),
        "device-plugin.log": (
            "I0601 10:00:03.000001       1 main.go:271] Failed to initialize NVML: "
            "ERROR_LIBRARY_NOT_FOUND.\n"
        ),
    }
    assert verdict_of(ruleset, files)[0] == "nvml-init-failed"


@pytest.mark.parametrize(
    "line",
    [
        'time=2024-05-01T10:00:00.000Z level=INFO source=amd_linux.go:300 msg="amdgpu is supported" '
        "gpu=0 gpu_type=gfx1100",
        'time=2025-06-02T08:00:02.000Z level=INFO source=types.go:130 msg="inference compute" '
        "id=0 library=rocm compute=gfx1100 name=1002:744c",
        'time=2024-05-01T10:00:00.000Z level=WARN source=gpu.go:220 msg="CUDA GPU is too old. '
        'Falling back to CPU mode. Compute Capability detected: 3.5"',
    ],
)
def test_ollama_that_saw_a_gpu_or_says_why_it_cannot_use_it_is_no_such_case(ruleset, line):
    assert verdict_of(ruleset, {"ollama.log": OLLAMA_EMPTY + line + "\n"})[0] != (
        "workload-got-no-nvidia-driver"
    )


def test_ollamas_own_bundled_cudart_does_not_hide_an_empty_driver_search(ruleset):
    log = OLLAMA_EMPTY + (
        'time=2025-06-02T08:00:01.003Z level=DEBUG source=gpu.go:525 msg="discovered GPU '
        'libraries" paths=[/usr/lib/ollama/cuda_v12/libcudart.so.12.4.127]\n'
    )
    assert verdict_of(ruleset, {"ollama.log": log})[0] == "workload-got-no-nvidia-driver"


def test_ollamas_newer_cpu_only_start_reads_the_same(ruleset):
    log = (
        'time=2025-11-02T09:00:00.000Z level=INFO source=types.go:60 msg="inference compute" '
        'id=cpu library=cpu compute="" name=cpu description=cpu total="31.3 GiB"\n'
    )
    assert verdict_of(ruleset, {"ollama.log": log})[0] == "workload-got-no-nvidia-driver"


def test_a_refused_block_owner_deletion_names_the_owners_finalizers(ruleset):

    log = (
        'E0721 10:00:00.000000       1 main.go:91] "error while running" err="failed to create '
        'NodeFeature object \\"gpu-3-x\\": nodefeatures.nfd.k8s-sigs.io \\"gpu-3-x\\" is forbidden: '
        "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set "
        'finalizers on: , <nil>"\n'
    )
    report = diagnose_texts(ruleset, {"nfd-worker.log": log})
    primary = report.primary
    assert primary.rule_id == "owner-reference-permission-missing"
    assert "finalizers on the owner" in primary.title and "may not delete" not in primary.title


def test_nvidias_chart_feature_discovery_refused_is_not_the_plugin_never_starting(ruleset):
    events = (
        "Warning  FailedCreate  1m  daemonset-controller  Error creating: pods "
        '"nvdp-nvidia-device-plugin-gpu-feature-discovery-" is forbidden: violates PodSecurity '
        '"baseline:latest": hostPath volumes (volumes "host-sys")\n'
    )
    assert verdict_of(ruleset, {"events.txt": events})[0] == (
        "gpu-component-pods-forbidden-by-pod-security"
    )


def test_an_event_list_in_yaml_is_read_as_events_not_as_the_object_they_name(ruleset):
    events = (
        "apiVersion: v1\nitems:\n- apiVersion: v1\n  involvedObject:\n    kind: ReplicaSet\n"
        "    name: hami-scheduler-5d8\n    namespace: kube-system\n  kind: Event\n"
        '  message: \'Error creating: pods "hami-scheduler-5d8-" is forbidden: violates PodSecurity\n'
        '    "restricted:latest": runAsNonRoot != true (pod or container "kube-scheduler" must\n'
        "    set securityContext.runAsNonRoot=true)'\n"
        '  reason: FailedCreate\n  type: Warning\nkind: List\nmetadata:\n  resourceVersion: ""\n'
    )

    report = diagnose_texts(ruleset, {"events.yaml": events})
    assert [i.kind for i in report.inventory] == ["events"]
    assert report.primary.rule_id == "gpu-component-pods-forbidden-by-pod-security"


# ---- node autoscalers that add no GPU node -----------------------------------------------------------
def test_a_gpu_group_scaled_to_zero_without_its_gpu_tag_is_the_autoscalers_template(ruleset):
    describe = (
        "Events:\n"
        "  Type     Reason             Age   From                Message\n"
        "  ----     ------             ----  ----                -------\n"
        "  Warning  FailedScheduling   45s   default-scheduler   0/3 nodes are available: "
        "3 Insufficient nvidia.com/gpu.\n"
        "  Normal   NotTriggerScaleUp  40s   cluster-autoscaler  pod didn't trigger scale-up: "
        "1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector\n"
    )
    assert verdict_of(ruleset, {"describe.txt": describe}) == (
        "node-autoscaler-cannot-add-a-gpu-node",
        "scheduling-other",
        "medium",
    )


def test_karpenter_with_no_gpu_instance_type_in_its_nodepool(ruleset):
    log = (
        '{"level":"ERROR","time":"2025-09-01T08:00:00.000Z","logger":"controller.provisioner",'
        '"message":"Could not schedule pod, incompatible with nodepool \\"gpu\\", daemonset '
        'overhead={\\"cpu\\":\\"200m\\"}, no instance type satisfied resources {\\"cpu\\":\\"4\\",'
        '\\"nvidia.com/gpu\\":\\"2\\"} and requirements karpenter.k8s.aws/instance-family In [g4dn] '
        '(no instance type has enough resources)"}\n'
    )
    report = diagnose_texts(ruleset, {"karpenter.log": log})
    assert report.primary.rule_id == "node-autoscaler-cannot-add-a-gpu-node"
    (finding,) = [f for f in report.nodes[0].findings if f.rule_id == report.primary.rule_id]
    assert 'nodepool "gpu"' in finding.explanation  # quoted as Karpenter wrote it, unescaped


def test_a_karpenter_node_that_never_advertised_its_gpus_has_no_plugin(ruleset):
    log = (
        "2025-03-01T10:00:00.000Z\tINFO\tcontroller.inflightchecks\tInflight check failed for node, "
        'Expected resource "nvidia.com/gpu" didn\'t register on the node\t{"node": "ip-10-0-1-2"}\n'
    )
    assert verdict_of(ruleset, {"karpenter.log": log}) == (
        "karpenter-gpu-node-without-plugin",
        "no-device-plugin-pod",
        "medium",
    )


def test_a_scale_up_that_happened_is_no_such_case(ruleset):
    events = (
        "  Normal  TriggeredScaleUp  2m  cluster-autoscaler  pod triggered scale-up: "
        "[{gpu-nodes 0->1 (max: 4)}]\n"
    )
    assert "node-autoscaler-cannot-add-a-gpu-node" not in fired(
        diagnose_texts(ruleset, {"events.txt": events})
    )


# ---- the kernel driver refusing a GPU it does not support ------------------------------------------
def test_a_gpu_the_driver_release_does_not_support_is_the_drivers_fault(ruleset):
    dmesg = (
        "[  301.220011] NVRM: The NVIDIA GPU 0000:0b:00.0 (PCI ID: 10de:2bb5)\n"
        "               NVRM: installed in this system is not supported by the\n"
        "               NVRM: NVIDIA 535.183.01 driver release.\n"
        "[  301.220090] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
        "[  301.220091] NVRM: None of the NVIDIA devices were initialized.\n"
    )
    assert verdict_of(ruleset, {"dmesg.txt": dmesg})[0] == "driver-does-not-support-gpu"


# ---- the GPU metrics exporter and containers started before the driver -------------------------------
def test_dcgm_skipping_profiling_metrics_is_normal(ruleset):
    log = (
        'time=2025-02-03T10:00:00.100Z level=INFO msg="Not collecting DCP metrics: This request is '
        'serviced by a module of DCGM that is not currently loaded"\n'
        "time=2025-02-03T10:00:00.101Z level=WARN msg=\"Skipping line 19 ('DCGM_FI_PROF_DRAM_ACTIVE'): "
        'metric not enabled"\n'
    )
    report = diagnose_texts(ruleset, {"dcgm-exporter.log": log})
    assert "dcgm-profiling-metrics-unsupported-is-normal" in fired(report)
    assert report.primary.category in ("healthy", "inconclusive")


def test_dcgm_without_its_profiling_module_is_the_images_fault(ruleset):
    log = (
        "Failed to load module 8 - dlopen(libdcgmmoduleprofiling.so.4) returned: "
        "libdcgmmoduleprofiling.so.4: cannot open shared object file: No such file or directory\n"
        'time=2025-02-03T10:00:00.100Z level=INFO msg="Not collecting DCP metrics: This request is '
        'serviced by a module of DCGM that is not currently loaded"\n'
    )
    assert verdict_of(ruleset, {"dcgm-exporter.log": log})[:2] == (
        "dcgm-profiling-module-missing",
        "runtime-other",
    )


def test_a_dcgm_api_version_mismatch(ruleset):
    log = 'time="2023-03-01T09:00:00Z" level=fatal msg="Error getting device busid: API version mismatch"\n'
    assert verdict_of(ruleset, {"dcgm-exporter.log": log})[0] == "dcgm-exporter-version-mismatch"


def test_the_exporter_on_gke_is_not_read_as_a_missing_runtime_class(ruleset):
    issue = (
        "# dcgm-exporter on our GKE cluster cannot find NVML\n\n"
        "```\n"
        'time=2025-07-11T17:48:10.249Z level=ERROR msg="Cannot init NVML library; err: '
        'ERROR_LIBRARY_NOT_FOUND"\n```\n'
    )
    assert issue_verdict(ruleset, issue)[:2] == (
        "dcgm-exporter-cannot-load-nvml-on-gke",
        "plugin-crash-nvml",
    )


def test_a_container_run_before_the_driver_was_loaded(ruleset):
    log = (
        "nvidia driver modules are not yet loaded, invoking /usr/local/bin/runc directly\n"
        "Started host engine version 4.4.2 using port number: 5555\n"
    )
    assert verdict_of(ruleset, {"nv-hostengine.log": log}) == (
        "container-started-before-the-driver",
        "runtime-other",
        "medium",
    )


def test_a_gpu_without_gsp_under_the_open_modules_as_dmesg_wraps_it(ruleset):
    dmesg = (
        "[    4.101122] NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:1db4)\n"
        "               NVRM: installed in this system is not supported by open\n"
        "               NVRM: nvidia.ko because it does not include the required GPU\n"
        "               NVRM: System Processor (GSP).\n"
    )
    report = diagnose_texts(ruleset, {"dmesg.txt": dmesg})
    assert report.primary.rule_id == "driver-does-not-support-gpu"
    assert "without GSP" in report.primary.title


def test_karpenter_refusing_for_a_taint_says_so(ruleset):
    events = (
        "  Warning  FailedScheduling  2m  karpenter  Failed to schedule pod, incompatible with "
        'nodepool "gpu", daemonset overhead={"cpu":"200m"}, did not tolerate taint '
        "(taint=nvidia.com/gpu=true:NoSchedule)\n"
    )
    report = diagnose_texts(ruleset, {"events.txt": events})
    assert report.primary.rule_id == "node-autoscaler-cannot-add-a-gpu-node"
    assert "taint" in report.primary.title


def test_a_healthy_deployment_probing_for_the_nvml_error_is_no_such_error(ruleset):
    """A liveness probe that greps for the error is not the error (Deployments' specs are not
    searched for error lines)."""
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: trainer\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: cuda\n        livenessProbe:\n          exec:\n"
        "            command: [sh, -c, 'nvidia-smi 2>&1 | grep -q \"Failed to initialize NVML: "
        "Unknown Error\" && exit 1 || exit 0']\n"
    )
    assert "container-nvml-unknown-error" not in fired(
        diagnose_texts(ruleset, {"deployment.yaml": deployment})
    )


def test_the_driver_containers_own_wrapper_line_is_expected(ruleset):
    """The driver container starts before the module it installs: the wrapper's line in its own
    log is no fault (a later blind set's reading)."""
    session = (
        "# kubectl -n gpu-operator logs nvidia-driver-daemonset-7xk2p -f\n"
        "nvidia driver modules are not yet loaded, invoking runc directly\n"
    )
    assert "container-started-before-the-driver" not in fired(
        diagnose_texts(ruleset, {"session.txt": session})
    )


def test_a_gpu_pod_without_its_driver_after_a_reboot(ruleset):
    issue = (
        "# GPU pod broken after the node rebooted\n\n"
        "Since the node reboot our pod cannot run nvidia-smi:\n\n"
        "```\n$ kubectl exec trainer-0 -- sh -c nvidia-smi\n"
        "sh: 1: nvidia-smi: not found\n```\n"
    )
    assert issue_verdict(ruleset, issue)[:2] == (
        "gpu-pod-started-before-the-gpu-stack-after-reboot",
        "runtime-other",
    )
