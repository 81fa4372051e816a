"""Hundred-and-twenty-third to hundred-and-twenty-sixth measurements (issue 25, session 50): blind
sets of unseen real cases and the classes they left, each checked on made-up inputs (none copied
from a real case)."""

from __future__ import annotations

from conftest import issue_verdict, verdict_of

HOOK = (
    "Error: failed to create containerd task: failed to create shim task: OCI runtime create "
    "failed: runc create failed: unable to start container process: error during container init: "
    "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected "
    "mode as 'legacy' nvidia-container-cli: initialization error: nvml error: driver/library "
    "version mismatch: unknown"
)


def _describe(name: str, namespace: str, event: str) -> str:
    return (
        f"Name:         {name}\nNamespace:    {namespace}\nStatus:       Pending\nEvents:\n"
        "  Type     Reason  Age   From     Message\n  ----     ------  ----  ----     -------\n"
        f"  Warning  Failed  20s   kubelet  {event}\n"
    )


# ---- the runtime hook's NVML mismatch: a workload that cannot start, not a plugin crash -----------
def test_the_hooks_driver_mismatch_in_a_workloads_events_is_the_runtimes(ruleset):
    files = {"pod-describe.txt": _describe("trainer-0", "research", HOOK)}
    assert verdict_of(ruleset, files)[:2] == ("runtime-hook-nvml-driver-mismatch", "runtime-other")


def test_the_same_line_in_the_device_plugins_pod_is_the_plugins_crash(ruleset):
    for name in ("hami-device-plugin-x7k2p", "nvidia-device-plugin-daemonset-4qz8m"):
        files = {"pod-describe.txt": _describe(name, "kube-system", HOOK)}
        assert verdict_of(ruleset, files)[:2] == ("nvml-driver-mismatch", "plugin-crash-nvml")


def test_the_plugins_own_nvml_mismatch_stays_the_plugins(ruleset):
    log = (
        "I1203 10:00:01.000000       1 main.go:44] Starting NVIDIA Device Plugin\n"
        "E1203 10:00:01.200000       1 main.go:132] Failed to initialize NVML: Driver/library "
        "version mismatch\n"
    )
    assert verdict_of(ruleset, {"device-plugin.log": log})[:2] == (
        "nvml-driver-mismatch",
        "plugin-crash-nvml",
    )


# ---- a kubelet of a platform's own that wants its scheduler's GPU decision -------------------------
def _rejected(message: str) -> dict[str, str]:
    return {
        "pod-describe.txt": (
            "Name:         infer-5d8f\nNamespace:    default\nStatus:       Failed\n"
            "Reason:       UnexpectedAdmissionError\nEvents:\n"
            "  Type     Reason                    Age  From     Message\n"
            "  ----     ------                    ---  ----     -------\n"
            f"  Warning  UnexpectedAdmissionError  1m   kubelet  {message}\n"
        )
    }


def test_a_kubelet_waiting_for_a_schedulers_gpu_decision_is_said_so_at_low(ruleset):
    for message in (
        "Update plugin resources failed due to pod 11111111-2222-3333-4444-555555555555 missing "
        "annotation for gpu allocation decision from scheduler, which is unexpected.",
        "Allocate failed due to pod 11111111-2222-3333-4444-555555555555 container init-weights "
        "unable to find GPU device allocation by scheduler, which is unexpected",
    ):
        assert verdict_of(ruleset, _rejected(message)) == (
            "kubelet-wants-a-gpu-decision-from-its-own-scheduler",
            "scheduling-other",
            "low",
        ), message


def test_a_device_plugins_own_allocate_error_stays_the_plugins(ruleset):
    message = (
        "Allocate failed due to rpc error: code = Unknown desc = no binding pod found on node "
        "gpu-3, which is unexpected"
    )
    assert verdict_of(ruleset, _rejected(message))[0] == "allocate-failed-at-admission"


# ---- the driver container's apt: a repository signed with a key the image lacks -------------------
def test_an_apt_repository_no_longer_signed_stops_the_driver_container(ruleset):
    log = (
        "Installing NVIDIA driver kernel modules...\n"
        "Updating the package cache...\n"
        "W: GPG error: https://repo.example.com/cuda/ubuntu2204/x86_64  InRelease: The following "
        "signatures couldn't be verified because the public key is not available: "
        "NO_PUBKEY 0123456789ABCDEF\n"
        "E: The repository 'https://repo.example.com/cuda/ubuntu2204/x86_64  InRelease' is no "
        "longer signed.\n"
    )
    assert verdict_of(ruleset, {"nvidia-driver-ctr.log": log})[:2] == (
        "gpu-operator-driver-package-repos-unreachable",
        "runtime-other",
    )


# ---- the operator's driver pod idle beside a host driver: expected --------------------------------
def test_a_driver_pod_idle_beside_a_host_driver_answers_the_question(ruleset):
    body = (
        "# nvidia-driver-daemonset pod stays in Init\n\n"
        "All operator pods run except the driver pod. Its init container says\n\n"
        "NVIDIA GPU driver is already pre-installed on the node, will not proceed with the "
        "containerized driver installation. This pod can be disabled through "
        "'nvidia.com/gpu.deploy.driver=false' node label.\n\nand a CUDA pod runs nvidia-smi fine.\n"
    )
    assert issue_verdict(ruleset, body)[1:] == ("healthy", "medium")


def test_the_old_driver_managers_refcount_line_is_no_such_answer(ruleset):
    body = (
        "# nvidia-driver-daemonset pod restarts\n\n"
        "```\nnvidia driver module is already loaded with refcount 12\n```\n"
    )
    assert issue_verdict(ruleset, body)[1] != "healthy"


# ---- a compute limit forced in the pasted pod's own env is no default policy -----------------------
ISSUE_BURN = (
    "# gpucores not working\n\nnvidia.com/gpucores: 20 is set, but GPU-Util still reaches 100%.\n"
)


def test_a_core_policy_forced_in_the_pods_env_is_no_default_policy(ruleset):
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: burn\nspec:\n  containers:\n"
        "  - name: c\n    image: burner\n    env:\n    - name: GPU_CORE_UTILIZATION_POLICY\n"
        "      value: force\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
        "        nvidia.com/gpucores: 20\n"
    )
    body = f"{ISSUE_BURN}\n```yaml\n{pod}```\n"
    assert issue_verdict(ruleset, body)[:2] == (
        "core-limit-not-enforced-described",
        "runtime-other",
    )
    # without it, the default policy is the answer
    default = body.replace("GPU_CORE_UTILIZATION_POLICY", "SOME_OTHER_SETTING")
    assert issue_verdict(ruleset, default)[1] == "healthy"


def test_a_describes_environment_is_read_as_the_pods_env():
    from analyzer.dev.samples import pod

    describe = (
        "Name:         burn\nNamespace:    default\nContainers:\n  c:\n    Image:      burner\n"
        "    Limits:\n      nvidia.com/gpu:  1\n    Environment:\n"
        "      GPU_CORE_UTILIZATION_POLICY:  force\n      TOKEN:  <set to the key 'k' in secret 's'>\n"
        "    Mounts:\n      /dev/shm from dshm (rw)\n"
    )
    (container,) = pod(describe, "pod-describe").containers
    assert container.env == {
        "GPU_CORE_UTILIZATION_POLICY": "force",
        "TOKEN": "<set to the key 'k' in secret 's'>",
    }
    assert container.limits == {"nvidia.com/gpu": "1"}


# ---- GFD's MIG-INVALID product: the MIG layout is not in place -------------------------------------
def test_a_mig_invalid_product_label_is_a_layout_not_in_place(ruleset):
    labels = (
        '{\n  "nvidia.com/gpu.count": "0",\n  "nvidia.com/gpu.product": "NVIDIA-H100-PCIe-MIG-INVALID",\n'
        '  "nvidia.com/mig.strategy": "single"\n}\n'
    )
    assert verdict_of(ruleset, {"labels.json": labels})[:2] == (
        "mig-layout-not-in-place",
        "runtime-other",
    )
    mig = labels.replace("MIG-INVALID", "MIG-1g.12gb")
    assert verdict_of(ruleset, {"labels.json": mig})[0] != "mig-layout-not-in-place"


def test_the_kubelets_line_names_whose_container_the_hook_failed(ruleset):
    def kubelet(pod: str) -> dict[str, str]:
        line = (
            'E1203 10:00:02.000000    1234 pod_workers.go:1298] "Error syncing pod, skipping" '
            'err="failed to \\"StartContainer\\" with RunContainerError: \\"failed to create '
            f'containerd task: {HOOK}\\"" pod="{pod}" podUID=0c1d2e3f\n'
        )
        return {"kubelet.log": line}

    plugin = kubelet("kube-system/hami-device-plugin-x7k2p")
    assert verdict_of(ruleset, plugin)[:2] == ("nvml-driver-mismatch", "plugin-crash-nvml")
    for workload in ("ml/vgpu-benchmark-0", "default/hami-demo-trainer-0"):
        assert verdict_of(ruleset, kubelet(workload))[:2] == (
            "runtime-hook-nvml-driver-mismatch",
            "runtime-other",
        ), workload
