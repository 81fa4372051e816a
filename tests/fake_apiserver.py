"""A tiny Kubernetes API server on 127.0.0.1 that replays a cluster built from a sample bundle,
for testing `hami-analyzer collect` with the real kubectl.

From the sample's files it serves: the Node objects of node.yaml, a HAMi install in namespace
`gpu-stack` (release `gpu-stack`, so nothing may assume kube-system or release `hami`): a
device-plugin pod on the first node whose `device-plugin` container log is the sample's
device-plugin log, a scheduler pod whose `vgpu-scheduler-extender` log is the sample's scheduler
log, their DaemonSet and Deployment, the scheduler Lease; the sample's pod.yaml as a Pending pod;
a RuntimeClass, HAMi's MutatingWebhookConfiguration, and the helm release Secrets of the
sample's values.yaml. Bystanders that a collection must never take: in kube-system an
`aws-auth` ConfigMap (role ARNs, an account id), an `aws-node` DaemonSet with secrets in its env
and a Secret; another product's webhook. Plain HTTP, discovery (`/version`, `/api`, `/apis`),
GET of objects and lists with label and field selectors, pod logs with `container`,
`previous`, `timestamps`, `limitBytes` and `tailLines`, pod creation and deletion. A pod that
collect's debug pod (or `kubectl debug node/NAME`'s) "runs" once created: its log is its
script's sections answered from `node_files` (what the GPU node holds). `exec` is refused (403, as without pods/exec
rights). Resources named in `forbidden` answer 403 (`RES:cluster`: only across all namespaces,
as for a user with namespace-scoped rights; `RES:create` only creation) and those in `slow`
answer after a delay (a timeout case; `pods:create`: the pod is created at once and the answer
is late, so a client that gives up first never learns it exists)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from loopback import LoopbackServer

NAMESPACE = "gpu-stack"
RELEASE = "gpu-stack"
SERVER_VERSION = "v1.30.4"
PLUGIN_POD = f"{RELEASE}-hami-device-plugin-7xk2p"
GROUPS = {  # group/version -> {resource: (kind, namespaced)}
    "v1": {
        "nodes": ("Node", False),
        "pods": ("Pod", True),
        "events": ("Event", True),
        "configmaps": ("ConfigMap", True),
        "namespaces": ("Namespace", False),
        "secrets": ("Secret", True),
    },
    "apps/v1": {"daemonsets": ("DaemonSet", True), "deployments": ("Deployment", True)},
    "node.k8s.io/v1": {"runtimeclasses": ("RuntimeClass", False)},
    "coordination.k8s.io/v1": {"leases": ("Lease", True)},
    "admissionregistration.k8s.io/v1": {
        "mutatingwebhookconfigurations": ("MutatingWebhookConfiguration", False)
    },
}
# planted in the bystanders: none of it may reach a collected archive
ACCOUNT = "123456789012"
BYSTANDER_SECRETS = (
    ACCOUNT,
    "aws-auth",
    "eks-nodegroup-role",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "aws-node",
    "db-password-Zq8vL1",
    "ZGItcGFzc3dvcmQtWnE4dkwx",  # its base64, as the Secret holds it
    "istio-sidecar-injector",
    "helm-manifest-never-kept",
)
_DEBUG_SECTION_RE = re.compile(r"(?m)^sec (\S+) (?:head|tail) ")
_DEBUG_NONCE_RE = re.compile(r"==> (\w+) ")
_CORE_RE = re.compile(
    r"^/api/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[a-z]+)(?:/(?P<name>[^/]+))?"
    r"(?P<sub>/log|/exec)?$"
)
_GROUP_RE = re.compile(
    r"^/apis/(?P<gv>[^/]+/v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[a-z]+)(?:/(?P<name>[^/]+))?$"
)
_KLOG_TIME_RE = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)")


@dataclass
class Cluster:
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # resource -> items
    logs: dict[tuple[str, str], str] = field(default_factory=dict)  # (pod, container) -> text
    previous: dict[tuple[str, str], str] = field(default_factory=dict)  # of restarted containers
    year: int = 2026
    forbidden: set[str] = field(default_factory=set)
    slow: dict[str, float] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    node_files: dict[str, str] = field(default_factory=dict)  # what every node holds, by file
    error_note: str = ""  # appended to every 403 message (what a hostile server may say)
    created: list[dict[str, Any]] = field(default_factory=list)  # pods created through the API
    deleted: list[str] = field(default_factory=list)

    def helm_release(self, config: dict[str, Any], revisions: int = 2) -> None:
        """HAMi installed by helm: one release Secret per revision (the last holds `config`;
        each also holds a manifest and a chart, which a collection must never keep)."""
        for n in range(1, revisions + 1):
            release = {
                "name": RELEASE,
                "version": n,
                "namespace": NAMESPACE,
                "config": config if n == revisions else {"old": True},
                "manifest": "kind: Secret # helm-manifest-never-kept",
                "chart": {"metadata": {"name": "hami"}, "templates": [{"name": "x", "data": ""}]},
            }
            inner = base64.b64encode(gzip.compress(json.dumps(release).encode()))
            self.objects.setdefault("secrets", []).append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "helm.sh/release.v1",
                    "metadata": _meta(
                        f"sh.helm.release.v1.{RELEASE}.v{n}",
                        NAMESPACE,
                        {"owner": "helm", "name": RELEASE, "version": str(n)},
                    ),
                    "data": {"release": base64.b64encode(inner).decode()},
                }
            )

    def pod(self, name: str) -> dict[str, Any]:
        return next(p for p in self.objects["pods"] if p["metadata"]["name"] == name)

    def restart(self, pod: str, container: str, previous_log: str) -> None:
        """The container restarted once; its previous instance logged `previous_log`."""
        self.previous[(pod, container)] = previous_log
        for p in self.objects["pods"]:
            if p["metadata"]["name"] == pod:
                for st in p["status"]["containerStatuses"]:
                    if st["name"] == container:
                        st["restartCount"] = 1
                        st["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}


def _meta(name: str, namespace: str | None, labels: dict[str, str] | None = None) -> dict:
    meta = {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{namespace}/{name}"))}
    meta["creationTimestamp"] = "2026-08-01T07:00:00Z"
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def _hami_pod(name: str, component: str, node: str, containers: list[str]) -> dict:
    labels = {
        "app.kubernetes.io/name": "hami",
        "app.kubernetes.io/instance": RELEASE,
        "app.kubernetes.io/component": component,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(name, NAMESPACE, labels),
        "spec": {
            "nodeName": node,
            "containers": [{"name": c, "image": "projecthami/hami:v2.10.0"} for c in containers],
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": c, "ready": True, "restartCount": 0, "image": "projecthami/hami:v2.10.0"}
                for c in containers
            ],
        },
    }


def cluster_from_sample(bundle: Path) -> Cluster:
    """The cluster a sample bundle was (notionally) collected from."""
    docs = (
        yaml.safe_load((bundle / "node.yaml").read_text())
        if (bundle / "node.yaml").exists()
        else None
    )
    nodes = (docs.get("items") if docs and docs.get("kind") == "List" else [docs]) if docs else []
    nodes = [n for n in nodes if n]
    node = nodes[0]["metadata"]["name"] if nodes else "gpu-node-1"
    plugin = _hami_pod(
        PLUGIN_POD,
        "hami-device-plugin",
        node,
        ["device-plugin", "vgpu-monitor"],
    )
    sched = _hami_pod(
        f"{RELEASE}-hami-scheduler-6d8f9c7b5-x2k4q",
        "hami-scheduler",
        "cp-1",
        ["kube-scheduler", "vgpu-scheduler-extender"],
    )
    c = Cluster()
    beats = [
        cond.get("lastHeartbeatTime", "")
        for n in nodes
        for cond in n.get("status", {}).get("conditions", [])
    ]
    if beats:
        c.year = int(max(beats)[:4])
    pods = [plugin, sched]
    if (bundle / "pod.yaml").exists():
        pod = yaml.safe_load((bundle / "pod.yaml").read_text())
        pod["metadata"] = {
            **_meta(pod["metadata"]["name"], pod["metadata"].get("namespace", "default")),
            **pod["metadata"],
        }
        pods.append(pod)
    c.objects = {
        "nodes": nodes,
        "pods": pods,
        "events": [
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": _meta("hami-scheduler.1", NAMESPACE),
                "involvedObject": {
                    "kind": "Lease",
                    "name": "hami-scheduler",
                    "namespace": NAMESPACE,
                },
                "type": "Normal",
                "reason": "LeaderElection",
                "message": f"{sched['metadata']['name']}_4f1c became leader",
                "lastTimestamp": "2026-08-01T07:00:30Z",
            }
        ],
        "configmaps": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta(
                    f"{RELEASE}-hami-scheduler", NAMESPACE, sched["metadata"]["labels"]
                ),
                "data": {
                    "config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                },
            }
        ],
        "namespaces": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE, None)}
        ],
        "daemonsets": [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": _meta(
                    f"{RELEASE}-hami-device-plugin", NAMESPACE, plugin["metadata"]["labels"]
                ),
                "spec": {"template": {"spec": plugin["spec"]}},
            }
        ],
        "deployments": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": _meta(
                    f"{RELEASE}-hami-scheduler", NAMESPACE, sched["metadata"]["labels"]
                ),
                "spec": {"replicas": 1, "template": {"spec": sched["spec"]}},
            }
        ],
        "runtimeclasses": [
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": _meta("nvidia", None),
                "handler": "nvidia",
            }
        ],
        "leases": [
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": _meta("hami-scheduler", NAMESPACE),
                "spec": {
                    "holderIdentity": sched["metadata"]["name"] + "_4f1c",
                    "leaseDurationSeconds": 15,
                },
            }
        ],
    }
    for file, pod, container in (
        ("device-plugin.log", plugin, "device-plugin"),
        ("scheduler.log", sched, "vgpu-scheduler-extender"),
    ):
        if (bundle / file).exists():
            c.logs[(pod["metadata"]["name"], container)] = (bundle / file).read_text()
    c.objects["mutatingwebhookconfigurations"] = [
        _webhook(f"{RELEASE}-hami-webhook", "vgpu.hami.io", NAMESPACE),
        _webhook("istio-sidecar-injector", "sidecar-injector.istio.io", "istio-system"),
    ]
    _add_bystanders(c)
    if (bundle / "values.yaml").exists():
        c.helm_release(yaml.safe_load((bundle / "values.yaml").read_text()) or {})
    for name in ("containerd-config.toml", "kubelet.log", "runtime.log"):
        if (bundle / name).exists():
            c.node_files[name] = (bundle / name).read_text()
    return c


def _webhook(name: str, hook: str, namespace: str) -> dict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": _meta(name, None),
        "webhooks": [
            {
                "name": hook,
                "admissionReviewVersions": ["v1beta1"],
                "clientConfig": {"service": {"name": name, "namespace": namespace}},
                "failurePolicy": "Ignore",
                "sideEffects": "None",
            }
        ],
    }


def _add_bystanders(c: Cluster) -> None:
    """What kube-system holds on an EKS cluster, none of it HAMi's business."""
    roles = (
        f"- rolearn: arn:aws:iam::{ACCOUNT}:role/eks-nodegroup-role\n"
        "  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:nodes]\n"
    )
    c.objects["configmaps"].append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("aws-auth", "kube-system"),
            "data": {"mapRoles": roles, "mapAccounts": f"- '{ACCOUNT}'\n"},
        }
    )
    env = [
        {"name": "AWS_ACCESS_KEY_ID", "value": "AKIAIOSFODNN7EXAMPLE"},
        {"name": "AWS_SECRET_ACCESS_KEY", "value": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"},
        {"name": "CLUSTER_ACCOUNT", "value": ACCOUNT},
    ]
    c.objects["daemonsets"].append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta("aws-node", "kube-system", {"k8s-app": "aws-node"}),
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "aws-node",
                                "image": f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.1",
                                "env": env,
                                "resources": {"requests": {"cpu": "25m"}},
                            }
                        ]
                    }
                }
            },
        }
    )
    c.objects.setdefault("secrets", []).append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": _meta("db-credentials", "kube-system"),
            "data": {"password": base64.b64encode(b"db-password-Zq8vL1").decode()},
        }
    )


def _fields(data: bytes) -> dict[int, list]:
    """A protobuf message as field number -> values (varints as int, the rest as bytes)."""
    out: dict[int, list] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        value = shift = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value: int | bytes = varint()
        elif wire == 2:
            size = varint()
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = data[i : i + size], i + size
        else:
            raise ValueError(f"protobuf wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _pod_from_protobuf(raw: bytes) -> dict:
    """The fields of a protobuf Pod (k8s.io/api/core/v1 generated.proto) that the tests read:
    name, node, host namespaces, and each container's name, image, command, args, privilege."""
    pod = _fields(_fields(raw[4:])[2][0])  # runtime.Unknown{typeMeta=1, raw=2}
    meta, spec = _fields(pod[1][0]), _fields(pod[2][0])
    text = lambda f, n: f[n][0].decode() if n in f else None  # noqa: E731
    containers = []
    for c in map(_fields, spec.get(2, [])):
        security = _fields(c[15][0]) if 15 in c else {}
        containers.append(
            {
                "name": text(c, 1),
                "image": text(c, 2),
                "command": [v.decode() for v in c.get(3, [])],
                "args": [v.decode() for v in c.get(4, [])],
                "securityContext": {"privileged": bool(security.get(2, [0])[0])},
            }
        )
    return {
        "metadata": {"name": text(meta, 1), "namespace": text(meta, 3)},
        "spec": {
            "nodeName": text(spec, 10),
            "hostPID": bool(spec.get(12, [0])[0]),
            "containers": containers,
        },
    }


def _labels_match(labels: dict[str, str], selector: str) -> bool:
    for term in re.findall(r"[^,(]+(?:\([^)]*\))?", selector):
        term = term.strip()
        if m := re.fullmatch(r"(\S+)\s+(in|notin)\s+\(([^)]*)\)", term):
            values = {v.strip() for v in m.group(3).split(",")}
            if (labels.get(m.group(1)) in values) != (m.group(2) == "in"):
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k) != v.lstrip("="):
                return False
        elif term and term not in labels:
            return False
    return True


def _field(obj: dict, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def _fields_match(obj: dict, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if _field(obj, k) == v:
                return False
        else:
            k, v = term.split("=", 1)
            if _field(obj, k) != v.lstrip("="):
                return False
    return True


def _with_timestamps(text: str, year: int) -> str:
    """What the API server does for `timestamps=true`: an RFC 3339 time before every line (here
    the klog time of the line, with the year; a line without one takes the previous time)."""
    out, stamp = [], f"{year}-01-01T00:00:00.000000000Z"
    for line in text.splitlines():
        if m := _KLOG_TIME_RE.match(line):
            stamp = f"{year}-{m.group(1)}-{m.group(2)}T{m.group(3).ljust(15, '0')[:15]}000Z"
        out.append(f"{stamp} {line}")
    return "\n".join(out) + ("\n" if out else "")


def _pod_row(p: dict) -> list:
    statuses = p.get("status", {}).get("containerStatuses") or []
    ready = sum(1 for st in statuses if st.get("ready"))
    restarts = sum(st.get("restartCount", 0) for st in statuses)
    phase = p.get("status", {}).get("phase", "Unknown")
    node = p.get("spec", {}).get("nodeName") or "<none>"
    return [p["metadata"]["name"], f"{ready}/{len(p['spec']['containers'])}", phase, restarts,
            "121d", "10.244.3.7", node, "<none>", "<none>"]  # fmt: skip


def _event_row(e: dict) -> list:
    obj = e["involvedObject"]
    return ["5m", e["type"], e["reason"], f"{obj['kind'].lower()}/{obj['name']}", e["message"]]


# the columns the API server's table printer gives `kubectl get` (priority 1: only with -o wide)
TABLES = {
    "pods": (
        [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1),
         ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)],
        _pod_row,
    ),
    "events": (
        [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Message", 0)],
        _event_row,
    ),
}  # fmt: skip


def _table(res: str, items: list[dict]) -> dict:
    """What the API server answers a `kubectl get` that asks for a Table (human output)."""
    columns, row = TABLES[res]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "1"},
        "columnDefinitions": [
            {
                "name": n,
                "type": "string",
                "format": "name" if n == "Name" else "",
                "description": "",
                "priority": p,
            }
            for n, p in columns
        ],
        "rows": [{"cells": row(o), "object": o} for o in items],
    }


class _Handler(BaseHTTPRequestHandler):
    cluster: Cluster
    port: int

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.cluster.requests.append(self.path)
        path = url.path.rstrip("/")
        if path == "/version":
            major, minor = SERVER_VERSION[1:].split(".")[:2]
            return self._json(
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": SERVER_VERSION,
                    "platform": "linux/amd64",
                }
            )
        if path == "/api":
            return self._json(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}
                    ],
                }
            )
        if path == "/apis":
            groups = [
                {
                    "name": gv.split("/")[0],
                    "versions": [{"groupVersion": gv, "version": "v1"}],
                    "preferredVersion": {"groupVersion": gv, "version": "v1"},
                }
                for gv in GROUPS
                if "/" in gv
            ]
            return self._json({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        for gv, resources in GROUPS.items():
            if path == ("/api/v1" if gv == "v1" else f"/apis/{gv}"):
                return self._json(self._resource_list(gv, resources))
        target = self._target(path, "list")
        if target is None:
            return None
        gv, res, ns, name, sub = target
        kind = GROUPS[gv][res][0]
        items = [
            o
            for o in self.cluster.objects.get(res, [])
            if ns is None or o["metadata"].get("namespace") == ns
        ]
        if name is not None:
            found = [o for o in items if o["metadata"]["name"] == name]
            if not found:
                return self._status(404, "NotFound", f'{res} "{name}" not found')
            if sub == "/log":
                return self._log(found[0], query)
            if sub == "/exec":
                return self._forbidden("pods/exec", "", ns, "create")
            return self._json({"apiVersion": gv, "kind": kind, **found[0]})
        items = [
            {"apiVersion": gv, "kind": kind, **o}
            for o in items
            if _labels_match(o["metadata"].get("labels") or {}, query.get("labelSelector", ""))
            and _fields_match(o, query.get("fieldSelector", ""))
        ]
        if res in TABLES and "as=Table" in self.headers.get("Accept", ""):
            return self._json(_table(res, items))
        return self._json(
            {
                "apiVersion": gv,
                "kind": f"{kind}List",
                "metadata": {"resourceVersion": "1"},
                "items": items,
            }
        )

    def _target(self, path: str, verb: str):
        """(group/version, resource, namespace, name, subresource) of a resource path, or None
        when the answer (404, 403, a delay) has been sent."""
        m = _CORE_RE.match(path) or _GROUP_RE.match(path)
        gv = (m.groupdict().get("gv") or "v1") if m else ""
        if not m or m.group("res") not in GROUPS.get(gv, {}):
            self._status(
                404, "NotFound", f"the server could not find the requested resource ({path})"
            )
            return None
        res, ns, name = m.group("res"), m.group("ns"), m.group("name")
        if res in self.cluster.slow:
            time.sleep(self.cluster.slow[res])
        if (
            res in self.cluster.forbidden
            or (ns is None and f"{res}:cluster" in self.cluster.forbidden)
            or f"{res}:{verb}" in self.cluster.forbidden
        ):
            self._forbidden(res, gv.split("/")[0] if "/" in gv else "", ns, verb)
            return None
        return gv, res, ns, name, m.groupdict().get("sub")

    def _forbidden(self, res: str, group: str, ns: str | None, verb: str) -> None:
        scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        self._status(
            403,
            "Forbidden",
            f'{res}{"." + group if group else ""} is forbidden: User "support" cannot {verb} resource "{res}" in API group "{group}" {scope}{self.cluster.error_note}',
        )

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        self.cluster.requests.append(f"POST {self.path}")
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # kubectl >= 1.35 creates built-in objects in protobuf
        protobuf = raw.startswith(b"k8s\x00")
        body = _pod_from_protobuf(raw) if protobuf else json.loads(raw or b"{}")
        target = self._target(path, "create")
        if target is None:
            return None
        _gv, res, ns, _name, sub = target
        if res != "pods" or sub:
            return self._forbidden(res, "", ns, "create")
        pod = {**body, "apiVersion": "v1", "kind": "Pod"}
        given = {k: v for k, v in body["metadata"].items() if v}
        pod["metadata"] = {**_meta(given["name"], ns), **given}
        pod["status"] = {"phase": "Succeeded"}
        self.cluster.created.append(pod)
        self.cluster.objects["pods"].append(pod)
        command = [*pod["spec"]["containers"][0].get("command", [])]
        command += pod["spec"]["containers"][0].get("args", [])
        self.cluster.logs[(pod["metadata"]["name"], pod["spec"]["containers"][0]["name"])] = (
            self._run_debug_script(command[-1] if command else "")
        )
        time.sleep(self.cluster.slow.get("pods:create", 0))
        return self._json(pod, 201)

    def _run_debug_script(self, script: str) -> str:
        """What the node answers the script's sections: the file from `node_files`, or the
        error a missing file or command gives."""
        nonce = _DEBUG_NONCE_RE.search(script)
        out = []
        mark = nonce.group(1) if nonce else ""
        for name in _DEBUG_SECTION_RE.findall(script):
            text = self.cluster.node_files.get(name)
            rc, err = (
                (0, "") if text is not None else (1, f"cat: can't open '{name}': No such file\n")
            )
            out.append(f"\n==> {mark} {name} {rc} 0 <==\n{text or ''}")
            out.append(f"\n==> {mark} {name}.stderr 0 0 <==\n{err}")
        return "".join(out)

    def do_DELETE(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        self.cluster.requests.append(f"DELETE {self.path}")
        target = self._target(path, "delete")
        if target is None:
            return None
        _gv, res, ns, name, _sub = target
        pods = self.cluster.objects.get(res, [])
        found = [o for o in pods if o["metadata"]["name"] == name]
        if not found:
            return self._status(404, "NotFound", f'{res} "{name}" not found')
        pods.remove(found[0])
        self.cluster.deleted.append(f"{ns}/{name}")
        return self._json(found[0])

    def _resource_list(self, gv: str, resources: dict) -> dict:
        out = []
        for res, (kind, namespaced) in resources.items():
            out.append(
                {
                    "name": res,
                    "singularName": kind.lower(),
                    "namespaced": namespaced,
                    "kind": kind,
                    "verbs": ["get", "list", "create", "delete"],
                }
            )
            if res == "pods":
                out += [
                    {
                        "name": sub,
                        "singularName": "",
                        "namespaced": True,
                        "kind": kind,
                        "verbs": verbs,
                    }
                    for sub, kind, verbs in (
                        ("pods/log", "Pod", ["get"]),
                        ("pods/exec", "PodExecOptions", ["create", "get"]),
                    )
                ]
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}

    def _log(self, pod: dict, query: dict) -> None:
        name = pod["metadata"]["name"]
        container = query.get("container") or pod["spec"]["containers"][0]["name"]
        if query.get("previous") == "true" and (name, container) not in self.cluster.previous:
            return self._status(
                400,
                "BadRequest",
                f'previous terminated container "{container}" in pod "{name}" not found',
            )
        source = self.cluster.previous if query.get("previous") == "true" else self.cluster.logs
        text = source.get((name, container), "")
        if "tailLines" in query:
            text = "".join(text.splitlines(keepends=True)[-int(query["tailLines"]) :])
        if query.get("timestamps") == "true":
            text = _with_timestamps(text, self.cluster.year)
        body = text.encode()
        if "limitBytes" in query:
            body = body[: int(query["limitBytes"])]
        self._send(200, body, "text/plain")

    def _status(self, code: int, reason: str, message: str) -> None:
        self._json(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code,
            },
            code,
        )

    def _json(self, obj: dict, code: int = 200) -> None:
        self._send(code, json.dumps(obj).encode(), "application/json")

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout case)
            pass


class FakeApiServer(LoopbackServer):
    """`with FakeApiServer(cluster) as srv:` serves on 127.0.0.1:srv.port until the block ends."""

    def __init__(self, cluster: Cluster) -> None:
        handler = type("Handler", (_Handler,), {"cluster": cluster})
        super().__init__(handler)
        handler.port = self.port

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "fake", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}
                    ],
                    "users": [{"name": "support", "user": {}}],
                    "contexts": [
                        {"name": "fake", "context": {"cluster": "fake", "user": "support"}}
                    ],
                    "current-context": "fake",
                }
            )
        )
        return path
