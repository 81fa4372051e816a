"""Eighteenth to twentieth measurements (issue 25, session 40): three sets of unseen real cases
(HAMi's own issues, NVIDIA's plugin/operator/toolkit, the projects around them) and the classes
the seventeenth left. Each class is checked on made-up inputs (none copied from a real case):
cut pastes read as broken objects, a transient event outranking the lasting one, and evidence
nothing read (the vgpu-monitor, a GPU workload's manifest, the toolkit's socket, a reporter's
"after the kubelet restarted")."""

from __future__ import annotations

from conftest import diagnose_issue, diagnose_texts, fired, parse_texts, verdict_of


def _issue_primary(ruleset, text: str) -> tuple[str | None, str, str]:
    p = diagnose_issue(ruleset, text).primary
    return p.rule_id, p.category, p.confidence


# ---- a paste cut inside a value is cut, not broken --------------------------------------------
def test_a_register_value_cut_inside_a_string_is_elided(ruleset):
    """`kubectl get node -o yaml` folds a long JSON value; a paste that stops in the middle of a
    device's type leaves a JSON string never closed. That is the paste's end, not an annotation
    HAMi wrote wrong."""
    annotations = (
        "metadata:\n  annotations:\n"
        "    hami.io/node-handshake: Requesting_2026-03-02 10:00:00\n"
        '    hami.io/node-nvidia-register: \'[{"id":"GPU-0a1b2c3d-1111-2222-3333-444455556666",'
        '"index":0,"count":10,"devmem":24564,"devcore":100,"type":"NVIDIA\n'
        "      A10 with a long na\n"
    )
    assert verdict_of(ruleset, {"annotations.txt": annotations}) == (
        "register-annotation-elided",
        "inconclusive",
        "high",
    )


def test_a_containerd_config_pasted_from_a_subtable_does_not_show_the_default(ruleset):
    """A fragment that starts below the CRI containerd table and is cut says nothing of
    default_runtime_name: no verdict that the default is runc."""
    fragment = (
        '            [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
        '              BinaryName = "/usr/bin/nvidia-container-runtime"\n'
        '      [plugins."io.containerd.grpc.v1.cri".registry]\n'
        "[... ...]\n"
    )
    assert "containerd-default-runtime-not-nvidia" not in fired(
        diagnose_texts(ruleset, {"config.toml": fragment})
    )


def test_a_version_1_containerd_config_is_recognised(ruleset):
    """containerd 1.2-1.4 (and k3s templates of that time) name plugins bare: `[plugins.cri]`."""
    v1 = (
        '[plugins.opt]\n  path = "/var/lib/rancher/k3s/agent/containerd"\n\n'
        '[plugins.cri]\n  stream_server_address = "127.0.0.1"\n\n'
        '[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n\n'
        '[plugins.cri.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
    )
    parsed = parse_texts(ruleset, {"config.toml.tmpl": v1})
    assert [a.kind for a in parsed.artefacts] == ["containerd-config"]


# ---- a wait that ended, a handler that came, a count that may be no shortage ------------------
def test_an_operand_wait_followed_by_registration_is_no_stuck_operator(ruleset):
    """`kubectl logs --all-containers` of a plugin pod shows its init container's wait, then the
    plugin registering: the operator's stack became ready."""
    log = (
        "waiting for nvidia container stack to be setup\n"
        "waiting for nvidia container stack to be setup\n"
        "2024/03/02 10:00:05 Starting GRPC server for 'nvidia.com/gpu'\n"
        "2024/03/02 10:00:05 Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"
    )
    assert "gpu-operator-stack-not-ready" not in fired(
        diagnose_texts(ruleset, {"device-plugin.log": log})
    )


DESCRIBE_HEAD = (
    "Events:\n"
    "  Type     Reason                  Age                From               Message\n"
    "  ----     ------                  ----               ----               -------\n"
)


ADMISSION_ZERO = DESCRIBE_HEAD + (
    "  Warning  UnexpectedAdmissionError  30s  kubelet  Allocate failed due to requested number of"
    " devices unavailable for nvidia.com/gpu. Requested: 2, Available: 0, which is unexpected\n"
)


def test_available_zero_alone_is_no_confident_shortage(ruleset):
    """ "Available: 0" is also what a kubelet says before any plugin registered or with every GPU
    unhealthy: without the node it is a low verdict."""
    assert verdict_of(ruleset, {"pod-describe.txt": ADMISSION_ZERO}) == (
        "devices-unavailable-at-admission",
        "resource-insufficient",
        "low",
    )


def test_available_zero_on_a_node_with_no_allocatable_gpu_is_not_a_shortage(ruleset):
    node = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-1}\n"
        "status:\n  capacity: {nvidia.com/gpu: '4'}\n  allocatable: {nvidia.com/gpu: '0'}\n"
    )
    got = fired(diagnose_texts(ruleset, {"pod-describe.txt": ADMISSION_ZERO, "node.yaml": node}))
    assert "devices-unavailable-at-admission" not in got


def test_available_zero_after_a_kubelet_restart_is_the_registration_race(ruleset):
    issue = (
        "# GPU pods fail with UnexpectedAdmissionError after we restarted the kubelet\n\n```\n"
        + ADMISSION_ZERO
        + "```\n"
    )
    assert _issue_primary(ruleset, issue) == (
        "admission-before-plugin-reregistered",
        "no-allocatable-kubelet-socket",
        "low",
    )


# ---- evidence nothing read ---------------------------------------------------------------------
def test_a_privileged_gpu_container_in_a_deployment_is_named(ruleset):
    """HAMi's webhook leaves privileged containers alone: a reporter's Deployment shows it."""
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: infer}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: server\n        securityContext:\n"
        "          privileged: true\n        resources:\n          limits:\n"
        "            nvidia.com/gpu: 1\n            nvidia.com/gpumem: 8000\n"
    )
    # low: a template does not say which scheduler its pods name (another one's pods the webhook
    # leaves alone)
    assert verdict_of(ruleset, {"deployment.yaml": deployment}) == (
        "privileged-gpu-container",
        "scheduling-other",
        "low",
    )


def test_hami_own_deployment_is_no_gpu_pod(ruleset):
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: hami-scheduler, namespace: gpu}\n"
        "spec:\n  template:\n    spec:\n      containers:\n      - name: vgpu-scheduler-extender\n"
        "        securityContext: {privileged: true}\n"
    )
    parsed = parse_texts(ruleset, {"scheduler-deployment.yaml": deployment})
    assert parsed.pods == []
    assert "privileged-gpu-container" not in fired(
        diagnose_texts(ruleset, {"scheduler-deployment.yaml": deployment})
    )


def test_the_monitor_s_panic_is_not_the_plugin_s(ruleset):
    """A double-spaced paste of vgpu-monitor's panic: its stack is cmd/vGPUmonitor, so the
    monitor crashed, not the device plugin that registers the GPUs."""
    log = (
        "I0302 10:00:00.000000       1 feedback.go:219] Setting UtilizationSwitch to off\n\n"
        " panic: runtime error: invalid memory address or nil pointer dereference\n\n"
        " goroutine 41 [running]:\n\n main.watchAndFeedback()\n\n"
        " \t/k8s-vgpu/cmd/vGPUmonitor/feedback.go:198 +0x3a1\n"
    )
    r = diagnose_texts(ruleset, {"vgpu-monitor.log": log})
    assert (r.primary.rule_id, r.primary.category) == ("vgpu-monitor-crashed", "runtime-other")
    assert "plugin-restarted" not in fired(r)


def test_a_monitor_label_that_is_not_text_is_a_cache_layout_skew(ruleset):
    log = (
        "E0302 10:00:00.000000  777 metrics.go:407] Failed to send memoryTotal metric for device 1"
        " in Pod ml/train-0, Container main: failed to create metric: label value "
        '"\\x01\\x00\\x00\\x00GPU-77aa" is not valid UTF-8\n'
    )
    assert verdict_of(ruleset, {"vgpu-monitor.log": log})[:2] == (
        "vgpu-monitor-misreads-hami-core-cache",
        "runtime-other",
    )


def test_the_toolkit_that_cannot_reach_the_runtime_socket_is_named(ruleset):
    line = (
        'time="2024-03-02T10:00:00Z" level=warning msg="Error signaling containerd, attempt 3/6:'
        " unable to dial: dial unix /runtime/sock-dir/containerd.sock: connect: no such file or"
        ' directory"\n'
    )
    assert verdict_of(ruleset, {"toolkit.txt": line})[:2] == (
        "gpu-operator-toolkit-cannot-reach-runtime",
        "runtime-other",
    )


def test_workloads_failing_when_the_plugin_restarts_are_not_a_plugin_crash(ruleset):
    issue = (
        "# vGPU pods crash when hami-device-plugin restarts\n\n"
        "Every time the hami-device-plugin pod is restarted, running training pods crash with"
        " Segmentation fault (core dumped).\n"
    )
    assert _issue_primary(ruleset, issue) == (
        "workloads-fail-when-plugin-restarts",
        "runtime-other",
        "low",
    )


def test_the_scheduler_s_cleanup_line_quoted_in_prose_names_the_scheduler(ruleset):
    issue = (
        "# pods pending for minutes\n\nThe scheduler extender keeps printing Device is unhealthy,"
        " cleaning up node worker-3, then the pods schedule later.\n"
    )
    assert _issue_primary(ruleset, issue)[:2] == (
        "scheduler-dropped-node-described",
        "scheduler-not-seeing-node",
    )


def test_the_platform_line_named_as_the_error_points_at_the_runtime(ruleset):
    issue = "# hami-device-plugin error: Detected non-Tegra platform\n\nhow do I fix this?\n"
    assert _issue_primary(ruleset, issue)[:2] == (
        "plugin-platform-line-quoted",
        "plugin-crash-nvml",
    )


# ---- found by the round's review of its own rules ----------------------------------------------
GPU_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: ml}
spec:
  template:
    spec:
      schedulerName: default-scheduler
      containers:
      - name: server
        resources:
          limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 20000}
status: {availableReplicas: 1}
"""


def test_a_template_s_defaulted_scheduler_is_not_the_pods(ruleset):
    """The API server writes `schedulerName: default-scheduler` into every template; HAMi's
    webhook rewrites the pods, never the template: no "not scheduled by HAMi" from it."""
    assert "pod-not-scheduled-by-hami" not in fired(
        diagnose_texts(ruleset, {"deploy.yaml": GPU_DEPLOYMENT})
    )


def test_the_pod_s_own_events_outrank_its_workload_s_template(ruleset):
    events = (
        "Events:\n  Type     Reason            Age   From            Message\n"
        "  ----     ------            ----  ----            -------\n"
        "  Warning  FailedScheduling  10s   hami-scheduler  0/3 nodes are available: 3 node unregistered.\n"
    )
    r = diagnose_texts(ruleset, {"deploy.yaml": GPU_DEPLOYMENT, "events.txt": events})
    assert r.primary.category == "scheduler-not-seeing-node"


def test_a_message_repeated_at_one_length_is_not_a_terminal_wrap(ruleset):
    """Twenty identical HAMi-core lines share one length; that alone is no fixed-width wrap."""
    line = "[HAMI-core Msg(29:1295:utils.c:27)]: unified_lock locked, waiting 1 second...\n"
    parsed = parse_texts(ruleset, {"app.log": line * 22})
    assert parsed.logs[0].stats.hard_wrap_joins == 0


def test_a_config_pasted_with_its_prompt_and_elisions_is_read(ruleset):
    """`$ sudo cat config.toml`, then `........` where the reporter left lines out."""
    paste = (
        "$ sudo cat /etc/containerd/config.toml\n........\n"
        '    [plugins."io.containerd.cri.v1.runtime".containerd]\n'
        '      default_runtime_name = "runc"\n'
        '        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
        '          runtime_type = "io.containerd.runc.v2"\n'
    )
    r = diagnose_texts(ruleset, {"config.toml": paste})
    assert "containerd-default-runtime-not-nvidia" in fired(r)


def test_a_toolkit_that_reached_the_runtime_on_a_retry_is_fine(ruleset):
    log = (
        'time="2024-03-02T10:00:05Z" level=warning msg="Error signaling containerd, attempt 1/6:'
        ' unable to dial: dial unix /runtime/sock-dir/containerd.sock: connect: connection refused"\n'
        'time="2024-03-02T10:00:10Z" level=info msg="Successfully signaled containerd"\n'
    )
    assert "gpu-operator-toolkit-cannot-reach-runtime" not in fired(
        diagnose_texts(ruleset, {"toolkit.log": log})
    )


# ---- found by the second review ------------------------------------------------------------------
TABLE = '[plugins."io.containerd.grpc.v1.cri".containerd]\n'


def test_lines_left_out_of_the_containerd_table_leave_the_default_unknown(ruleset):
    """`containerd config dump` prints default_runtime_name first: "........" under the header
    may have hidden it."""
    paste = TABLE + '  ........\n  snapshotter = "overlayfs"\n'
    assert "containerd-default-runtime-not-nvidia" not in fired(
        diagnose_texts(ruleset, {"config.toml": paste})
    )


def test_the_usual_shell_prompts_are_framing(ruleset):
    for prompt in ("[root@gpu-1 ~]# ", "ubuntu@gpu-1:~$ "):
        paste = (
            f"{prompt}cat /etc/containerd/config.toml\n" + TABLE + '  snapshotter = "overlayfs"\n'
        )
        assert "containerd-default-runtime-not-nvidia" in fired(
            diagnose_texts(ruleset, {"config.toml": paste})
        ), prompt


def test_the_v1_shim_running_nvidia_s_binary_is_not_runc(ruleset):
    """containerd 1.x: runc's type set to the v1 linux shim, whose binary is nvidia's."""
    v1 = (
        '[plugins.linux]\n  runtime = "nvidia-container-runtime"\n\n'
        '[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n\n'
        '[plugins.cri.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runtime.v1.linux"\n'
    )
    assert "containerd-default-runtime-not-nvidia" not in fired(
        diagnose_texts(ruleset, {"config.toml.tmpl": v1})
    )


def test_a_plugin_that_crash_loops_from_its_start_is_a_crash(ruleset):
    """ "When the plugin pod starts, it goes into CrashLoopBackOff": no restart named as a moment."""
    issue = "# device plugin broken\n\nWhen the hami-device-plugin pod starts, it goes into CrashLoopBackOff.\n"
    assert _issue_primary(ruleset, issue)[0] == "plugin-crash-described"


def test_a_vm_device_plugin_s_resource_is_not_blamed_on_container_plugins(ruleset):
    line = (
        'server error. command SyncVMI failed: "failed to create GPU host-devices: the number of'
        " GPU/s do not match the number of devices:\\nGPU: [{gpu1 nvidia.com/GA102GL_A10 <nil> }]"
        '\\nDevice: []"\n'
    )
    assert "vm-gpu-from-a-container-device-plugin" not in fired(
        diagnose_texts(ruleset, {"virt-handler.log": line})
    )


# ---- found by the third review -------------------------------------------------------------------
def test_another_sharing_scheme_s_resource_is_a_shortage_not_a_bypass(ruleset):
    """Volcano's and Aliyun's nodes advertise their memory resources: "Insufficient" there is a
    shortage, not a scheduler that skipped HAMi's."""
    for resource in ("volcano.sh/vgpu-memory", "aliyun.com/gpu-mem"):
        describe = DESCRIBE_HEAD + (
            f"  Warning  FailedScheduling  10s   default-scheduler  0/2 nodes are available: 2 Insufficient {resource}.\n"
        )
        got = fired(diagnose_texts(ruleset, {"describe.txt": describe}))
        assert not got & {
            "hami-resources-counted-as-node-resources",
            "pod-not-scheduled-by-hami",
        }, resource


def test_a_cpu_worker_node_unregistered_is_not_the_gpu_node(ruleset):
    issue = (
        "# pods pending\n\nThe two CPU worker nodes are marked as unregistered, that is expected."
        " The GPU node has hami.io/node-nvidia-register.\n"
    )
    assert "hami-annotations-missing-described" not in fired(diagnose_issue(ruleset, issue))


def test_hami_s_own_driver_root_mounts_gke_s_path(ruleset):
    values = "devicePlugin:\n  nvidiaDriverRoot: /home/kubernetes/bin/nvidia\n"
    assert "gke-driver-path" not in fired(diagnose_texts(ruleset, {"values.yaml": values}))
