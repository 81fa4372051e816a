"""Hundred-and-forty-fifth and later measurements (issue 25, session 52): blind sets of unseen real
cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import issue_verdict, verdict_of


# ---- the DRA driver waiting for a driver that another component installs ------------------------------
def _dra_wait(root: str, contents: str) -> str:
    return (
        "create symlink: /driver-root -> /driver-root-parent/nvidia\n"
        f"2026-05-02T09:14:20Z  /driver-root ({root} on host): nvidia-smi: not found, "
        f"libnvidia-ml.so.1: not found, current contents: [{contents}].\n"
        "Check failed. Has the NVIDIA GPU driver been set up? It is expected to be installed under "
        f"NVIDIA_DRIVER_ROOT (currently set to '{root}') in the host filesystem.\n"
    )


def test_an_empty_installer_root_is_a_wait_for_the_driver_installer(ruleset):
    for root in ("/home/kubernetes/bin/nvidia/", "/run/nvidia/driver"):
        verdict = verdict_of(ruleset, {"init-container.log": _dra_wait(root, "")})
        assert verdict[:2] == (
            "dra-driver-waits-for-the-driver-installer",
            "plugin-init-toolkit-wait",
        ), root


def test_a_root_that_holds_files_but_no_driver_stays_a_wrong_root(ruleset):
    host = _dra_wait("/", "bin  boot  dev  etc  lib  usr  var")
    assert verdict_of(ruleset, {"init-container.log": host})[0] == "dra-driver-finds-no-gpu-driver"
    empty_host_root = _dra_wait("/opt/nvidia", "")
    assert verdict_of(ruleset, {"init.log": empty_host_root})[0] == "dra-driver-finds-no-gpu-driver"


# ---- the kubelet knows the resource but has lost its plugin's endpoint --------------------------------
def test_an_endpoint_missing_from_the_kubelets_cache_is_a_lost_plugin_not_a_shortage(ruleset):
    files = {
        "events.txt": (
            "  Warning  FailedScheduling  1m  default-scheduler  0/3 nodes are available: "
            "1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector.\n"
        ),
        "kubelet.log": (
            "Mar 02 10:11:12 gpu-2 kubelet[2211]: E0302 10:11:12.104411    2211 "
            "kuberuntime_manager.go:815] container start failed: CreateContainerConfigError: "
            "endpoint not found in cache for a registered resource: nvidia.com/gpu\n"
        ),
    }
    verdict = verdict_of(ruleset, files)
    assert verdict[:2] == ("kubelet-lost-device-plugin", "no-allocatable-kubelet-socket")
    cut = {"kubelet.log": files["kubelet.log"].split("a regist")[0] + "a regist\n"}
    assert verdict_of(ruleset, cut)[0] == "kubelet-lost-device-plugin"


# ---- the runtime's set-up: K3s's containerd template, nvidia-ctk's drop-in folder ---------------------
def test_k3s_stopping_on_its_containerd_template_is_the_runtimes_failure(ruleset):
    journal = (
        'Mar 03 09:00:01 edge-4 k3s[2210]: time="2024-03-03T09:00:01Z" level=info msg="Starting '
        'k3s agent v1.27.7+k3s1"\n'
        'Mar 03 09:00:02 edge-4 k3s[2210]: time="2024-03-03T09:00:02Z" level=fatal msg="template: '
        'compiled_template:88:14: executing \\"compiled_template\\" at <.SystemdCgroup>: can\'t '
        'evaluate field SystemdCgroup in type templates.ContainerdRuntimeConfig"\n'
    )
    report_rule, category, _ = verdict_of(ruleset, {"k3s-journal.txt": journal})
    assert (report_rule, category) == ("k3s-containerd-template-failed", "runtime-other")
    own = 'level=fatal msg="template: compiled_template:7: function \\"base\\" not defined"\n'
    assert verdict_of(ruleset, {"k3s.log": own})[0] == "k3s-containerd-template-failed"


def test_a_drop_in_written_where_containerd_does_not_read_is_the_runtime_class(ruleset):
    session = (
        "$ sudo nvidia-ctk runtime configure --runtime=containerd\n"
        'INFO[0000] Using CRI runtime plugin name "io.containerd.grpc.v1.cri"\n'
        "INFO[0000] Wrote updated config to /etc/containerd/config.d/99-nvidia.toml\n"
    )
    verdict = verdict_of(ruleset, {"setup.txt": session})
    assert verdict[:2] == ("nvidia-ctk-wrote-drop-in-containerd-ignores", "runtimeclass")
    fixed = session.replace("config.d/", "conf.d/")
    assert verdict_of(ruleset, {"setup.txt": fixed})[0] != verdict[0]


# ---- the DCGM exporter without the host engine it was told to use ----------------------------------
def test_an_exporter_that_cannot_reach_its_host_engine_is_no_toolkit_wait(ruleset):
    files = {
        "exporter.log": (
            'time="2023-05-02T08:00:00Z" level=info msg="Starting dcgm-exporter"\n'
            'time="2023-05-02T08:00:00Z" level=info msg="Attemping to connect to remote hostengine '
            'at localhost:5555"\n'
            'time="2023-05-02T08:00:05Z" level=fatal msg="Error connecting to nv-hostengine: Host '
            'engine connection invalid/disconnected"\n'
        ),
        "pods.txt": (
            "NAME                               READY   STATUS             RESTARTS   AGE\n"
            "nvidia-dcgm-exporter-5kq2x         0/1     CrashLoopBackOff   31         2h\n"
            "gpu-feature-discovery-8xw2l        0/1     Init:0/1           0          2h\n"
        ),
    }
    verdict = verdict_of(ruleset, files)
    assert verdict[:2] == ("dcgm-exporter-cannot-reach-hostengine", "runtime-other")


# ---- installs that never ran and drivers never installed: what four builders read --------------------
def test_a_refused_helm_install_leaves_no_plugin_pod(ruleset):
    body = (
        "# cannot install on EKS\n\n```\n$ helm install hami hami-charts/hami -n hami\n"
        "Error: INSTALLATION FAILED: chart requires kubeVersion: >= 1.18.0 which is incompatible "
        "with Kubernetes v1.31.4-eks-2d5f260\n```\n"
    )
    assert issue_verdict(ruleset, body)[:2] == (
        "helm-chart-refuses-provider-version",
        "no-device-plugin-pod",
    )


def test_gkes_failing_driver_installer_leaves_the_plugin_without_nvml(ruleset):
    listing = (
        "NAMESPACE     NAME                            READY   STATUS                  RESTARTS   AGE\n"
        "kube-system   nvidia-driver-installer-q7m2d   0/1     Init:CrashLoopBackOff   9          25m\n"
    )
    verdict = verdict_of(ruleset, {"pods.txt": listing})
    assert verdict[:2] == ("gke-driver-installer-failing", "plugin-crash-nvml")


# ---- the GPU Operator's CUDA test pod: the driver and toolkit passed, CUDA cannot run ----------------
def test_the_cuda_test_pod_failing_is_a_cuda_workload_that_cannot_run(ruleset):
    listing = (
        "NAME                                       READY   STATUS                  RESTARTS   AGE\n"
        "nvidia-container-toolkit-daemonset-7kq2w   1/1     Running                 0          20m\n"
        "nvidia-cuda-validator-w2x8p                0/1     Init:CrashLoopBackOff   6          19m\n"
    )
    verdict = verdict_of(ruleset, {"pods.txt": listing})
    assert verdict == ("gpu-operator-cuda-workload-failing", "runtime-other", "low")
    own = listing.replace("nvidia-cuda-validator-w2x8p ", "nvidia-operator-validator-w2x8p")
    assert verdict_of(ruleset, {"pods.txt": own})[0] == "gpu-operator-validation-failing"
