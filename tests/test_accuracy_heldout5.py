"""Fifth and sixth measurements (issue 25, session 37): the classes of failure two sets of unseen
real cases showed that rules can take, checked on made-up inputs of each class (none copied from
a real case): a reporter who says there is no device-plugin pod in the other Chinese word order,
or gives the DaemonSet's READY count as a dashboard shows it; who expects allocatable to fall as
pods take GPUs (it never does), or says it is below capacity (unhealthy GPUs); who says the
plugin's DaemonSet fails to initialize NVML."""

from __future__ import annotations

import pytest

from analyzer.analyze import AnalyzeOptions, Issue, analyze


def _issue(ruleset, text: str):
    return analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report


@pytest.mark.parametrize(
    "body",
    [
        "部署了 HAMi v2.4.1，kube-system 下面没有 hami-device-plugin 的 pod，只有调度器。",
        "集群里 DaemonSet hami-device-plugin 一直是 0/0，节点上也没有 GPU 资源。",
        "After the helm install the dashboard shows the hami-device-plugin daemonset at 0 / 0.",
    ],
)
def test_a_reporter_saying_no_plugin_pod_in_other_words_points_at_the_missing_pod(ruleset, body):
    report = _issue(ruleset, f"# GPU 节点没有资源\n\n{body}\n")
    assert report.primary is not None
    assert report.primary.category == "no-device-plugin-pod"


@pytest.mark.parametrize(
    "body",
    [
        "hami-device-plugin 是 2/2，调度器日志如下，pod 一直 Pending。",
        "没有 device-plugin 的 pods 日志可以贴，只有调度器的。",
    ],
)
def test_a_running_plugin_or_missing_logs_are_not_a_missing_pod(ruleset, body):
    report = _issue(ruleset, f"# pod 一直 Pending\n\n{body}\n")
    assert report.primary is None or report.primary.category != "no-device-plugin-pod"


def test_a_reporter_expecting_allocatable_to_fall_is_told_it_never_does(ruleset):
    report = _issue(
        ruleset,
        "# nvidia.com/gpu not released?\n\nAfter my training job took both GPUs, the node's "
        "allocatable didn't go down at all, it still says 2.\n",
    )
    assert report.primary is not None and report.primary.category == "healthy"
    assert "Allocatable does not drop" in report.primary.title


def test_a_reporter_comparing_allocatable_with_capacity_points_at_unhealthy_gpus(ruleset):
    report = _issue(
        ruleset,
        "# Lost GPUs\n\nOn gpu-7 the allocatable is 5, but the capacity is 8 since yesterday.\n",
    )
    assert report.primary is not None and report.primary.category == "device-unhealthy"


def test_a_plugin_daemonset_failing_to_initialize_nvml_is_the_plugins_nvml(ruleset):
    report = _issue(
        ruleset,
        "# Plugin crashloop\n\nThe nvidia-device-plugin daemonset fails to initialize NVML on the "
        "new A10 nodes, so no GPU shows up.\n",
    )
    assert report.primary is not None and report.primary.category == "plugin-crash-nvml"


@pytest.mark.parametrize(
    "body",
    [
        "Inside my pod nvidia-smi prints: Failed to initialize NVML: Unknown Error.",
        "allocatable is 8 and capacity is 8, the pod is still Pending.",
    ],
)
def test_a_workloads_nvml_or_equal_counts_are_neither(ruleset, body):
    report = _issue(ruleset, f"# GPU problem\n\n{body}\n")
    assert report.primary is None or report.primary.rule_id not in (
        "nvml-missing-described",
        "allocatable-below-capacity-described",
    )
