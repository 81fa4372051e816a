"""Hundred-and-third and hundred-and-fourth measurements (issue 25, session 48): blind sets of
unseen real cases and the classes they left, each checked on made-up inputs (none copied from a
real case)."""

from __future__ import annotations

from conftest import diagnose_texts, fired, issue_verdict, verdict_of


# ---- the loader's line about libvgpu.so, cut short ------------------------------------------------
def test_a_cut_preload_error_still_names_hami_core_skipped(ruleset):
    """A wrapped terminal line pasted only up to the object's name is still glibc's preload error
    (its only other 'ld.so: object' line, LD_AUDIT's, goes on with 'cannot be loaded')."""
    for line in (
        "ERROR: ld.so: object '/usr/local/vgpu/libvgpu.so' f",
        "ERROR: ld.so: object '/usr/local/vgpu/libvgpu.so' from /etc/ld.so.pre",
    ):
        body = f"# limits gone\n\nEvery GPU pod prints:\n\n```\n{line}\n```\n"
        rule, category, _ = issue_verdict(ruleset, body)
        assert (rule, category) == ("hami-core-not-preloaded", "runtime-other"), line
    audit = diagnose_texts(
        ruleset,
        {
            "app.log": "ERROR: ld.so: object '/usr/local/vgpu/libvgpu.so' cannot be loaded as "
            "audit interface: invalid ELF header; ignored.\n"
        },
    )
    assert "hami-core-not-preloaded" not in fired(audit)


# ---- pod security admission refuses the GPU stack's pods ------------------------------------------
EVENTS = """\
LAST SEEN   TYPE      REASON         OBJECT                                MESSAGE
2m          Warning   FailedCreate   daemonset/{ds:<28}  Error creating: pods "{ds}-" is forbidden: {why}
"""
PSA = (
    'violates PodSecurity "baseline:latest": host namespaces (hostPID=true), '
    'privileged (container "ctr" must not set securityContext.privileged=true)'
)
PSP = (
    'PodSecurityPolicy: unable to admit pod: [spec.volumes[0]: Invalid value: "hostPath": '
    "hostPath volumes are not allowed to be used]"
)


def test_the_gpu_stack_forbidden_by_pod_security_creates_no_plugin(ruleset):
    for ds, why in (
        ("nvidia-device-plugin-daemonset", PSA),
        ("hami-device-plugin", PSP),
        ("nvidia-container-toolkit-daemonset", PSA),
    ):
        rule, category, _ = verdict_of(ruleset, {"events.txt": EVENTS.format(ds=ds, why=why)})
        assert (rule, category) == (
            "gpu-stack-pods-forbidden-by-pod-security",
            "no-device-plugin-pod",
        )
    for other in (
        EVENTS.format(ds="trainer", why=PSA),  # a user's workload
        EVENTS.format(ds="kube-sriov-device-plugin-amd64", why=PSA),  # another vendor's plugin
        EVENTS.format(ds="nvidia-dcgm-exporter", why=PSA),  # not what advertises GPUs
        # a user's own pod, its full name (kubectl apply), named after a GPU tool
        'Error from server (Forbidden): error when creating "p.yaml": pods "nvidia-smi-check" is '
        f"forbidden: {PSA}\n",
    ):
        report = diagnose_texts(ruleset, {"events.txt": other})
        assert "gpu-stack-pods-forbidden-by-pod-security" not in fired(report), other


# ---- the GPU Operator's service account denied by RBAC --------------------------------------------
def test_rbac_denying_the_operator_is_named_from_its_own_log(ruleset):
    """controller-runtime's reflector line is klog from a component the analyzer cannot tell: the
    API server's denial it quotes is still read."""
    log = (
        "E0301 08:00:01.000001       1 reflector.go:147] pkg/mod/k8s.io/client-go/tools/cache/"
        "reflector.go:229: Failed to watch *v1.Node: failed to list *v1.Node: nodes is forbidden: "
        'User "system:serviceaccount:gpu-ops:gpu-operator" cannot list resource "nodes" in API '
        'group "" at the cluster scope\n'
    )
    rule, category, _ = verdict_of(ruleset, {"operator.log": log})
    assert (rule, category) == ("gpu-stack-rbac-forbidden", "rbac-patch-forbidden")
    for user in (
        "system:serviceaccount:nvidia-network-operator:network-operator",  # an nvidia-* namespace
        "system:node:dgx-nvidia-a100-01",  # a node
        "oidc:ops@nvidia.example",  # a person
    ):
        other = log.replace("system:serviceaccount:gpu-ops:gpu-operator", user)
        assert "gpu-stack-rbac-forbidden" not in fired(diagnose_texts(ruleset, {"o.log": other}))


# ---- the driver container's SELinux relabel on a host without SELinux -----------------------------
def test_a_driver_container_failing_its_selinux_relabel_is_the_driver(ruleset):
    log = (
        "Change device files security context for selinux compatibility\n"
        "chcon: failed to get security context of 'pts': Operation not supported\n"
        "chcon: can't apply partial context to unlabeled file '/run/nvidia/driver/dev'\n"
        "Stopping NVIDIA persistence daemon...\n"
    )
    rule, category, _ = verdict_of(ruleset, {"nvidia-driver-ctr.log": log})
    assert (rule, category) == ("gpu-operator-driver-failed", "runtime-other")
    prose = f"# driver pod restarts\n\nThe driver pod log ends with\n{log}\nSELinux is off here.\n"
    assert issue_verdict(ruleset, prose)[:2] == ("gpu-operator-driver-failed", "runtime-other")
    nfs = "chcon: failed to get security context of '/mnt/nfs/data': Operation not supported\n"
    assert "gpu-operator-driver-failed" not in fired(diagnose_texts(ruleset, {"init.log": nfs}))


# ---- the toolkit's "unable to load config", with the engine's own wrap ----------------------------
def test_the_toolkit_reading_a_template_as_toml_is_named_in_either_wording(ruleset):
    """Toolkits to v1.16 put the TOML error right after "unable to load config:" (v1.16 in
    lowercase), v1.17 wraps it in "failed to load config:" first: all are the toolkit unable to
    read the runtime's config (RKE2's and K3s' config.toml.tmpl is a Go template, not TOML)."""
    for error in (
        "Error: unable to load config: (2, 3): keys cannot contain { character",
        "error: unable to load config: (2, 3): parsing error: keys cannot contain { character",
        "error running nvidia-toolkit: unable to setup runtime: unable to load config: failed to "
        "load config: (2, 3): parsing error: keys cannot contain { character",
    ):
        log = f'time="2024-03-01T10:00:00Z" level=fatal msg="{error}"\n'
        rule, category, _ = verdict_of(ruleset, {"nvidia-container-toolkit-ctr.log": log})
        assert (rule, category) == (
            "gpu-operator-toolkit-cannot-read-runtime-config",
            "runtime-other",
        )


# ---- a kubectl get nodes table with a node not Ready (left by sessions 38 and 47) -------------------
def test_a_not_ready_row_of_kubectl_get_nodes_is_read(ruleset):
    table = (
        "NAME      STATUS                        ROLES    AGE    VERSION\n"
        "cp-0      Ready                         master   2y3d   v1.30.1+k3s1\n"
        "a100-7    {status:<29} worker   3h4m   v1.30.1+k3s1\n"
    )
    for status in ("NotReady", "Unknown,SchedulingDisabled"):
        rule, category, confidence = verdict_of(ruleset, {"nodes.txt": table.format(status=status)})
        assert (rule, category, confidence) == ("node-not-ready", "scheduling-other", "low")
    ready = diagnose_texts(ruleset, {"nodes.txt": table.format(status="Ready,SchedulingDisabled")})
    assert "node-not-ready" not in fired(ready)


# ---- HAMi's Filter hands kube-scheduler one node (held-out 107) -----------------------------------
def test_a_soft_preference_overruled_by_hamis_filter_is_explained(ruleset):
    """Several nodes fit, HAMi returns its best one: a preferred affinity has nothing to choose
    from. The scores may be pasted alone (the message's tail)."""
    for scores in (
        "find fit node(b-2), 0 nodes not fit, 3 nodes fit(a-1:0.50,b-2:8.00,c-3:2.25)",
        "3 nodes fit(a-1:0.50,b-2:8.00,c-3:2.25)",
    ):
        body = (
            "# preferred node affinity ignored\n\nOur pod prefers a-1 (preferred node affinity, "
            f"weight 80) yet lands on b-2:\n\n```\n{scores}\n```\n"
        )
        rule, category, confidence = issue_verdict(ruleset, body)
        assert (rule, category, confidence) == (
            "hami-filter-leaves-one-node",
            "scheduling-other",
            "low",
        )
    one = "# preferred node affinity ignored\n\n```\n1 nodes fit(b-2:8.00)\n```\n"
    assert issue_verdict(ruleset, one)[0] != "hami-filter-leaves-one-node"


# ---- an empty deploy label keeps the GPU Operator's plugin off the node (held-out 108) -------------
def test_an_empty_device_plugin_deploy_label_is_named(ruleset):
    labels = (
        "Labels:  nvidia.com/gpu.deploy.device-plugin={v}\n         nvidia.com/gpu.present=true\n"
    )
    rule, category, _ = verdict_of(ruleset, {"labels.txt": labels.format(v="")})
    assert (rule, category) == ("gpu-operator-device-plugin-label-empty", "no-device-plugin-pod")
    for value in ("true", "false"):  # false: kept off on purpose (HAMi's plugin serves the node)
        report = diagnose_texts(ruleset, {"labels.txt": labels.format(v=value)})
        assert "gpu-operator-device-plugin-label-empty" not in fired(report)


# ---- "Insufficient" everywhere, and the reporter says the plugin runs (105th, 110th sets) ----------
def test_a_plugin_said_to_run_is_not_read_as_missing(ruleset):
    """Every node short of a GPU is "taken, or none advertised" at low; where the reporter says the
    plugin is deployed and up, the shortage rule speaks (no longer a plugin missing, which this
    rule said until the same session)."""
    event = (
        "```\n  Warning  FailedScheduling  5m  default-scheduler  0/3 nodes are available: "
        "3 Insufficient nvidia.com/gpu.\n```\n"
    )
    assert issue_verdict(ruleset, f"# pending\n\n{event}")[0] == "no-node-offers-a-gpu"
    for said in (
        "The device plugin pods are running on all three nodes.",
        "I installed the nvidia device plugin with helm.",
        "device-plugin 已经正常运行。",
    ):
        rule, category, _ = issue_verdict(ruleset, f"# pending\n\n{said}\n\n{event}")
        assert rule != "no-node-offers-a-gpu" and category == "resource-insufficient", said
