"""The namespace HAMi runs in, from the inputs that state it, so that the kubectl and helm commands
a report prints address HAMi's objects where they are. In this order (the first that states one
wins): `hami-analyzer collect`'s manifest (the namespace it found HAMi's pods in), helm values
(`namespaceOverride`), HAMi's own objects (its DaemonSet, Deployment, ConfigMaps, Lease, and the
service its webhook calls), a describe or YAML of one of its pods (`Namespace:`), and the
NAMESPACE column of a `kubectl get pods -A` row naming one of its pods. Nothing stating it leaves
the fact absent: commands then use the chart's usual namespace, DEFAULT, and the report says so."""

from __future__ import annotations

import re
from collections.abc import Iterator

from analyzer.catalogue.hami import HamiNames
from analyzer.facts.model import FactSet, Where
from analyzer.parse.configs import ConfigFacts
from analyzer.parse.manifest import ManifestFacts
from analyzer.parse.pod import PodFacts
from analyzer.parse.pod_table import PodTable

DEFAULT = "kube-system"  # where HAMi's install guide puts it (`helm install hami -n kube-system`)
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS label
OBJECT_KINDS = ("daemonset", "deployment", "configmap", "lease", "webhook")


def _line(cf: ConfigFacts, key: str, value: str) -> int | None:
    """The line stating `key: value` in the config's text (the first one)."""
    pattern = re.compile(rf"^\s*-?\s*{re.escape(key)}:\s*[\"']?{re.escape(value)}[\"']?\s*$")
    for i, text in enumerate(cf.text.split("\n")):
        if pattern.match(text):
            return cf.first_line + i
    return cf.line_of(key)


def _from_configs(configs: list[ConfigFacts], hami: HamiNames) -> Iterator[tuple[str, Where, str]]:
    """Helm values' `namespaceOverride` first (the chart renders every object there), then the
    namespace of HAMi's objects."""
    for cf in configs:
        if cf.kind == "helm-values" and (ns := cf.values.get("namespaceOverride")):
            yield str(ns), Where(cf.file, _line(cf, "namespaceOverride", str(ns))), "helm value"
    for cf in configs:
        if cf.kind not in OBJECT_KINDS:
            continue
        for key, ns in cf.values.items():
            # an object's own namespace, or the one of the service its webhook calls
            if not isinstance(ns, str) or not key.endswith(
                ("metadata.namespace", "clientConfig.service.namespace")
            ):
                continue
            owner = cf.values.get(key[: -len("namespace")] + "name")
            if hami.is_workload(owner if isinstance(owner, str) else None):
                yield ns, Where(cf.file, _line(cf, "namespace", ns)), f"namespace of {owner}"


def _from_pods(
    pods: list[PodFacts], tables: list[PodTable], hami: HamiNames
) -> Iterator[tuple[str, Where, str]]:
    for p in pods:
        if p.namespace and hami.is_workload(p.name):
            line = p.line_of.get("namespace") or p.first_line
            yield p.namespace, Where(p.file, line), f"namespace of pod {p.name}"
    for table in tables:
        for row in table.rows:
            if row.namespace and hami.is_workload(row.name):
                yield row.namespace, Where(row.file, row.line), f"NAMESPACE of pod {row.name}"


def produce(
    manifests: list[ManifestFacts],
    configs: list[ConfigFacts],
    pods: list[PodFacts],
    tables: list[PodTable],
    hami: HamiNames,
    facts: FactSet,
) -> None:
    """HAMi's pods and objects are those `hami` (kinds.yaml `hami:`) names.

    >>> from analyzer.dev.samples import catalogue, config, pod
    >>> hami = catalogue().hami
    >>> from analyzer.parse.pod_table import pod_rows, PodTable
    >>> rows = "NAMESPACE  NAME  READY  STATUS  RESTARTS  AGE\\ndefault  app-1  1/1  Running  0  1d\\nhami-system  hami-device-plugin-7xk2p  2/2  Running  0  9d\\n"
    >>> table = PodTable("pods.txt", 1, tuple(pod_rows(rows.splitlines(), "pods.txt")))
    >>> fs = FactSet(); produce([], [], [], [table], hami, fs)
    >>> fs.value("hami.namespace"), str(fs.where("hami.namespace")), fs.value("hami.namespace_from")
    ('hami-system', 'pods.txt:3', 'NAMESPACE of pod hami-device-plugin-7xk2p')
    >>> describe = pod("Name:         hami-scheduler-5d9f-abcde\\nNamespace:    gpu\\nNode:  n1/10.0.0.1\\n", "pod-describe")
    >>> fs = FactSet(); produce([], [], [describe], [table], hami, fs); fs.value("hami.namespace")
    'gpu'
    >>> values = config("helm-values", "namespaceOverride: hami\\ndevicePlugin:\\n  deviceSplitCount: 4\\n")
    >>> fs = FactSet(); produce([], [values], [describe], [table], hami, fs)
    >>> fs.value("hami.namespace"), str(fs.where("hami.namespace"))
    ('hami', 'helm-values.txt:1')
    >>> fs = FactSet(); produce([], [], [], [], hami, fs); fs.value("hami.namespace"), fs.lookup("hami.namespace")
    (None, Fact(path='hami.namespace', value=None, where=None))
    """
    facts.mark_known("hami.namespace", "hami.namespace_from")
    stated = (
        *((m.namespace, Where(m.file), "found by collect") for m in manifests if m.namespace),
        *_from_configs(configs, hami),
        *_from_pods(pods, tables, hami),
    )
    for ns, where, how in stated:
        if _NAMESPACE.match(ns):
            facts.put("hami.namespace", ns, where)
            facts.put("hami.namespace_from", how, where)
            return
