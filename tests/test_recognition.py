"""How mixed pastes are split into artefacts and what each artefact is recognised as.

Every paste is written the way kubectl and HAMi print it; the kind ids are those of
rules/kinds.yaml."""

from __future__ import annotations

import pytest

from conftest import SAMPLES, diagnose_texts, fired, parse_texts

HEALTHY = SAMPLES / "healthy-single-gpu" / "bundle"
GPU_A = "GPU-fc28df76-54d2-c387-e52e-5f0a9495968c"
REGISTER = (
    f'[{{"id":"{GPU_A}","count":10,"devmem":46068,"devcore":100,"type":"NVIDIA L40S",'
    f'"mode":"hami-core","health":true}}]'
)

PODS_WIDE = """\
NAMESPACE     NAME                                READY   STATUS    RESTARTS   AGE   IP            NODE         NOMINATED NODE   READINESS GATES
kube-system   hami-device-plugin-7xk2p            2/2     Running   0          3d    10.244.3.12   gpu-node-1   <none>           <none>
kube-system   hami-scheduler-5d8f9c7b6d-qwz4l     2/2     Running   0          3d    10.244.1.7    master-1     <none>           <none>
default       gpu-pod-1                           0/1     Pending   0          12m   <none>        <none>       <none>           <none>
"""
EVENTS = """\
Events:
  Type     Reason            Age                From            Message
  ----     ------            ----               ----            -------
  Warning  FailedScheduling  2m (x5 over 12m)   hami-scheduler  0/3 nodes are available: 3 node unregistered. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.
  Warning  FilteringFailed   2m (x5 over 12m)   hami-scheduler  no available node, all node scores do not meet
"""
CAPACITY = """\
Capacity:
  cpu:                64
  ephemeral-storage:  959218776Ki
  memory:             527915648Ki
  nvidia.com/gpu:     10
  pods:               110
Allocatable:
  cpu:                64
  ephemeral-storage:  884016791112
  memory:             527813248Ki
  nvidia.com/gpu:     10
  pods:               110
"""
NODE_DESCRIBE = (
    """\
Name:               gpu-node-1
Roles:              <none>
Labels:             gpu=on
                    kubernetes.io/hostname=gpu-node-1
Annotations:        hami.io/node-handshake: Requesting_2026-08-15 10:19:30
CreationTimestamp:  Mon, 02 Mar 2026 08:11:09 +0000
Taints:             <none>
Unschedulable:      false
"""
    + CAPACITY
    + """\
Allocated resources:
  (Total limits may be over 100 percent, i.e., overcommitted.)
  Resource           Requests    Limits
  --------           --------    ------
  cpu                1250m (1%)  500m (0%)
  nvidia.com/gpu     1           1
Events:              <none>
"""
)
POD_DESCRIBE = """\
Name:             gpu-pod-1
Namespace:        default
Priority:         0
Service Account:  default
Node:             <none>
Labels:           <none>
Annotations:      hami.io/vgpu-time: 1786785164
Status:           Pending
IP:
IPs:              <none>
Containers:
  cuda:
    Image:      nvidia/cuda:12.4.1-base-ubuntu22.04
    Port:       <none>
    Host Port:  <none>
    Command:
      sleep
      infinity
    Limits:
      nvidia.com/gpu:     1
      nvidia.com/gpumem:  3000
    Requests:
      nvidia.com/gpu:     1
      nvidia.com/gpumem:  3000
QoS Class:                   BestEffort
Node-Selectors:              <none>
Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
Events:
  Type     Reason            Age   From            Message
  ----     ------            ----  ----            -------
  Warning  FailedScheduling  30s   hami-scheduler  0/3 nodes are available: 3 CardInsufficientMemory.
"""


def script_pod(script: str) -> str:
    """`kubectl describe pod` of a pod run as `sh -c SCRIPT`: kubectl prints each line of the
    script at the container's field indentation (six spaces), blank lines as indentation only."""
    body = "\n".join("      " + line for line in script.split("\n"))
    return f"""\
Name:             cuda-check-6b7f9d8c4-x2lqp
Namespace:        ml-team
Priority:         0
Service Account:  default
Node:             gpu-node-1/10.0.4.21
Start Time:       Sat, 15 Aug 2026 09:12:44 +0000
Labels:           app=cuda-check
                  pod-template-hash=6b7f9d8c4
Annotations:      hami.io/bind-phase: success
                  hami.io/bind-time: 1786785164
                  hami.io/vgpu-devices-allocated: {GPU_A},NVIDIA,3000,30:;
                  hami.io/vgpu-node: gpu-node-1
Status:           Running
IP:               10.244.3.41
Controlled By:  ReplicaSet/cuda-check-6b7f9d8c4
Containers:
  cuda:
    Container ID:  containerd://8c1e0d6f5e2b
    Image:         nvidia/cuda:12.4.1-base-ubuntu22.04
    Port:          <none>
    Host Port:     <none>
    Command:
      sh
      -c
{body}
    State:          Running
      Started:      Sat, 15 Aug 2026 09:12:50 +0000
    Ready:          True
    Restart Count:  0
    Limits:
      nvidia.com/gpu:     1
      nvidia.com/gpumem:  3000
    Requests:
      nvidia.com/gpu:     1
      nvidia.com/gpumem:  3000
    Environment:
      NODE_NAME:   (v1:spec.nodeName)
QoS Class:                   BestEffort
Node-Selectors:              <none>
Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
Events:
  Type    Reason     Age   From            Message
  ----    ------     ----  ----            -------
  Normal  Scheduled  2m    hami-scheduler  Successfully assigned ml-team/cuda-check-6b7f9d8c4-x2lqp to gpu-node-1
  Normal  Started    2m    kubelet         Started container cuda
"""


def lines_of(path, start: int, stop: int) -> str:
    return "".join(path.read_text().splitlines(keepends=True)[start:stop])


def parts(ruleset, text: str, name: str = "paste.txt") -> list[tuple[str, int, str]]:
    """(kind, first line, the artefact's own first line) of every artefact of one pasted file."""
    bundle = parse_texts(ruleset, {name: text})
    return [(a.kind, a.first_line, (a.text or "").split("\n")[0]) for a in bundle.artefacts]


def line_no(text: str, startswith: str) -> int:
    return next(i for i, x in enumerate(text.split("\n"), 1) if x.startswith(startswith))


# ---- (a) pods table, blank line, describe events ---------------------------------------------
def test_pods_table_then_describe_events(ruleset):
    """`kubectl get pods -A -o wide`, a blank line, a describe's Events: pods-list then pod-describe."""
    text = PODS_WIDE + "\n" + EVENTS
    got = parts(ruleset, text)
    assert [(k, n) for k, n, _ in got] == [("pods-list", 1), ("pod-describe", 6)]
    assert got[0][2].startswith("NAMESPACE") and got[1][2] == "Events:"


def test_prompts_stay_with_the_table_and_the_describe(ruleset):
    """With the commands pasted too, each prompt line stays in the artefact of its output."""
    text = (
        "$ kubectl get pods -A -o wide\n"
        + PODS_WIDE
        + "\n$ kubectl describe pod gpu-pod-1 -n default\n"
        + POD_DESCRIBE
    )
    got = parts(ruleset, text)
    assert [(k, n) for k, n, _ in got] == [("pods-list", 1), ("pod-describe", 7)]
    assert got[1][2] == "$ kubectl describe pod gpu-pod-1 -n default"


# ---- (b) describe node fragment directly followed by a pod describe -------------------------
def test_capacity_fragment_then_pod_describe_splits_at_name(ruleset):
    """A Capacity/Allocatable fragment and, with no blank line, a pod describe: split at `Name:`."""
    text = CAPACITY + POD_DESCRIBE
    got = parts(ruleset, text)
    assert [(k, n) for k, n, _ in got] == [
        ("node-describe", 1),
        ("pod-describe", line_no(text, "Name:")),
    ]
    assert got[1][2].startswith("Name:             gpu-pod-1")


def test_full_node_describe_then_pod_describe(ruleset):
    """A whole `kubectl describe node` followed directly by a pod's: two objects, both parsed."""
    text = NODE_DESCRIBE + POD_DESCRIBE
    bundle = parse_texts(ruleset, {"describe.txt": text})
    kinds = [(a.kind, a.first_line) for a in bundle.artefacts]
    assert kinds == [("node-describe", 1), ("pod-describe", line_no(text, "Name:             gpu"))]
    assert [n.name for n in bundle.nodes] == ["gpu-node-1"]
    assert bundle.nodes[0].allocatable.get("nvidia.com/gpu") == "10"
    assert [p.name for p in bundle.pods] == ["gpu-pod-1"]


# ---- (c) a pod describe whose command is a shell script ------------------------------------
def test_pod_describe_with_echo_script_stays_one_artefact(ruleset):
    """`sh -c` script lines that echo HAMi log messages do not make a pod describe a log."""
    script = (
        'echo "Start working on node $NODE_NAME"\n'
        'echo "Waiting for /run/nvidia/validations/toolkit-ready"\n'
        "sleep infinity"
    )
    got = parts(ruleset, script_pod(script))
    assert [(k, n) for k, n, _ in got] == [("pod-describe", 1)]


@pytest.mark.parametrize("copied", [False, True], ids=["as-printed", "copied-from-terminal"])
def test_pod_describe_with_multiline_script_stays_one_artefact(ruleset, copied):
    """A Command script with an empty line and an `nvidia-smi` line stays one pod-describe."""
    script = (
        'echo "I0815 09:00:00.000500  412873 main.go:275] Start working on node $NODE_NAME"\n'
        "\n"
        "nvidia-smi\n"
        "sleep infinity"
    )
    text = script_pod(script)
    if copied:  # terminals drop trailing white space when text is copied
        text = "\n".join(x.rstrip() for x in text.split("\n"))
    got = parts(ruleset, text)
    assert [(k, n) for k, n, _ in got] == [("pod-describe", 1)]


# ---- (d) (e) node annotations pasted on their own ------------------------------------------
ANNOTATIONS_BLOCK = f"""\
Annotations:        hami.io/node-handshake: Requesting_2026-08-15 10:19:30
                    hami.io/node-nvidia-register:
                      {REGISTER}
                    node.alpha.kubernetes.io/ttl: 0
                    volumes.kubernetes.io/controller-managed-attach-detach: true
"""


def test_bare_annotations_block_is_node_annotations(ruleset):
    """An `Annotations:` block of describe node with HAMi's keys is node-annotations."""
    assert [(k, n) for k, n, _ in parts(ruleset, ANNOTATIONS_BLOCK)] == [("node-annotations", 1)]


def test_bare_annotations_block_keeps_the_wrapped_register_value(ruleset):
    """kubectl puts a long annotation value on the next line; the register value is read from it."""
    bundle = parse_texts(ruleset, {"annotations.txt": ANNOTATIONS_BLOCK})
    [node] = bundle.nodes
    assert node.annotations["hami.io/node-handshake"] == "Requesting_2026-08-15 10:19:30"
    assert node.annotations["hami.io/node-nvidia-register"] == REGISTER
    report = diagnose_texts(ruleset, {"annotations.txt": ANNOTATIONS_BLOCK})
    assert "register-annotation-empty" not in fired(report)
    assert report.worst.register is not None and len(report.worst.register.devices) == 1


def test_bare_annotations_block_with_cut_value_is_elided_not_empty(ruleset):
    """A register value kubectl shortened with `...` is known to be cut, not an empty annotation."""
    cut = ANNOTATIONS_BLOCK.replace(REGISTER, REGISTER[:138] + "...")
    bundle = parse_texts(ruleset, {"annotations.txt": cut})
    [node] = bundle.nodes
    assert node.annotations["hami.io/node-nvidia-register"] != ""
    assert "hami.io/node-nvidia-register" in node.elided


def test_bare_register_value_is_node_annotations(ruleset):
    """The register value alone (`kubectl get node -o jsonpath=...`) is node-annotations."""
    got = parts(ruleset, REGISTER + "\n")
    assert [(k, n) for k, n, _ in got] == [("node-annotations", 1)]
    [node] = parse_texts(ruleset, {"register.txt": REGISTER + "\n"}).nodes
    assert node.annotations["hami.io/node-nvidia-register"] == REGISTER


# ---- (f) Lease -------------------------------------------------------------------------------
LEASE_YAML = """\
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  creationTimestamp: "2026-03-02T08:15:40Z"
  name: hami-scheduler
  namespace: kube-system
  resourceVersion: "48213377"
  uid: 5b0f3c1e-8f0a-4d7e-9a51-6c2f1e7d3b90
spec:
  acquireTime: "2026-08-14T22:03:11.204918Z"
  holderIdentity: hami-scheduler-5d8f9c7b6d-qwz4l
  leaseDurationSeconds: 15
  leaseTransitions: 3
  renewTime: "2026-08-15T10:19:58.881230Z"
"""


def test_lease_yaml_is_lease(ruleset):
    """`kubectl get lease -n kube-system hami-scheduler -o yaml` is a lease."""
    assert [(k, n) for k, n, _ in parts(ruleset, LEASE_YAML, "lease.yaml")] == [("lease", 1)]


def test_lease_json_is_lease(ruleset):
    """The same Lease as `-o json` is a lease too."""
    import json

    import yaml

    text = json.dumps(yaml.safe_load(LEASE_YAML), indent=4) + "\n"
    assert [k for k, _, _ in parts(ruleset, text, "lease.json")] == ["lease"]


# ---- (f2) a YAML object with other text right after it, no blank line -------------------------
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vector-add
spec:
  template:
    spec:
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
            #hostPID: true
      containers:
        - name: cuda
          resources:
            limits:
              volcano.sh/vgpu-number: "1"
"""
BANNER = "[HAMI-core Msg(20:140472710489920:libvgpu.c:838)]: Initializing.....\n"
PLUGIN_LINE = (
    "I0815 09:04:51.182204    2071 register.go:191] Reporting devices GPU-1 in 2024-08-15\n"
)


@pytest.mark.parametrize(
    "after, kind",
    [
        ("[... ...]\n" + BANNER, "workload-log"),
        (BANNER, "workload-log"),
        (PLUGIN_LINE * 3, "device-plugin-log"),
    ],
)
def test_yaml_then_other_lines_splits_where_the_yaml_ends(ruleset, after, kind):
    """A Deployment pasted with a HAMi-core banner or device-plugin lines right after it: the
    YAML's parse error used to swallow them, so they were never scanned. Split at the first
    column-0 line no YAML block can hold, when the text parses only without it."""
    got = parts(ruleset, DEPLOYMENT + after)
    assert [(k, n) for k, n, _ in got] == [("deployment", 1), (kind, DEPLOYMENT.count("\n") + 1)]


@pytest.mark.parametrize(
    "text",
    [
        DEPLOYMENT,  # every column-0 line is a key
        "---\n# a comment\n" + LEASE_YAML + "...\n",  # markers and comments
        'apiVersion: v1\nkind: ConfigMap\ndata:\n  a: "x\ny"\n',  # valid YAML at column 0
        '[nvidia-container-cli]\nroot = "/run/nvidia/driver"\n[nvidia-container-runtime]\n',
        (  # a TOML string holding ": " on the first line
            'description = "containerd config: managed by k3s"\nversion = 2\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n'
        ),
    ],
)
def test_yaml_that_parses_and_other_formats_stay_whole(ruleset, text):
    """Valid YAML (whatever its column-0 lines), and TOML, are never cut."""
    got = parts(ruleset, text)
    assert len(got) == 1, got


# ---- (g) pods rows without their header ------------------------------------------------------
def test_headerless_pod_rows_are_pods_list(ruleset):
    """`kubectl get pods -A -o wide | grep hami` (no NAME header) is a pods-list."""
    rows = "\n".join(PODS_WIDE.split("\n")[1:3]) + "\n"
    assert not rows.startswith("NAMESPACE")
    assert [(k, n) for k, n, _ in parts(ruleset, rows)] == [("pods-list", 1)]


def test_headerless_pod_rows_without_namespace_are_pods_list(ruleset):
    """`kubectl get pods -n kube-system -o wide | grep hami` rows (no namespace column) too."""
    rows = (
        "hami-device-plugin-7xk2p          2/2   Running            0             3d    10.244.3.12   gpu-node-1   <none>   <none>\n"
        "hami-device-plugin-q8mzt          1/2   CrashLoopBackOff   14 (2m ago)   47m   10.244.4.9    gpu-node-2   <none>   <none>\n"
    )
    assert [(k, n) for k, n, _ in parts(ruleset, rows)] == [("pods-list", 1)]


# ---- (h) shell prompt then klog lines --------------------------------------------------------
def test_kubectl_logs_prompt_stays_with_device_plugin_log(ruleset):
    """`$ kubectl logs ... -c device-plugin` then klog lines: one device-plugin-log with the prompt."""
    prompt = "$ kubectl logs -n kube-system hami-device-plugin-xxx -c device-plugin"
    text = prompt + "\n" + lines_of(HEALTHY / "device-plugin.log", 0, 12)
    bundle = parse_texts(ruleset, {"paste.txt": text})
    [art] = bundle.artefacts
    assert (art.kind, art.first_line, art.container) == ("device-plugin-log", 1, "device-plugin")
    assert art.text.split("\n")[0] == prompt


def test_container_flag_decides_when_lines_have_no_marker(ruleset):
    """klog lines without any device-plugin marker are still that log under `-c device-plugin`."""
    prompt = "$ kubectl logs -n kube-system hami-device-plugin-xxx -c device-plugin"
    text = (
        prompt + "\n"
        "I0815 09:00:00.000800  412873 main.go:348] Loading configuration.\n"
        "I0815 09:00:00.000900  412873 config.go:485] Reading config file from path: /device-config.yaml\n"
        "I0815 09:00:00.001000  412873 config.go:495] Successfully read and parsed config file\n"
    )
    assert [(k, n) for k, n, _ in parts(ruleset, text)] == [("device-plugin-log", 1)]


def test_two_pasted_commands_make_two_logs(ruleset):
    """Two `user@host:~#` prompts: the plugin's log, then the scheduler's, each with its command."""
    dp_cmd = (
        "root@master-1:~# kubectl logs -n kube-system hami-device-plugin-7xk2p -c device-plugin"
    )
    sch_cmd = (
        "root@master-1:~# kubectl logs -n kube-system deploy/hami-scheduler "
        "-c vgpu-scheduler-extender --tail=4"
    )
    dp = lines_of(HEALTHY / "device-plugin.log", 19, 24)
    text = dp_cmd + "\n" + dp + sch_cmd + "\n" + lines_of(HEALTHY / "scheduler.log", 0, 4)
    got = parts(ruleset, text)
    assert got == [
        ("device-plugin-log", 1, dp_cmd),
        ("scheduler-log", dp.count("\n") + 2, sch_cmd),
    ]


# ---- (i) a Markdown issue with fenced blocks --------------------------------------------------
def issue_markdown(indent: str = "") -> str:
    node = "".join(indent + x for x in (HEALTHY / "node.yaml").read_text().splitlines(True))
    log = "".join(indent + x for x in lines_of(HEALTHY / "scheduler.log", 0, 12).splitlines(True))
    bullet = "- " if indent else ""
    return (
        "### What happened:\n\n"
        "The pod stays Pending and the scheduler finds no node. HAMi v2.10.0, one L40S.\n\n"
        f"{bullet}The node:\n\n"
        f"{indent}```yaml\n{node}{indent}```\n\n"
        f"{bullet}The scheduler log:\n\n"
        f"{indent}```\n{log}{indent}```\n\n"
        "### Environment:\n- Kubernetes: v1.30.4\n"
    )


def test_markdown_issue_fenced_blocks(ruleset):
    """Fenced node YAML and scheduler log in an issue.md are recognised from the line after the fence."""
    text = issue_markdown()
    got = {k: (n, first) for k, n, first in parts(ruleset, text, "issue.md")}
    assert got["node"] == (line_no(text, "```yaml") + 1, "apiVersion: v1")
    log_fence = [i for i, x in enumerate(text.split("\n"), 1) if x == "```"][1]
    assert got["scheduler-log"][0] == log_fence + 1
    assert got["scheduler-log"][1].startswith("I0815 09:00:10.000030")
    bundle = parse_texts(ruleset, {"issue.md": text})
    assert [n.name for n in bundle.nodes] == ["gpu-node-1"]
    assert not any("```" in (a.text or "") for a in bundle.artefacts)


def test_markdown_fences_indented_under_a_list_item(ruleset):
    """Fences indented under a list item: recognised, and their klog lines parsed without the indent."""
    text = issue_markdown(indent="  ")
    bundle = parse_texts(ruleset, {"issue.md": text})
    kinds = {a.kind: a for a in bundle.artefacts}
    assert "node" in kinds and "scheduler-log" in kinds
    assert [n.name for n in bundle.nodes] == ["gpu-node-1"]
    [log] = [x for x in bundle.logs if x.artefact.kind == "scheduler-log"]
    assert log.frame["sev"].drop_nulls().len() == 12


def test_code_between_triple_backticks_on_one_line_is_inline_code(ruleset):
    """ "```text```" on one line is GitHub's inline code, no fence: its text is kept (a fence's
    info string holds no backtick), and a real fence still opens and closes a block."""
    line = '```kubectl apply failed: The Pod "p" is invalid: spec.resources```'
    bundle = parse_texts(ruleset, {"notes.txt": "before\n" + line + "\nafter\n"})
    assert any(line in (a.text or "") for a in bundle.artefacts)
    fenced = parse_texts(ruleset, {"notes.txt": "```\nI0815 09:00:10.000030 1 x.go:1] a\n```\n"})
    assert not any("```" in (a.text or "") for a in fenced.artefacts)


# ---- lines left out, and a config's keys before its first table ------------------------------
SMI_ROWS = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
|   0  NVIDIA A10                     Off |   00000000:04:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""
TOOLKIT_TOP = """\
accept-nvidia-visible-devices-as-volume-mounts = true
accept-nvidia-visible-devices-envvar-when-unprivileged = false
disable-require = false
"""
TOOLKIT_TABLES = """\
[nvidia-container-cli]
load-kmods = true
ldconfig = "@/sbin/ldconfig.real"

[nvidia-container-runtime]
log-level = "info"
mode = "auto"
runtimes = ["docker-runc", "runc", "crun"]
"""


@pytest.mark.parametrize("marker", ["[... ...]", "[...]", "...", "…"])
def test_a_line_marking_lines_left_out_separates_two_things(ruleset, marker):
    """An elision line between two things pasted without a blank line is a boundary: the config
    after the nvidia-smi table is a config, its keys before the first table included."""
    text = SMI_ROWS + marker + "\n" + TOOLKIT_TOP + "\n" + TOOLKIT_TABLES
    got = parts(ruleset, text)
    assert [k for k, _, _ in got] == ["nvidia-smi", "toolkit-config"], got
    assert got[1][1] == line_no(text, "accept-nvidia-visible-devices-as-volume-mounts")
    report = diagnose_texts(ruleset, {"paste.txt": text})
    assert "toolkit-ignores-visible-devices-when-unprivileged" in fired(report)


def test_an_elision_inside_one_log_keeps_it_one_log(ruleset):
    log = (
        "I0516 16:20:01.000001       1 main.go:235] Starting FS watcher.\n"
        "I0516 16:20:01.000002       1 main.go:242] Starting OS watcher.\n"
        "...\n"
        "I0516 16:20:02.000003       1 server.go:165] Starting GRPC server for 'nvidia.com/gpu'\n"
        "I0516 16:20:02.000004       1 server.go:117] Starting to serve 'nvidia.com/gpu' on "
        "/var/lib/kubelet/device-plugins/nvidia-gpu.sock\n"
    )
    assert [k for k, _, _ in parts(ruleset, log, "plugin.log")] == ["device-plugin-log"]
