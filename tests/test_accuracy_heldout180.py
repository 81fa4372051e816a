"""Hundred-and-eightieth and later measurements (issue 25, session 54): blind sets of unseen real
cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import fired, issue_verdict, verdict_of

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
    from conftest import diagnose_texts

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
        "owner-reference-needs-delete-permission",
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
