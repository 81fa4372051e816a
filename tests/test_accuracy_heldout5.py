"""Fifth to seventh measurements (issue 25, sessions 37 and 38): the classes of failure three sets
of unseen real cases showed that rules can take, checked on made-up inputs of each class (none
copied from a real case): a reporter who says there is no device-plugin pod in the other Chinese
word order, or that it did not install, or gives the DaemonSet's READY count as a dashboard shows
it; who expects allocatable to fall as pods take GPUs (it never does), or says it is below
capacity (unhealthy GPUs); who says the plugin's DaemonSet fails to initialize NVML; who says the
NVIDIA runtime is not the node's default, so GPU pods work only with runtimeClassName nvidia."""

from __future__ import annotations

import pytest

from analyzer.analyze import AnalyzeOptions, Issue, analyze


def _primary(ruleset, title: str, body: str):
    text = f"# {title}\n\n{body}\n"
    return analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report.primary


# each class, in a reporter's words: the category it points at
POINTING = [
    (
        "GPU 节点没有资源",
        "部署了 HAMi v2.4.1，kube-system 下面没有 hami-device-plugin 的 pod，只有调度器。",
        "no-device-plugin-pod",
    ),
    (
        "GPU 节点没有资源",
        "集群里 DaemonSet hami-device-plugin 一直是 0/0，节点上也没有 GPU 资源。",
        "no-device-plugin-pod",
    ),
    (
        "GPU 节点没有资源",
        "After the helm install the dashboard shows the hami-device-plugin daemonset at 0 / 0.",
        "no-device-plugin-pod",
    ),
    (
        "安装问题",
        "helm 装完以后 hami-device-plugin 没有部署成功，kube-system 里只有 scheduler。",
        "no-device-plugin-pod",
    ),
    (
        "GPU pods get no GPU on k3s",
        "The operator installs fine but fails to set nvidia as the default runtime, so every GPU "
        "pod requires runtimeClassName: nvidia.",
        "runtimeclass",
    ),
    (
        "k3s 上 GPU 不可用",
        "containerd 的默认运行时还是 runc，加上 runtimeClassName 之后才能看到 GPU。",
        "runtimeclass",
    ),
    (
        "Lost GPUs",
        "On gpu-7 the allocatable is 5, but the capacity is 8 since yesterday.",
        "device-unhealthy",
    ),
    (
        "Plugin crashloop",
        "The nvidia-device-plugin daemonset fails to initialize NVML on the new A10 nodes, so no "
        "GPU shows up.",
        "plugin-crash-nvml",
    ),
]
# and words that are not the class: the verdict's field that must not name it
NOT_POINTING = [
    (
        "pod 一直 Pending",
        "hami-device-plugin 是 2/2，调度器日志如下，pod 一直 Pending。",
        "category",
        ("no-device-plugin-pod",),
    ),
    (
        "pod 一直 Pending",
        "没有 device-plugin 的 pods 日志可以贴，只有调度器的。",
        "category",
        ("no-device-plugin-pod",),
    ),
    (
        "plugin error",
        "hami-device-plugin 报错，节点上没有安装 nvidia-container-toolkit。",
        "category",
        ("no-device-plugin-pod",),
    ),
    (
        "question",
        "I set nvidia as the default runtime in containerd; do I need to set runtimeClassName: "
        "nvidia for HAMi?",
        "category",
        ("runtimeclass",),
    ),
    (
        "GPU problem",
        "Inside my pod nvidia-smi prints: Failed to initialize NVML: Unknown Error.",
        "rule_id",
        ("nvml-missing-described", "allocatable-below-capacity-described"),
    ),
    (
        "GPU problem",
        "allocatable is 8 and capacity is 8, the pod is still Pending.",
        "rule_id",
        ("nvml-missing-described", "allocatable-below-capacity-described"),
    ),
]


@pytest.mark.parametrize(("title", "body", "category"), POINTING)
def test_a_reporters_words_of_a_class_point_at_its_category(ruleset, title, body, category):
    primary = _primary(ruleset, title, body)
    assert primary is not None
    assert primary.category == category


@pytest.mark.parametrize(("title", "body", "field", "forbidden"), NOT_POINTING)
def test_words_that_are_not_the_class_do_not_point_at_it(ruleset, title, body, field, forbidden):
    primary = _primary(ruleset, title, body)
    assert primary is None or getattr(primary, field) not in forbidden


def test_a_reporter_expecting_allocatable_to_fall_is_told_it_never_does(ruleset):
    primary = _primary(
        ruleset,
        "nvidia.com/gpu not released?",
        "After my training job took both GPUs, the node's allocatable didn't go down at all, it "
        "still says 2.",
    )
    assert primary is not None and primary.category == "healthy"
    assert "Allocatable does not drop" in primary.title
