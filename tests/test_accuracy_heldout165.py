"""Hundred-and-sixty-fifth and later measurements (issue 25, session 53): blind sets of unseen real
cases and the classes they left, checked on made-up inputs (none copied from a real case)."""

from __future__ import annotations

from conftest import diagnose_texts, fired, issue_verdict, verdict_of


# ---- a vendor whose resource names say neither gpu nor a device kind ----------------------------------
def test_an_iluvatar_capacity_is_a_gpu_resource_not_a_node_without_plugin(ruleset):
    describe = (
        "Name:               ix-node-3\n"
        "Capacity:\n"
        "  cpu:                        64\n"
        "  iluvatar.ai/MR-V100.vCore:  800\n"
        "  iluvatar.ai/MR-V100.vMem:   1024\n"
        "Allocatable:\n"
        "  cpu:                        64\n"
        "  iluvatar.ai/MR-V100.vCore:  800\n"
        "  iluvatar.ai/MR-V100.vMem:   1024\n"
    )
    report = diagnose_texts(ruleset, {"node-describe.txt": describe})
    assert "gpu-resource-absent-from-capacity" not in fired(report)
    # the same node without them is the case the rule is for
    bare = {
        "node-describe.txt": "Name:  ix-node-3\nCapacity:\n  cpu:  64\nAllocatable:\n  cpu:  64\n"
    }
    assert "gpu-resource-absent-from-capacity" in fired(diagnose_texts(ruleset, bare))


# ---- helm values: the upstream kube-scheduler pulled through a HAMi mirror -----------------------------
def test_a_mirrored_kube_scheduler_tag_is_no_hami_version(ruleset):
    values = (
        "global:\n"
        '  imageTag: "v2.9.0"\n'
        "scheduler:\n"
        "  kubeScheduler:\n"
        "    image:\n"
        '      registry: "registry.example.internal"\n'
        "      repository: mirrors/projecthami/kube-scheduler\n"
        '      tag: "v1.30.4"\n'
    )
    report = diagnose_texts(ruleset, {"values.yaml": values})
    assert "mixed-hami-versions" not in fired(report)
    version = report.worst.version
    assert version.range == "v2.9.0" and not version.conflicts


# ---- kind: the GPU worker's set-up ------------------------------------------------------------------
def test_nvkinds_failed_proc_driver_nvidia_patch_is_the_runtimes_failure(ruleset):
    issue = (
        "# nvkind cluster create fails\n\n"
        "```\n"
        "umount: /proc/driver/nvidia: not mounted\n"
        "F0302 11:20:33.104411  901122 main.go:45] Error: patching /proc/driver/nvidia on node "
        "'gpu-lab-worker2': running script on gpu-lab-worker2: executing command: exit status 1\n"
        "```\n"
    )
    assert issue_verdict(ruleset, issue) == (
        "kind-gpu-worker-setup-failed",
        "runtime-other",
        "medium",
    )
    driver = {"driver.log": "umount: /run/nvidia/driver/proc/driver/nvidia: not mounted\n"}
    assert verdict_of(ruleset, driver)[0] != "kind-gpu-worker-setup-failed"
    # nvkind's wrap names every step of its patch: its own NVML failure is no missing mount
    other_step = (
        "F0302 11:20:33.104411  901122 main.go:45] Error: patching /proc/driver/nvidia on node "
        "'gpu-lab-worker2': removing device nodes gpu-lab-worker2: running nvml.Init: "
        "ERROR_LIBRARY_NOT_FOUND\n"
    )
    assert "kind-gpu-worker-setup-failed" not in fired(
        diagnose_texts(ruleset, {"nvkind.txt": other_step})
    )
    # the plugin inside a worker without a GPU is the consequence
    inside = {
        "create-cluster.txt": "umount: /proc/driver/nvidia: not mounted.\n",
        "nvidia-device-plugin.log": "E0302 11:25:00.000001 1 main.go:132] error starting plugins: "
        "error creating plugin manager: unable to create plugin manager: nvml init failed: "
        "ERROR_LIBRARY_NOT_FOUND\n",
    }
    assert verdict_of(ruleset, inside)[0] == "kind-gpu-worker-setup-failed"


# ---- NVML: go-nvml's example wording is a helper pod's, not a device plugin's -------------------------
def test_unable_to_initialize_nvml_pasted_is_another_pods_runtime_class(ruleset):
    pasted = {
        "reserve.log": "while running the app: unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND\n"
    }
    assert verdict_of(ruleset, pasted) == ("other-pod-cannot-load-nvml", "runtimeclass", "low")
    plugin = {
        "plugin.log": "E0302 10:00:01.000001 1 main.go:132] error starting plugins: error creating "
        "plugin manager: unable to create plugin manager: nvml init failed: ERROR_LIBRARY_NOT_FOUND\n"
    }
    assert verdict_of(ruleset, plugin)[:2] == ("nvml-init-failed", "plugin-crash-nvml")
    quoted = '# reservation pod fails\n\nIt fails with "unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND".\n'
    assert issue_verdict(ruleset, quoted)[0] == "other-pod-cannot-load-nvml"


# ---- OpenShift / OKD: the release's Driver Toolkit image built for another kernel ---------------------
def test_a_driver_toolkit_image_for_another_kernel_is_a_driver_build_failure(ruleset):
    dtk = (
        "Running dtk-build-driver\n"
        "WARNING: broken Driver Toolkit image detected:\n"
        "- Node kernel:    5.14.0-570.30.1.el9_6.x86_64\n"
        "- Kernel package: 5.14.0-570.22.1.el9_6.x86_64\n"
        "INFO: informing nvidia-driver-ctr to fallback on entitled-build.\n"
    )
    assert verdict_of(ruleset, {"dtk.log": dtk}) == (
        "gpu-operator-dtk-kernel-mismatch",
        "runtime-other",
        "low",
    )
    driver_ctr = {
        "driver.log": "+ exec bash -x nvidia-driver init\n"
        "WARNING: broken driver toolkit detected, using entitlement-based fallback\n"
    }
    assert verdict_of(ruleset, driver_ctr)[0] == "gpu-operator-dtk-kernel-mismatch"
    operator = {
        "operator.log": "WARNING: DriverToolkit image tag missing. Version-specific fallback mode enabled.\n"
    }
    assert verdict_of(ruleset, operator)[0] == "gpu-operator-dtk-kernel-mismatch"
    no_tag = {
        "driver.log": "WARNING: RHCOS '418.94.202506121335-0' imagetag missing, using "
        "entitlement-based fallback\n"
    }
    assert verdict_of(ruleset, no_tag)[0] == "gpu-operator-dtk-kernel-mismatch"
    entitled = dtk + (
        "FATAL: failed to install elfutils-libel-devel. RHEL entitlement may be improperly deployed.\n"
    )
    assert verdict_of(ruleset, {"driver.log": entitled})[0] == "gpu-operator-driver-failed"


# ---- a describe node cut inside its Capacity -----------------------------------------------------------
def test_a_capacity_cut_at_a_key_without_its_value_says_nothing_of_gpus(ruleset):
    cut = "Name:  gpu-7\nCapacity:\n  cpu:                16\n  hugepages-2Mi:      0\n  memory:\n"
    assert "gpu-resource-absent-from-capacity" not in fired(
        diagnose_texts(ruleset, {"describe.txt": cut})
    )
    whole = cut.replace("memory:\n", "memory:  65768184Ki\n  pods:  110\n")
    assert "gpu-resource-absent-from-capacity" in fired(
        diagnose_texts(ruleset, {"describe.txt": whole})
    )


# ---- a device plugin out of inotify instances ---------------------------------------------------------
def test_a_plugin_that_cannot_create_its_watcher_is_out_of_inotify_instances(ruleset):
    rule = "device-plugin-inotify-limit-reached"
    intel = (
        "E0302 08:10:11.000001       1 manager.go:146] Failed to serve gpu.intel.com/xe: too many "
        "open files\nFailed to create watcher for /var/lib/kubelet/device-plugins/gpu.intel.com-xe.sock\n"
    )
    assert verdict_of(ruleset, {"plugin.log": intel}) == (rule, "plugin-crash-nvml", "medium")
    nvidia = (
        "E0302 08:10:11.000001 1 main.go:250] failed to create FS watcher: too many open files\n"
    )
    assert verdict_of(ruleset, {"nvidia-device-plugin.log": nvidia})[0] == rule
    watches = (
        "E0302 08:10:11.000001 1 main.go:132] failed to create FS watcher for "
        "/var/lib/kubelet/device-plugins/: no space left on device\n"
    )
    report = diagnose_texts(ruleset, {"nvidia-device-plugin.log": watches})
    assert report.worst.primary.rule_id == rule and "watches" in report.worst.primary.title
    promtail = 'level=error msg="failed to create watcher for /var/log/pods: too many open files"\n'
    assert rule not in fired(diagnose_texts(ruleset, {"notes.txt": promtail}))
    other = {"plugin.log": "Failed to serve gpu.intel.com/xe: rpc error: code = Unavailable\n"}
    assert rule not in fired(diagnose_texts(ruleset, other))


# ---- a unified-memory GPU (GB10) under NVIDIA's DRA driver ---------------------------------------------
def test_the_dra_drivers_memory_query_on_a_unified_memory_gpu(ruleset):
    dra = (
        "Error: error creating driver: error enumerating all possible devices: error enumerating "
        "allocatable devices: error visiting devices: error visiting device: error getting info for "
        "GPU 0: error getting memory info for device 0: Not Supported\n"
    )
    assert verdict_of(ruleset, {"kubelet-plugin.log": dra})[:2] == (
        "unified-memory-gpu-unsupported",
        "plugin-crash-nvml",
    )


# ---- Node Feature Discovery's worker cut off from its master ------------------------------------------
def test_an_nfd_worker_that_cannot_reach_its_master_leaves_the_node_without_operands(ruleset):
    rule = "nfd-worker-cannot-reach-master"
    grpc = (
        "W0301 09:00:26.000001       1 component.go:41] [core]grpc: addrConn.createTransport failed "
        "to connect to {nfd-node-feature-discovery-master:8080 nfd-node-feature-discovery-master:8080 "
        '<nil> 0 <nil>}. Err: connection error: desc = "transport: Error while dialing dial tcp '
        '10.96.0.44:8080: i/o timeout". Reconnecting...\n'
    )
    assert verdict_of(ruleset, {"nfd-worker.log": grpc}) == (rule, "no-device-plugin-pod", "low")
    wrapped = (  # the same warning hard-wrapped by the paste
        "W0301 09:00:26.000001 1 clientconn.go:1303] grpc: addrConn.createTransport failed to connect to\n"
        "{nfd-node-feature-discovery-master:8080 <nil> 0 <nil>}. Err :connection error:\n"
    )
    assert verdict_of(ruleset, {"nfd.txt": wrapped})[0] == rule
    dns = "dial tcp: lookup nfd-node-feature-discovery-master on 10.96.0.10:53: no such host\n"
    assert verdict_of(ruleset, {"nfd-worker.log": dns})[0] == rule
    newer_grpc = (
        "W0301 09:00:00.000001 1 logging.go:59] [core] grpc: addrConn.createTransport failed to connect "
        'to {Addr: "nfd-master:8080", ServerName: "nfd-master:8080", }. Err: connection error\n'
    )
    assert verdict_of(ruleset, {"nfd-worker.log": newer_grpc})[0] == rule
    crd = (
        'E0301 09:00:00.000001 1 main.go:66] "error while running" err="failed to advertise features '
        '(via CRD API): failed to get NodeFeature object: dial tcp 10.96.0.1:443: i/o timeout"\n'
    )
    assert verdict_of(ruleset, {"nfd-worker.log": crd})[0] == rule
    reached = (
        grpc + "I0301 09:00:31.000001 1 nfd-worker.go:514] sending labeling request to nfd-master\n"
    )
    assert rule not in fired(diagnose_texts(ruleset, {"nfd-worker.log": reached}))
    connecting = (
        "I0301 09:00:00.000001 1 base.go:126] connecting to nfd-master at nfd-master:8080 ...\n"
    )
    assert rule not in fired(diagnose_texts(ruleset, {"nfd-worker.log": connecting}))
