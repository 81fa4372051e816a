"""Node-side files without SSH (`collect --node-debug`, opt-in): the pod `kubectl debug
node/NAME --profile=sysadmin` would make (a small image, privileged, in the node's namespaces,
the node's root at /host), but created by collect under a random name it chooses, so the pod
can be deleted whatever happens (kubectl debug names it itself, after the node, and a run
stopped before kubectl said the name left the pod behind; the node's name in it also escaped
redaction). Its script runs the node commands of the kind catalogue (rules/kinds.yaml: kubelet
and runtime journals, containerd config, CDI specs, toolkit config) through `chroot /host`, each
output bounded and framed by a marker line carrying a random nonce, so a log line cannot pose
as a frame. The pod's log is read back, split into files, and the pod deleted. nvidia-smi comes
from an exec into the node's device-plugin pod instead (its image usually has it; the debug
image does not)."""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass
from typing import Any

from analyzer.catalogue.kinds import Catalogue

DEFAULT_IMAGE = "busybox:1.36"
SECTION_BYTES = 3 << 20  # per file: the container's log is rotated at 10 MiB by default
EXEC_KINDS = ("nvidia-smi",)  # taken from the device-plugin pod, not from the host
POD_PREFIX = "hami-node-debug-"
DEADLINE = 600  # seconds the pod may run at most, should it ever outlive collect
LABELS = {
    "app.kubernetes.io/name": "hami-node-debug",
    "app.kubernetes.io/managed-by": "hami-analyzer",
}


@dataclass(frozen=True)
class Section:
    kind: str
    file: str
    command: str  # run on the node as `chroot /host sh -c COMMAND`
    keep: str  # head (configs: their beginning) or tail (journals: the latest lines)


@dataclass(frozen=True)
class Part:
    file: str
    exit_code: int
    seconds: float
    data: bytes
    error: str


def sections(catalogue: Catalogue) -> list[Section]:
    """The node kinds whose command is `COMMAND > FILE`, in catalogue order.

    >>> from analyzer.catalogue.kinds import Kind
    >>> cat = Catalogue({"kubelet-log": Kind("kubelet-log", "k", "log", where="node",
    ...     collect='journalctl -u kubelet --since "-2h" --no-pager > kubelet.log')})
    >>> sections(cat)
    [Section(kind='kubelet-log', file='kubelet.log', command='journalctl -u kubelet --since "-2h" --no-pager', keep='tail')]
    """
    out = []
    for kind in catalogue.kinds.values():
        if kind.where != "node" or not kind.collect or kind.id in EXEC_KINDS:
            continue
        command, sep, file = kind.collect.rpartition(" > ")
        if sep and re.fullmatch(r"[\w.-]+", file.strip()):
            keep = "tail" if kind.family == "log" else "head"
            out.append(Section(kind.id, file.strip(), command.strip(), keep))
    return out


def script(parts: list[Section], nonce: str, limit: int = SECTION_BYTES) -> str:
    """The debug container's shell script (busybox sh): each section's output, its exit status
    and duration, then the end of its stderr, each framed by a `==> NONCE FILE RC SECONDS <==`
    line."""
    lines = [
        "sec() {",
        "  t=$(date +%s)",
        '  chroot /host sh -c "$3" >/tmp/out 2>/tmp/err',
        "  rc=$?",
        f'  printf \'\\n==> {nonce} %s %s %s <==\\n\' "$1" "$rc" "$(($(date +%s) - t))"',
        f'  "$2" -c {limit} /tmp/out',
        f"  printf '\\n==> {nonce} %s.stderr 0 0 <==\\n' \"$1\"",
        "  tail -c 300 /tmp/err",
        "}",
    ]
    lines += [f"sec {p.file} {p.keep} {shlex.quote(p.command)}" for p in parts]
    return "\n".join(lines) + "\n"


def split(output: bytes, nonce: str) -> list[Part]:
    """The debug pod's log cut at its frames; a frame without the nonce is content.

    >>> log = b"\\n==> n1 kubelet.log 0 2 <==\\nline\\n\\n==> n1 kubelet.log.stderr 0 0 <==\\n"
    >>> log += b"\\n==> n1 cdi-specs.yaml 1 0 <==\\n\\n==> n1 cdi-specs.yaml.stderr 0 0 <==\\n"
    >>> log += b"cat: can't open '/etc/cdi/*.yaml': No such file or directory\\n"
    >>> [(p.file, p.exit_code, p.data, p.error) for p in split(log, "n1")]
    [('kubelet.log', 0, b'line\\n', ''), ('cdi-specs.yaml', 1, b'', "cat: can't open '/etc/cdi/*.yaml': No such file or directory")]
    """
    frame = re.compile(rb"\n==> " + re.escape(nonce.encode()) + rb" (\S+) (\d+) (\d+) <==\n")
    pieces = frame.split(output)
    found: dict[str, Part] = {}
    for i in range(1, len(pieces) - 3, 4):
        name, rc, secs = (p.decode("utf-8", "replace") for p in pieces[i : i + 3])
        body = pieces[i + 3]
        base = found.get(name.removesuffix(".stderr"))
        if name.endswith(".stderr") and base is not None:
            lines = [x.strip() for x in body.decode("utf-8", "replace").splitlines() if x.strip()]
            error = lines[-1][:300] if lines else ""
            found[base.file] = Part(base.file, base.exit_code, base.seconds, base.data, error)
        elif not name.endswith(".stderr"):
            found[name] = Part(name, int(rc), float(secs), body, "")
    return list(found.values())


def pod_name() -> str:
    """A fresh name for the debug pod (random: it says nothing about the node)."""
    return POD_PREFIX + secrets.token_hex(5)


def pod(name: str, node: str, image: str, script_text: str) -> dict[str, Any]:
    """The debug pod: kubectl debug's node pod with the sysadmin profile (host PID, network and
    IPC namespaces, the node's root at /host, privileged, every taint tolerated, never
    restarted), without a service-account token (the script needs no API), ending by itself
    after DEADLINE seconds at the latest.

    >>> spec = pod("hami-node-debug-1", "n1", DEFAULT_IMAGE, "true")["spec"]
    >>> spec["nodeName"], spec["hostPID"], spec["containers"][0]["securityContext"]
    ('n1', True, {'privileged': True})
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "nodeName": node,
            "hostPID": True,
            "hostNetwork": True,
            "hostIPC": True,
            "restartPolicy": "Never",
            "activeDeadlineSeconds": DEADLINE,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "tolerations": [{"operator": "Exists"}],
            "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
            "containers": [
                {
                    "name": "debugger",
                    "image": image,
                    "command": ["sh", "-c", script_text],
                    "volumeMounts": [{"name": "host-root", "mountPath": "/host"}],
                    "securityContext": {"privileged": True},
                }
            ],
        },
    }
