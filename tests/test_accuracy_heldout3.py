"""Issue 21, third measurement: the classes of failure a third set of unseen real cases showed,
each checked on made-up inputs of that class (none copied from a real case): HAMi's registration
contract judged on a node that shows no sign of HAMi, a command pasted with Red Hat's default
shell prompt before the object it printed, and a node object nothing of which could be read."""

from __future__ import annotations

from analyzer.analyze import AnalyzeOptions, Issue, analyze
from analyzer.structured import load_documents
from conftest import diagnose_texts, fired, parse_texts

# a node as NVIDIA's own device plugin leaves it: nvidia.com/gpu advertised, no hami.io key
PLAIN_NODE = """apiVersion: v1
kind: Node
metadata:
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: gpu-07
  name: gpu-07
status:
  allocatable:
    cpu: "16"
    nvidia.com/gpu: "2"
  capacity:
    cpu: "16"
    nvidia.com/gpu: "2"
"""


def _primary(ruleset, files: dict[str, str]):
    return diagnose_texts(ruleset, files).primary


def _issue(ruleset, text: str):
    return analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report.primary


# ---- HAMi's registration contract needs a HAMi node -------------------------------------------
def test_a_node_with_no_sign_of_hami_is_not_missing_hamis_annotation(ruleset):
    """NVIDIA's plugin never writes hami.io/node-nvidia-register: its absence convicts nothing."""
    r = diagnose_texts(ruleset, {"node.yaml": PLAIN_NODE})
    assert "register-annotation-absent" not in fired(r.nodes[0])
    assert r.primary.category != "annotation-missing-or-stale"


def test_the_schedulers_handshake_makes_it_a_hami_node(ruleset):
    """hami-scheduler stamps Requesting_ on every node it lists: the plugin never patched this one."""
    node = PLAIN_NODE.replace(
        '    node.alpha.kubernetes.io/ttl: "0"\n',
        '    node.alpha.kubernetes.io/ttl: "0"\n    hami.io/node-handshake: "Requesting_2025-03-02'
        ' 08:00:00"\n',
    )
    p = _primary(ruleset, {"node.yaml": node})
    assert (p.rule_id, p.category) == ("register-annotation-absent", "annotation-missing-or-stale")


def test_the_gpu_on_label_makes_it_a_hami_node(ruleset):
    node = PLAIN_NODE.replace(
        "    kubernetes.io/hostname", '    gpu: "on"\n    kubernetes.io/hostname'
    )
    assert _primary(ruleset, {"node.yaml": node}).rule_id == "register-annotation-absent"


# ---- a command pasted before the object, with Red Hat's default prompt --------------------------
RHEL_PASTE = "[admin@gpu-07 ~]$ kubectl get node gpu-07 -o yaml\n" + PLAIN_NODE


def test_a_red_hat_prompt_line_before_the_object_is_not_part_of_it():
    docs, warnings = load_documents(RHEL_PASTE)
    assert docs[0]["metadata"]["name"] == "gpu-07"
    assert warnings == []


def test_a_node_pasted_after_a_red_hat_prompt_is_read_in_an_issue(ruleset):
    text = "# GPU still allocatable?\n\n```\n" + RHEL_PASTE.replace("$ ", "# ", 1) + "```\n"
    r = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
    node = r.nodes[0]
    assert node.node == "gpu-07"
    assert "no-gpu-label" not in fired(node)
    assert r.primary.confidence != "high"


def test_red_hat_prompts_split_a_paste_into_its_commands(ruleset):
    text = (
        "[root@gpu-07 ~]# kubectl get pods -n kube-system -o wide\n"
        "NAME                         READY   STATUS             RESTARTS   AGE   IP          NODE\n"
        "hami-device-plugin-x2k       1/2     CrashLoopBackOff   7          2d    10.1.0.4    gpu-07\n"
        "[root@gpu-07 ~]# kubectl logs -n kube-system hami-device-plugin-x2k -c device-plugin\n"
        "I0301 08:00:01.000000       1 main.go:157] Starting FS watcher.\n"
        "E0301 08:00:01.000000       1 main.go:132] failed to initialize NVML: ERROR_UNKNOWN\n"
    )
    arts = parse_texts(ruleset, {"paste.txt": text}).artefacts
    assert [(a.kind, a.container) for a in arts] == [
        ("pods-list", None),
        ("device-plugin-log", "device-plugin"),
    ]


# ---- a node object nothing of which could be read ---------------------------------------------
def test_an_unreadable_node_object_says_nothing_about_the_node(ruleset):
    """Every section unknown, not empty: no 'no gpu=on label, no GPU resource' verdict from it."""
    # a flow sequence where the object should start: YAML reads a list, then breaks at line 2
    broken = "[gpu-07, x]\nkind: Node\nmetadata:\n  name: gpu-07\nstatus:\n  allocatable:\n    cpu: '8'\n"
    r = diagnose_texts(ruleset, {"node.yaml": broken})
    node = r.nodes[0]
    assert not {"no-gpu-label", "gpu-resource-absent-from-capacity"} & set(fired(node))
    assert r.primary.confidence != "high"


def test_json_printed_after_a_prompt_is_read():
    text = '$ kubectl get node gpu-07 -o json\n{"kind": "Node", "metadata": {"name": "gpu-07"}}\n'
    docs, warnings = load_documents(text)
    assert (docs, warnings) == ([{"kind": "Node", "metadata": {"name": "gpu-07"}}], [])


# ---- the DaemonSet's state in the reporter's words --------------------------------------------
def test_a_device_plugin_daemonset_with_0_desired_in_words_is_no_plugin_pod(ruleset):
    p = _issue(ruleset, "# device plugin daemonset has 0 desired\n\nNothing else to add.\n")
    assert (p.rule_id, p.category, p.confidence) == (
        "plugin-pod-missing-described",
        "no-device-plugin-pod",
        "low",
    )


def test_a_named_taint_is_why_no_plugin_pod_runs(ruleset):
    text = (
        "# no device plugin pod on the GPU node\n\nThe nvidia-device-plugin DaemonSet does not"
        " tolerate the taint of our GPU nodes, so 0 desired.\n"
    )
    p = _issue(ruleset, text)
    assert (p.rule_id, p.category) == ("plugin-taint-described", "no-device-plugin-pod")


# ---- a hardware fault named in the reporter's words -------------------------------------------
def test_an_uncorrectable_ecc_error_in_words_is_a_faulty_gpu(ruleset):
    text = (
        "# jobs on one GPU always fail\n\nThe second GPU has an uncorrectable ECC error but the"
        " device plugin still reports it healthy, so pods keep landing on it.\n"
    )
    p = _issue(ruleset, text)
    assert (p.rule_id, p.category, p.confidence) == (
        "gpu-hardware-fault",
        "device-unhealthy",
        "low",
    )
    assert "uncorrectable ECC error" in p.title


def test_the_ecc_column_of_nvidia_smi_is_no_fault(ruleset):
    text = (
        "# which GPU is free?\n\n```\n+------------------------------------------------------+\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "|   0  Tesla T4            Off  | 00000000:00:1E.0 Off |                    0 |\n```\n"
    )
    assert _issue(ruleset, text).rule_id != "gpu-hardware-fault"


# ---- Volcano's GPU-share plugin, not HAMi's, behind the kubelet's admission error --------------
def test_volcanos_gpu_share_allocate_error_is_its_own_cause(ruleset):
    describe = (
        "Events:\n  Type     Reason                    Age   From     Message\n"
        "  ----     ------                    ----  ----     -------\n"
        "  Warning  UnexpectedAdmissionError  9s    kubelet  Allocate failed due to rpc error:"
        " code = Unknown desc = failed to find gpu id, which is unexpected\n"
    )
    r = diagnose_texts(ruleset, {"describe.txt": describe})
    assert (r.primary.rule_id, r.primary.category) == (
        "volcano-gpushare-allocation-missing",
        "scheduling-other",
    )
    top = next(f for f in r.nodes[0].findings if f.rule_id == r.primary.rule_id)
    assert "allocate-failed-at-admission" in [c.rule_id for c in top.consequences]
    assert "HAMi" not in top.explanation
