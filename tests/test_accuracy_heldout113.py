"""Hundred-and-thirteenth to hundred-and-sixteenth measurements (issue 25, session 49): blind sets
of unseen real cases and the classes they left, each checked on made-up inputs (none copied from a
real case)."""

from __future__ import annotations

from conftest import diagnose_texts, fired, issue_verdict, verdict_of


# ---- NVIDIA's chart wants pci-10de.present; an NFD of its own defaults writes pci-0300_10de -------
def _labels_issue(install: str, labels: str) -> str:
    return f"# no plugin pod\n\n```\n{install}\n```\n\nThe node's labels:\n\n```\n{labels}\n```\n"


NVDP = "helm upgrade -i nvdp nvdp/nvidia-device-plugin -n nvdp --create-namespace --version 0.17.2"


def test_class_prefixed_nfd_labels_keep_nvidias_chart_off_the_node(ruleset):
    for label in (
        "feature.node.kubernetes.io/pci-0300_10de.present=true",
        "feature.node.kubernetes.io/pci-0302_10de.present=true",
    ):
        body = _labels_issue(NVDP, f"{label}\nkubernetes.io/os=linux")
        assert issue_verdict(ruleset, body)[:2] == (
            "nvidia-chart-affinity-misses-nfd-labels",
            "no-device-plugin-pod",
        ), label


def test_a_label_the_chart_accepts_or_another_deployer_is_no_such_miss(ruleset):
    vga = "feature.node.kubernetes.io/pci-0300_10de.present=true"
    for install, labels in (
        (NVDP, f"{vga}\nnvidia.com/gpu.present=true"),  # GFD's (or a hand-set) label matches
        (NVDP, f"{vga}\nfeature.node.kubernetes.io/pci-10de.present=true"),
        # the GPU Operator and HAMi's chart read the class-prefixed label, or none
        ("helm install -n gpu-operator --create-namespace nvidia/gpu-operator --wait", vga),
        ("helm install hami hami-charts/hami -n kube-system", vga),
    ):
        rule = issue_verdict(ruleset, _labels_issue(install, labels))[0]
        assert rule != "nvidia-chart-affinity-misses-nfd-labels", (install, labels)


NODE_0302 = (
    "kind: Node\nmetadata:\n  name: gpu-7\n  labels:\n"
    '    feature.node.kubernetes.io/pci-0302_10de.present: "true"\n'
    "status:\n  allocatable: {cpu: '16'}\n"
)


def test_the_node_object_form_reads_its_labels(ruleset):
    chart = "    helm.sh/chart: nvidia-device-plugin-0.16.2\n"
    report = diagnose_texts(ruleset, {"node.yaml": NODE_0302, "ds.txt": chart})
    assert "nvidia-chart-affinity-misses-nfd-labels" in fired(report)
    advertised = NODE_0302.replace("{cpu: '16'}", "{cpu: '16', nvidia.com/gpu: '2'}")
    report = diagnose_texts(ruleset, {"node.yaml": advertised, "ds.txt": chart})
    assert "nvidia-chart-affinity-misses-nfd-labels" not in fired(report)


# ---- "invalid MIG configuration" in v0.13-v0.15's wording -----------------------------------------
def test_the_older_mig_walk_error_is_a_rejected_configuration(ruleset):
    line = (
        "E0612 08:00:00.000000       1 main.go:123] error starting plugins: error getting plugins: "
        "failed to construct NVML resource managers: error building device map: error building "
        "device map from config.resources: invalid MIG configuration: error visiting devices: "
        "error visiting device: error visiting MIG device: NOT_FOUND\n"
    )
    assert verdict_of(ruleset, {"device-plugin.log": line})[:2] == (
        "nvidia-plugin-config-rejected",
        "plugin-crash-nvml",
    )


# ---- a flag the plugin's binary does not know ------------------------------------------------------
def test_a_flag_unknown_to_the_plugin_image_is_a_version_skew(ruleset):
    log = "flag provided but not defined: -cdi-annotation-prefix\nUsage of nvidia-device-plugin:\n"
    rule, category, _ = verdict_of(ruleset, {"device-plugin.log": log})
    assert (rule, category) == ("device-plugin-flag-unknown-to-image", "plugin-crash-nvml")
    body = f"# plugin exits\n\n```\n{log}  -mig-strategy string\n```\n"
    assert issue_verdict(ruleset, body)[0] == "device-plugin-flag-unknown-to-image"
    other = "flag provided but not defined: -v\nUsage of hami-scheduler-helper:\n"
    report = diagnose_texts(ruleset, {"other.txt": other})
    assert "device-plugin-flag-unknown-to-image" not in fired(report)


# ---- a pod turned UnexpectedAdmissionError after a kubelet restart ---------------------------------
ROWS = """\
$ kubectl get pods
NAME                    READY   STATUS                     RESTARTS   AGE
infer-7c9d8-4xq2v       1/1     Running                    0          10m
eval-job-m2k8d          0/1     UnexpectedAdmissionError   0          12m
"""


def test_a_readmission_failure_after_a_kubelet_restart(ruleset):
    for said in (
        "After `systemctl restart kubelet` on the node the finished job shows this:",
        "The kubelet was restarted by the upgrade, then:",
    ):
        rule, category, _ = issue_verdict(ruleset, f"# job pod fails\n\n{said}\n\n```\n{ROWS}```\n")
        assert (rule, category) == (
            "pod-rejected-at-readmission-after-kubelet-restart",
            "scheduling-other",
        ), said
    session = ROWS.replace(
        "$ kubectl get pods\n", "$ sudo systemctl restart kubelet\n$ kubectl get pods\n"
    )
    assert verdict_of(ruleset, {"session.txt": session})[0] == (
        "pod-rejected-at-readmission-after-kubelet-restart"
    )


def test_a_row_without_a_restart_claims_no_readmission(ruleset):
    report = diagnose_texts(ruleset, {"pods.txt": ROWS})
    assert "pod-rejected-at-readmission-after-kubelet-restart" not in fired(report)
    report = diagnose_texts(
        ruleset,
        {
            "pods.txt": ROWS.replace(
                "$ kubectl get pods", "$ systemctl restart containerd\n$ kubectl get pods"
            )
        },
    )
    assert "pod-rejected-at-readmission-after-kubelet-restart" not in fired(report)


# ---- every node short of a GPU claims no cause ----------------------------------------------------
def test_insufficient_everywhere_is_inconclusive_with_its_finding(ruleset):
    body = (
        "# GPU pod pending on minikube\n\n```\n  Warning  FailedScheduling  3m (x40 over 9h)  "
        "default-scheduler  0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\n```\n"
    )
    assert issue_verdict(ruleset, body)[:2] == ("no-node-offers-a-gpu", "inconclusive")


# ---- the runtime ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers --------------------------
TOOLKIT = """\
accept-nvidia-visible-devices-as-volume-mounts = true
accept-nvidia-visible-devices-envvar-when-unprivileged = false

[nvidia-container-cli]
ldconfig = "@/sbin/ldconfig.real"

[nvidia-container-runtime]
mode = "auto"
"""


def test_a_runtime_that_ignores_the_variable_leaves_pods_without_gpus(ruleset):
    rule, category, _ = verdict_of(ruleset, {"config.toml": TOOLKIT})
    assert (rule, category) == (
        "toolkit-ignores-visible-devices-when-unprivileged",
        "runtime-other",
    )
    body = f"# pod runs but has no GPU\n\n```toml\n{TOOLKIT}```\n"
    assert issue_verdict(ruleset, body)[0] == "toolkit-ignores-visible-devices-when-unprivileged"
    mounts = (
        "helm upgrade -i nvdp nvdp/nvidia-device-plugin --set deviceListStrategy=volume-mounts\n"
    )
    report = diagnose_texts(ruleset, {"config.toml": TOOLKIT, "install.txt": mounts})
    assert "toolkit-ignores-visible-devices-when-unprivileged" not in fired(report)
    default = TOOLKIT.replace("unprivileged = false", "unprivileged = true")
    report = diagnose_texts(ruleset, {"config.toml": default})
    assert "toolkit-ignores-visible-devices-when-unprivileged" not in fired(report)


# ---- the review's cases ----------------------------------------------------------------------------
def test_the_flag_error_in_urfaves_and_klogs_forms(ruleset):
    """urfave/cli (NVIDIA's plugin since v0.8) prints "Incorrect Usage." (v1) or "Incorrect
    Usage:" (v2) and its help, whose NAME section names the app; a klog line may carry it."""
    help_ = "NAME:\n   NVIDIA Device Plugin - NVIDIA device plugin for Kubernetes\n"
    for first in (
        "Incorrect Usage. flag provided but not defined: -device-discovery-strategy",
        "Incorrect Usage: flag provided but not defined: -device-discovery-strategy",
    ):
        rule = verdict_of(ruleset, {"plugin.txt": f"{first}\n\n{help_}"})[0]
        assert rule == "device-plugin-flag-unknown-to-image", first
    klog = (
        "I0601 10:00:00.000000       1 main.go:235] Starting FS watcher.\n"
        "E0601 10:00:00.000000       1 main.go:173] flag provided but not defined: -imex-channel-ids\n"
    )
    assert (
        verdict_of(ruleset, {"device-plugin.log": klog})[0] == "device-plugin-flag-unknown-to-image"
    )


def test_a_restart_that_did_not_help_is_no_readmission(ruleset):
    body = (
        "# GPU pod fails\n\nI already restarted the kubelet but the pod is still "
        f"UnexpectedAdmissionError.\n\n```\n{ROWS}```\n"
    )
    assert issue_verdict(ruleset, body)[0] != "pod-rejected-at-readmission-after-kubelet-restart"


def test_the_restart_commands_of_a_session(ruleset):
    for command in (
        "[root@gpu-1 ~]# systemctl restart kubelet",
        "$ sudo systemctl daemon-reload && sudo systemctl restart kubelet",
        "$ sudo systemctl restart containerd kubelet",
    ):
        session = ROWS.replace("$ kubectl get pods\n", f"{command}\n$ kubectl get pods\n")
        rule = verdict_of(ruleset, {"session.txt": session})[0]
        assert rule == "pod-rejected-at-readmission-after-kubelet-restart", command
    other = ROWS.replace(
        "$ kubectl get pods\n", "$ sudo systemctl restart containerd\n$ kubectl get pods\n"
    )
    report = diagnose_texts(ruleset, {"session.txt": other})
    assert "pod-rejected-at-readmission-after-kubelet-restart" not in fired(report)


def test_the_charts_affinity_from_v0_15_and_the_node_objects_labels(ruleset):
    """The plugin's DaemonSet has the affinity from chart v0.15 (before, only GFD's); a label list
    grepped for 10de says nothing of nvidia.com/gpu.present, which the node object shows."""
    labels = "feature.node.kubernetes.io/pci-0302_10de.present=true"
    old = NVDP.replace("--version 0.17.2", "--version 0.14.1")
    assert issue_verdict(ruleset, _labels_issue(old, labels))[0] != (
        "nvidia-chart-affinity-misses-nfd-labels"
    )
    helm_list = (
        "NAME  NAMESPACE  REVISION  UPDATED  STATUS  CHART  APP VERSION\n"
        "nvdp  nvdp  1  2025-02-01 10:00:00.000000 +0000 UTC  deployed  nvidia-device-plugin-0.17.0  0.17.0\n"
    )
    report = diagnose_texts(ruleset, {"node.yaml": NODE_0302, "helm.txt": helm_list})
    assert "nvidia-chart-affinity-misses-nfd-labels" in fired(report)
    labelled = NODE_0302.replace("  labels:\n", '  labels:\n    nvidia.com/gpu.present: "true"\n')
    grepped = f"$ kubectl get node gpu-7 --show-labels | tr ',' '\\n' | grep 10de\n{labels}\n"
    report = diagnose_texts(
        ruleset, {"node.yaml": labelled, "helm.txt": helm_list, "notes.txt": grepped}
    )
    assert "nvidia-chart-affinity-misses-nfd-labels" not in fired(report)


def test_the_plugins_strategy_in_its_env_and_its_config_dump(ruleset):
    env = '[{"name":"DEVICE_LIST_STRATEGY","value":"volume-mounts"},{"name":"FAIL_ON_INIT_ERROR","value":"false"}]\n'
    dump = (
        "I0601 10:00:00.000000       1 main.go:353] \nRunning with config:\n{\n"
        '  "flags": {\n    "deviceListStrategy": [\n      "volume-mounts"\n    ],\n'
        '    "deviceIDStrategy": "uuid"\n  }\n}\n'
    )
    for name, text in (("env.txt", env), ("device-plugin.log", dump)):
        report = diagnose_texts(ruleset, {"config.toml": TOOLKIT, name: text})
        assert "toolkit-ignores-visible-devices-when-unprivileged" not in fired(report), name


def test_prose_before_a_config_stays_prose(ruleset):
    from test_recognition import SMI_ROWS, TOOLKIT_TABLES, line_no, parts

    prose = "The toolkit config on the node is below; the runtime is set up.\n"
    text = SMI_ROWS + "\n" + prose + "\n" + TOOLKIT_TABLES
    got = parts(ruleset, text)
    assert [k for k, _, _ in got] == ["nvidia-smi", "text", "toolkit-config"], got
    assert got[2][1] == line_no(text, "[nvidia-container-cli]")
