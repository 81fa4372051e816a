"""Which ConfigMaps, DaemonSets and webhook configurations are HAMi's business, chosen from
listings that carry names, labels and resource names only, so no other object's data or env
ever reaches the collector (an EKS `aws-auth` map, another DaemonSet's secrets): HAMi's own by
the chart's labels or names, the DaemonSets that ask for an extended resource, look like a
device plugin or belong to the GPU Operator, and the webhook named vgpu.hami.io (vgpu.4pd.io)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from analyzer.catalogue.hami import HamiNames
from analyzer.collect.discover import COMPONENT, RELEASE, is_name

NAME_LABEL = "app.kubernetes.io/name"
CHART_NAMES = ("hami", "vgpu")  # the chart's app.kubernetes.io/name (v2.2 and earlier: vgpu)
WEBHOOKS = ("vgpu.hami.io", "vgpu.4pd.io")
K8S_KINDS = {
    "configmap": "ConfigMap",
    "daemonset": "DaemonSet",
    "mutatingwebhookconfiguration": "MutatingWebhookConfiguration",
}
# kubectl prints one object per line: tab-separated fields, maps as JSON (labels and container
# resources), lists space-separated
_ROW = '{range .items[*]}{.metadata.namespace}{"\\t"}{.metadata.name}{"\\t"}{.metadata.labels}'
LISTINGS = {
    "configmap": _ROW + '{"\\n"}{end}',
    "daemonset": _ROW + '{"\\t"}{.spec.template.spec.containers[*].resources}{"\\n"}{end}',
    "mutatingwebhookconfiguration": '{range .items[*]}{.metadata.name}{"\\t"}'
    '{.webhooks[*].name}{"\\t"}{.webhooks[*].clientConfig.service.namespace}{"\\n"}{end}',
}
_OPERAND_NAME = re.compile(r"^(?:nvidia-|gpu-feature-discovery|gpu-operator)")
PART_OF = "app.kubernetes.io/part-of"  # the GPU Operator labels its operands part-of gpu-operator
_PLUGIN_NAME = re.compile(r"device-plugin")
_EXTENDED = re.compile(r'"[\w.-]+/[\w.-]+"\s*:')  # a resource name with a domain: nvidia.com/gpu


@dataclass(frozen=True)
class Listed:
    namespace: str
    name: str
    labels: dict[str, str]
    extra: str = ""  # daemonset: its containers' resources; webhook: hook names and namespaces


def parse_listing(text: str, kind: str) -> list[Listed]:
    """The rows of a LISTINGS output; a row with a name that is no Kubernetes name is dropped.

    >>> rows = parse_listing('gpu\\thami-scheduler\\t{"a":"b"}\\nx\\tBAD NAME\\t\\n', "configmap")
    >>> [(r.namespace, r.name, r.labels) for r in rows]
    [('gpu', 'hami-scheduler', {'a': 'b'})]
    >>> parse_listing("hami-webhook\\tvgpu.hami.io\\tgpu\\n", "mutatingwebhookconfiguration")[0].extra
    'vgpu.hami.io\\tgpu'
    """
    out = []
    for line in text.splitlines():
        if kind == "mutatingwebhookconfiguration":
            name, _, extra = line.partition("\t")
            row = Listed("", name, {}, extra)
        else:
            namespace, name, labels, extra = ([*line.split("\t", 3), "", "", ""])[:4]
            row = Listed(namespace, name, _labels(labels), extra)
        if is_name(row.name) and (not row.namespace or is_name(row.namespace)):
            out.append(row)
    return out


def _labels(text: str) -> dict[str, str]:
    try:
        doc = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def is_hami(row: Listed, release: str | None, hami: HamiNames) -> bool:
    """HAMi's own object: a component label of the chart, the chart's name label (of this
    release when it is known), or a name the chart gives (`<release>-...-scheduler`, or one
    holding a name of HAMi's as a word: `hami-*`, `*-hami-*`; kinds.yaml `hami:`).

    >>> from analyzer.dev.samples import catalogue
    >>> hami = catalogue().hami
    >>> is_hami(Listed("kube-system", "kube-proxy", {}), "hami", hami)
    False
    >>> is_hami(Listed("gpu", "stack-hami-device-plugin", {}), "stack", hami)
    True
    >>> is_hami(Listed("gpu", "x", {NAME_LABEL: "hami", RELEASE: "other"}), "stack", hami)
    False
    >>> [is_hami(Listed("gpu", n, {}), "stack", hami) for n in ("stack-scheduler", "aws-auth")]
    [True, False]
    """
    labels = row.labels
    if labels.get(COMPONENT) in hami.roles:
        return True
    if labels.get(NAME_LABEL) in CHART_NAMES and labels.get(RELEASE) in (release, None):
        return True
    if hami.has_word(row.name):
        return True
    return (
        bool(release)
        and re.match(
            rf"{re.escape(str(release))}-(?:[\w.-]*-)?(?:scheduler|device-plugin)(?:-|$)", row.name
        )
        is not None
    )


def configmaps(rows: list[Listed], release: str | None, hami: HamiNames) -> list[Listed]:
    return [r for r in rows if is_hami(r, release, hami)]


def daemonsets(
    rows: list[Listed], namespace: str, release: str | None, hami: HamiNames
) -> list[Listed]:
    """HAMi's, NVIDIA's (device plugins, GPU Operator operands), those asking for an extended
    resource, and every DaemonSet of the GPU Operator's namespace: one holding a DaemonSet it
    labels as its own (kube-system excepted: it holds everybody's). An nvidia-* name alone does
    not make a namespace the operator's: a standalone DCGM exporter may sit beside anything.

    >>> from analyzer.dev.samples import catalogue
    >>> rows = [Listed("kube-system", "aws-node", {}, '{"requests":{"cpu":"25m"}}'),
    ...         Listed("kube-system", "nvidia-device-plugin-daemonset", {}),
    ...         Listed("gpu-operator", "nvidia-driver-daemonset", {PART_OF: "gpu-operator"}),
    ...         Listed("gpu-operator", "node-exporter", {}),
    ...         Listed("ml", "npu-agent", {}, '{"limits":{"huawei.com/Ascend910":"1"}}'),
    ...         Listed("gpu", "stack-hami-device-plugin", {COMPONENT: "hami-device-plugin"})]
    >>> [r.name for r in daemonsets(rows, "gpu", "stack", catalogue().hami)]
    ['nvidia-device-plugin-daemonset', 'nvidia-driver-daemonset', 'node-exporter', 'npu-agent', 'stack-hami-device-plugin']
    """
    operator = {
        r.namespace
        for r in rows
        if r.namespace != "kube-system" and r.labels.get(PART_OF) == "gpu-operator"
    }
    return [
        r
        for r in rows
        if (r.namespace == namespace and is_hami(r, release, hami))
        or _OPERAND_NAME.search(r.name)
        or _PLUGIN_NAME.search(r.name)
        or _EXTENDED.search(r.extra)
        or r.namespace in operator
    ]


def webhooks(rows: list[Listed], namespace: str, hami: HamiNames) -> list[Listed]:
    """The configurations holding HAMi's webhook, or one calling a service in HAMi's namespace
    under a HAMi name.

    >>> from analyzer.dev.samples import catalogue
    >>> rows = [Listed("", "hami-webhook", {}, "vgpu.hami.io\\tkube-system"),
    ...         Listed("", "istio-sidecar-injector", {}, "sidecar-injector.istio.io\\tistio-system")]
    >>> [r.name for r in webhooks(rows, "kube-system", catalogue().hami)]
    ['hami-webhook']
    """
    out = []
    for r in rows:
        hooks, _, namespaces = r.extra.partition("\t")
        if set(hooks.split()) & set(WEBHOOKS) or (
            namespace in namespaces.split() and hami.has_word(r.name)
        ):
            out.append(r)
    return out
