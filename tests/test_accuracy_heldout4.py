"""Fourth measurement (session 5, accuracy4): the classes of failure a fourth set of unseen real
cases showed, each checked on made-up inputs of that class (none copied from a real case)."""

from __future__ import annotations

from analyzer.analyze import AnalyzeOptions, Issue, analyze
from conftest import diagnose_texts, fired


def _issue(ruleset, text: str):
    return analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report


# ---- a containerd config fragment without the CRI plugin's table ------------------------------
# the old v1 shim's section names runc as its binary; it is not the CRI default runtime
V1_SHIM_FRAGMENT = """[plugins."io.containerd.runtime.v1.linux"]
  no_shim = false
  runtime = "runc"
  runtime_root = ""
  shim = "containerd-shim"
  shim_debug = false

[plugins."io.containerd.service.v1.diff-service"]
  default = ["walking"]
"""


def test_a_fragment_without_the_cri_table_leaves_the_default_runtime_unknown(ruleset):
    r = diagnose_texts(ruleset, {"containerd.toml": V1_SHIM_FRAGMENT})
    assert "containerd-default-runtime-not-nvidia" not in fired(r)
    assert r.primary.category != "runtimeclass"


def test_a_cri_table_without_default_runtime_name_runs_containerds_default_runc(ruleset):
    cfg = (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
    )
    r = diagnose_texts(ruleset, {"containerd.toml": cfg})
    assert "containerd-default-runtime-not-nvidia" in fired(r)
    assert "runc" in next(
        f.title
        for f in r.nodes[0].all_findings()
        if f.rule_id == "containerd-default-runtime-not-nvidia"
    )


# ---- two HAMi releases of one register format ---------------------------------------------------
V29_LOG = "I0301 08:00:05.000000  4127 register.go:273] Device info unchanged, skipping annotation update\n"


def test_two_json_era_releases_are_not_mixed_versions(ruleset):
    """v2.8.2 named by the reporter and a v2.9+ log line: both read the JSON annotation."""
    text = (
        "# plugin log\n\nTried image projecthami/hami:v2.8.2 first, then a master build.\n\n"
        "```\n" + V29_LOG + "```\n"
    )
    r = _issue(ruleset, text)
    assert r.nodes[0].version.conflicts  # the report still shows the contradiction
    assert "mixed-hami-versions" not in fired(r)


def test_a_csv_annotation_beside_a_v29_plugin_line_is_mixed_versions(ruleset):
    node = (
        "kind: Node\nmetadata:\n  name: n1\n  annotations:\n"
        "    hami.io/node-nvidia-register: 'GPU-1,10,24564,100,NVIDIA-NVIDIA A30,0,true,0,hami-core:'\n"
    )
    r = diagnose_texts(ruleset, {"node.yaml": node, "dp.log": V29_LOG})
    assert "mixed-hami-versions" in fired(r)


# ---- the reporter's own restart of the plugin, and a GPU the plugin marked unhealthy ------------
def test_a_restart_the_reporter_did_is_not_a_crash(ruleset):
    r = _issue(
        ruleset,
        "# GPUs come back\n\nThe device plugin shows no GPUs on gpu-3, then I restart the device plugin"
        " pod and they are back.\n",
    )
    assert "plugin-crash-described" not in fired(r)


def test_a_plugin_that_keeps_restarting_is_still_a_crash(ruleset):
    r = _issue(ruleset, "# help\n\nOur hami-device-plugin keeps restarting every few minutes.\n")
    assert r.primary.rule_id == "plugin-crash-described"


def test_a_gpu_the_plugin_reported_unhealthy_is_device_unhealthy(ruleset):
    r = _issue(
        ruleset,
        "# one GPU gone\n\nThe nvidia device plugin reported that GPU 2 is unhealthy and allocatable"
        " went from 8 to 7.\n",
    )
    assert (r.primary.rule_id, r.primary.category, r.primary.confidence) == (
        "gpu-unhealthy-described",
        "device-unhealthy",
        "low",
    )


def test_hamis_scheduler_cleanup_line_is_not_a_gpu_marked_unhealthy(ruleset):
    r = _issue(
        ruleset,
        "# scheduler log\n\n```\nW0301 08:00:05.000000       1 scheduler.go:183] Device is unhealthy,"
        " cleaning up node gpu-3\n```\n",
    )
    assert "gpu-unhealthy-described" not in fired(r)


# ---- HAMi's filter verdict quoted in prose ------------------------------------------------------
def test_a_quoted_card_shortage_reason_is_resource_insufficient(ruleset):
    r = _issue(
        ruleset,
        "# cannot share the T4\n\nThe first pod runs fine; a second pod for the same card fails with"
        " `CardInsufficientCore` even though the GPU is idle.\n",
    )
    assert (r.primary.rule_id, r.primary.category) == (
        "hami-filter-shortage-described",
        "resource-insufficient",
    )
    assert "CardInsufficientCore" in r.primary.title


def test_a_card_type_mismatch_is_not_a_shortage(ruleset):
    r = _issue(ruleset, "# type filter\n\nAll nodes answer CardTypeMismatch for my pod.\n")
    assert "hami-filter-shortage-described" not in fired(r)


# ---- the webhook server's side of a refused certificate ---------------------------------------
def test_the_api_server_refusing_the_webhooks_certificate_is_webhook_call_failed(ruleset):
    log = (
        "I0301 08:00:00.000000       1 route.go:131] Start to handle webhook request on /webhook\n"
        "2025/03/01 08:00:01 http: TLS handshake error from 10.96.0.1:51020: remote error: tls:"
        " unknown certificate authority\n"
    )
    r = diagnose_texts(ruleset, {"vgpu-scheduler-extender.log": log})
    assert (r.primary.rule_id, r.primary.category) == ("webhook-call-failed", "scheduling-other")
    assert "unknown certificate authority" in r.primary.title


def test_a_plain_tcp_probe_on_the_webhook_port_is_not_a_refused_certificate(ruleset):
    log = "2025/03/01 08:00:01 http: TLS handshake error from 10.0.0.5:40100: EOF\n"
    assert "webhook-call-failed" not in fired(
        diagnose_texts(ruleset, {"vgpu-scheduler-extender.log": log})
    )


# ---- HAMi-core skipped by the container's loader ------------------------------------------------
def test_a_libvgpu_the_loader_ignored_means_no_vgpu_limits(ruleset):
    out = (
        "$ nvidia-smi\n"
        "ERROR: ld.so: object '/usr/local/vgpu/libvgpu.so' from /etc/ld.so.preload cannot be preloaded"
        " (cannot open shared object file): ignored.\n"
    )
    r = diagnose_texts(ruleset, {"app.log": out})
    assert (r.primary.rule_id, r.primary.category) == ("hami-core-not-preloaded", "runtime-other")
    assert "cannot open shared object file" in r.primary.title


def test_another_preloaded_library_is_not_hami_core(ruleset):
    out = (
        "ERROR: ld.so: object 'libtcmalloc.so.4' from LD_PRELOAD cannot be preloaded"
        " (cannot open shared object file): ignored.\n"
    )
    assert "hami-core-not-preloaded" not in fired(diagnose_texts(ruleset, {"app.log": out}))


# ---- containerd 2.x config, and a plugin whose log shows NVML at work --------------------------
V3_CONFIG = """version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  snapshotter = "overlayfs"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia'.options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def test_a_containerd_2_config_is_recognised(ruleset):
    r = diagnose_texts(ruleset, {"config.toml": V3_CONFIG})
    assert "containerd-default-runtime-not-nvidia" in fired(r)  # runc by containerd's default


def test_a_config_of_runtimes_only_does_not_say_the_default(ruleset):
    """Its containerd table unseen (a pasted fragment, or a drop-in merged under config.toml),
    the default runtime is not known."""
    runtimes_only = V3_CONFIG.replace('snapshotter = "overlayfs"\n', "")
    r = diagnose_texts(ruleset, {"config.toml": runtimes_only})
    assert "containerd-default-runtime-not-nvidia" not in fired(r)


def test_a_plugin_that_reads_its_gpus_is_not_missing_the_nvidia_runtime(ruleset):
    dp = (
        "I0301 08:00:05.000000    4127 register.go:197] Discovered 2 device(s) for registration\n"
        + V29_LOG
    )
    r = diagnose_texts(ruleset, {"config.toml": V3_CONFIG, "dp.log": dp})
    assert "containerd-default-runtime-not-nvidia" not in fired(r)


def test_libvgpu_named_as_hanging_is_hami_core_hangs(ruleset):
    r = _issue(
        ruleset,
        "# render app never starts\n\nWith HAMi the libvgpu.so hangs our renderer at its first CUDA"
        " call; with an empty /etc/ld.so.preload it starts.\n",
    )
    assert (r.primary.rule_id, r.primary.category) == ("hami-core-hangs-at-start", "runtime-other")


# ---- a device node missing under the GPU Operator's driver root --------------------------------
def test_a_missing_device_node_under_the_driver_root_is_device_spec_path_missing(ruleset):
    ev = (
        "  Warning  Failed  5s (x3 over 30s)  kubelet  Error: failed to generate container"
        ' "" spec: failed to generate spec: lstat /run/nvidia/driver/dev/nvidia-uvm: no such file'
        " or directory\n"
    )
    r = diagnose_texts(ruleset, {"events.txt": ev})
    assert (r.primary.rule_id, r.primary.category) == ("device-spec-path-missing", "runtime-other")
    assert "/run/nvidia/driver/dev/nvidia-uvm" in r.primary.title
