"""Decoding, cleaning, and recognising files by content."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.bundle.sniff import sniff
from analyzer.bundle.text import clean, decode, looks_binary, rejoin_hard_wraps


def test_decode_bom_and_invalid_bytes():
    text, warns = decode(b"\xef\xbb\xbfkind: Node\n")
    assert text == "kind: Node\n" and warns == []
    text, warns = decode(b"abc \xff\xfe def")
    assert "\ufffd" in text and warns == ["non-UTF-8 bytes replaced with U+FFFD"]
    text, _ = decode("kind: Node\n".encode("utf-16"))
    assert text == "kind: Node\n"


def test_clean_crlf_and_ansi():
    assert clean("a\r\nb\rc") == "a\nb\nc"
    assert clean("\x1b[31mE0815\x1b[0m boom") == "E0815 boom"


def test_binary_detection():
    assert looks_binary(b"\x00\x01\x02" * 100)
    assert not looks_binary(b"I0815 09:04:51.202341  412873 main.go:275] ok\n")


def _by_each_byte(head: bytes) -> bool:
    """What looks_binary computed before: the control bytes counted one by one."""
    if not head:
        return False
    sample = head[:8192]
    if b"\x00" in sample:
        return True
    controls = sum(1 for b in sample if b < 9 or (13 < b < 32 and b != 27))
    return controls / len(sample) > 0.05


@settings(max_examples=400, deadline=None)
@given(
    head=st.binary(max_size=300)
    | st.lists(
        st.sampled_from([b"a", b"\t", b"\n", b"\x1b", b"\x01", b"\x0e", b"\x1f", b"\xff"])
    ).map(b"".join)
    | st.builds(lambda a, n: a * n, st.binary(min_size=1, max_size=3), st.integers(2800, 3000))
)
def test_binary_detection_counts_control_bytes_as_each_byte_did(head):
    """Every byte value, texts near the 5 % share, and heads longer than the 8 KiB looked at."""
    assert looks_binary(head) == _by_each_byte(head)


def test_rejoin_fixed_width_wraps():
    w = 80
    long1 = "I0815 09:04:51.202341  412873 register.go:303] Annotation content: " + "x" * 60
    long2 = "I0815 09:04:52.202341  412873 register.go:303] Annotation content: " + "y" * 70
    long3 = "I0815 09:04:53.202341  412873 register.go:303] Annotation content: " + "z" * 90
    wrapped = []
    for ln in (long1, long2, long3):
        wrapped += [ln[i : i + w] for i in range(0, len(ln), w)]
    joined, numbers, joins = rejoin_hard_wraps(wrapped)
    assert joined == [long1, long2, long3]
    assert numbers == [1, 3, 5]
    assert joins == 3


CASES = {
    "node": "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n",
    "node-json": '{\n  "apiVersion": "v1",\n  "kind": "Node",\n  "metadata": {"name": "n1"}\n}',
    "node-list": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n",
    "node-describe": "Name:               n1\nRoles:              <none>\nLabels:             gpu=on\nCapacity:\n  nvidia.com/gpu: 10\n",
    "pod": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
    # kubectl get -o yaml: keys sorted (the List's kind last), a config inside an item's data
    "configmap": "apiVersion: v1\nitems:\n- apiVersion: v1\n  data:\n    config.yaml: |\n      kind: KubeSchedulerConfiguration\n  kind: ConfigMap\n  metadata:\n    name: s\nkind: List\n",
    "pod-describe": "Name:         p\nNamespace:    default\nContainers:\n  c:\n    State: Running\nEvents:\n  Type  Reason  Age  From  Message\n",
    "helm-values": "devicePlugin:\n  deviceSplitCount: 10\nscheduler:\n  leaderElect: true\n",
    "toolkit-config": '[nvidia-container-runtime]\nmode = "cdi"\n[nvidia-container-runtime.modes.cdi]\ndefault-kind = "management.nvidia.com/gpu"\n',
    "containerd-config": 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n',
    "cdi-spec": "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n",
    "pods-list": "NAME                       READY   STATUS    RESTARTS   AGE\nhami-device-plugin-x   2/2     Running   0          1d\n",
    "events": "LAST SEEN   TYPE      REASON             OBJECT                         MESSAGE\n2m          Warning   FailedScheduling   pod/vllm-0   0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n",
    "collect-manifest": '{\n  "kind": "CollectManifest",\n  "apiVersion": "hami-analyzer/v1",\n  "calls": [{"command": "kubectl get node n -o yaml"}]\n}\n',
    "nvidia-smi": "Attached GPUs                             : 1\nGPU 00000000:00:07.0\n    Product Name : Tesla T4\n",
    "device-plugin-log": "I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-2\n",
    "scheduler-log": 'I0815 09:05:01.107301       1 scheduler.go:414] "Entering RegisterFromNodeAnnotations"\n',
    "kube-scheduler-log": 'I1115 09:55:55.235641       1 schedule_one.go:81] "Attempting to schedule pod" pod="default/gpu-pod"\n',
    "klog": "I1115 09:55:55.235641       1 other.go:81] something\n",
    "text": "hello, this is prose\n",
    "empty": "  \n\n",
}


@pytest.mark.parametrize("expected", sorted(CASES))
def test_sniff_kinds(ruleset, expected):
    kind, reason = sniff(CASES[expected], ruleset.catalogue)
    want = expected.split("-json")[0].replace("node-list", "node")
    assert kind == want, reason
    assert reason


def test_prefixed_log_is_recognised(ruleset):
    text = "[pod/hami-device-plugin-7xk2p/device-plugin] 2026-08-15T09:04:51.202341Z I0815 09:04:51.202341  412873 main.go:275] Start working on node n\n"
    assert sniff(text, ruleset.catalogue)[0] == "device-plugin-log"
    cri = "2023-10-19T14:25:03.801614288+08:00 stderr F I1019 06:25:03.801505  4106 main.go:275] Start working on node n\n"
    assert sniff(cri, ruleset.catalogue)[0] == "device-plugin-log"
