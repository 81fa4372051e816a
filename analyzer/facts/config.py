"""Config facts: every parsed config as config.<kind>.<dotted.key> (helm values, RuntimeClass,
DaemonSet, ... objects), citing the line of the key."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from analyzer.facts.model import FactSet, Where

if TYPE_CHECKING:  # imported when a bundle holds their kinds (parse/registry.py)
    from analyzer.parse.configs import ConfigFacts

KUBE_SCHEDULER_TAG_KEYS = (
    "config.helm-values.scheduler.kubeScheduler.image.tag",
    "config.helm-values.scheduler.kubeScheduler.imageTag",
)
_MINOR_RE = re.compile(r"v?1\.(\d+)(?:\.\d+)?")


def produce(configs: list[ConfigFacts], facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import config
    >>> fs = FactSet()
    >>> produce([config("helm-values", "devicePlugin:\\n  deviceSplitCount: 5\\nscheduler:\\n  leaderElect: true")], fs)
    >>> fs.value("config.helm-values.devicePlugin.deviceSplitCount"), str(fs.where("config.helm-values.devicePlugin.deviceSplitCount"))
    (5, 'helm-values.txt:2')
    >>> fs.lookup("config.helm-values.devicePlugin.runtimeClassName").value, fs.lookup("config.toolkit-config.mode")
    (None, UNKNOWN)
    """
    for cf in configs:
        facts.mark_known(f"config.{cf.kind}.")
        for k, v in cf.values.items():
            path = f"config.{cf.kind}.{k}"
            if path not in facts.facts:
                facts.put(path, v, Where(cf.file, cf.line_of(k)))


def produce_skew(facts: FactSet) -> None:
    """How many minor releases the chart's kube-scheduler image (a Kubernetes release tag, never a
    HAMi version) is away from the node's kubelet.

    >>> fs = FactSet(); fs.put(KUBE_SCHEDULER_TAG_KEYS[1], "v1.20.15"); fs.put("node.kubelet_version", "v1.28.2")
    >>> produce_skew(fs); fs.value("helm.kube_scheduler_skew"), fs.value("helm.kube_scheduler_tag")
    (8, 'v1.20.15')
    >>> fs = FactSet(); fs.put(KUBE_SCHEDULER_TAG_KEYS[0], ""); produce_skew(fs); fs.value("helm.kube_scheduler_skew")
    """
    facts.mark_known("helm.")
    for key in KUBE_SCHEDULER_TAG_KEYS:
        tag = facts.value(key)
        if isinstance(tag, str) and (m := _MINOR_RE.match(tag.strip())):
            where = facts.where(key)
            facts.put("helm.kube_scheduler_tag", tag, where)
            kubelet = facts.value("node.kubelet_version")
            k = _MINOR_RE.match(kubelet.strip()) if isinstance(kubelet, str) else None
            if k:
                facts.put("helm.kube_scheduler_skew", abs(int(m[1]) - int(k[1])), where)
            return
