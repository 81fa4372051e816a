"""Hundred-and-forty-fifth and later measurements (issue 25, session 52): blind sets of unseen real
cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import verdict_of


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
