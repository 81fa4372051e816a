"""Fifth measurement (issue 25, session 37): the class of failure a fifth set of unseen real
cases showed that rules can take, checked on made-up inputs of that class (none copied from a
real case): a reporter who says there is no device-plugin pod in the other Chinese word order,
or gives the DaemonSet's READY count as a dashboard shows it."""

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
