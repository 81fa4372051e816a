"""Config facts: every parsed config as config.<kind>.<dotted.key> (helm values, RuntimeClass,
DaemonSet, ... objects), citing the line of the key."""

from __future__ import annotations

from analyzer.facts.model import FactSet, Where
from analyzer.parse.configs import ConfigFacts


def produce(configs: list[ConfigFacts], facts: FactSet) -> None:
    """
    >>> from analyzer.facts.samples import config
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
