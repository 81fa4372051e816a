"""What to run, taken from the kind catalogue (rules/kinds.yaml), which stays the one place that
names artefacts and the commands that collect them: its single kubectl/helm commands run as
written (placeholders filled with what discovery found), node-only ones are printed, and only
the pod logs, whose pods and containers are known only at run time, are built here."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from analyzer.catalogue.kinds import Catalogue, Kind
from analyzer.report.next_steps import fill

PROGRAMS = ("kubectl", "helm")
POD_KINDS = ("pod-describe",)  # run once per pending or failing pod found
# chosen object by object from listings (select.py), never a whole namespace
SELECTED_KINDS = ("configmap", "daemonset", "webhook")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]|^\.+$")
_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "(", ")", "<<"}


@dataclass(frozen=True)
class Step:
    kind: str
    program: str  # kubectl | helm
    args: tuple[str, ...]
    file: str  # bundle-relative path of its output


def step_of(kind: Kind, values: dict[str, str | None], folder: str = "") -> Step | None:
    """The catalogue command as a step, when it is one kubectl/helm call redirected to a file
    and every placeholder is known.

    >>> from analyzer.catalogue.kinds import Kind
    >>> k = Kind("lease", "Lease", "config", collect='kubectl get lease -n "$NS" x -o yaml > lease.yaml')
    >>> step_of(k, {"NS": "gpu"}, "c/")
    Step(kind='lease', program='kubectl', args=('get', 'lease', '-n', 'gpu', 'x', '-o', 'yaml'), file='c/lease.yaml')
    >>> step_of(k, {}) is None, step_of(Kind("n", "n", "log", collect="journalctl -u x > x.log"), {})
    (True, None)
    """
    command, needs = fill(kind.collect, values)
    if needs or "$(" in command or "`" in command:
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    operators = [t for t in tokens if t in _OPERATORS]
    if len(tokens) < 4 or operators != [">"] or tokens[-2] != ">" or tokens[0] not in PROGRAMS:
        return None
    return Step(kind.id, tokens[0], tuple(tokens[1:-2]), folder + tokens[-1])


def safe(name: str) -> str:
    """A name as one path component of the bundle (names come from the cluster or the user).

    >>> safe("gpu-node-1"), safe(".."), safe("a/b")
    ('gpu-node-1', '_', 'a_b')
    """
    return _UNSAFE.sub("_", name) or "_"


def cluster_steps(
    catalogue: Catalogue, values: Mapping[str, str | None], nodes: list[str], covered: set[str]
) -> list[Step]:
    """Every cluster-side catalogue command that can run as it is: once, or once per node when
    it names $NODE. Logs of containers in `covered` are collected from their pods instead,
    kinds that stand in for another (describe output for the object) are left out, and so are
    the kinds chosen object by object (SELECTED_KINDS)."""
    out: list[Step] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for kind in catalogue.kinds.values():
        if kind.where != "cluster" or not kind.collect or kind.id in POD_KINDS + SELECTED_KINDS:
            continue
        if kind.counts_as:  # stands in for an object collected as it is (describe output)
            continue
        if covered & set(kind.containers):
            continue
        per_node = '"$NODE"' in kind.collect
        for node in nodes if per_node else [None]:
            step = step_of(kind, {**values, "NODE": node}, f"nodes/{safe(node)}/" if node else "")
            if step is not None and (step.program, step.args) not in seen:
                seen.add((step.program, step.args))
                out.append(step)
    return out


def pod_steps(catalogue: Catalogue, namespace: str, name: str) -> list[Step]:
    out = []
    for kid in POD_KINDS:
        step = step_of(
            catalogue[kid],
            {"POD": name, "POD_NS": namespace},
            f"pods/{safe(namespace)}/{safe(name)}/",
        )
        if step is not None:
            out.append(step)
    return out


def log_steps(
    kind: str,
    namespace: str,
    pod: str,
    container: str,
    previous: bool,
    since: str | None,
    limit_bytes: int,
) -> list[Step]:
    """`kubectl logs` of one container with `--timestamps` (so times carry their year), its
    previous instance too when it restarted.

    >>> [s.file for s in log_steps("log", "gpu", "dp-1", "device-plugin", True, "2h", 1024)]
    ['logs/dp-1/device-plugin.log', 'logs/dp-1/device-plugin.previous.log']
    """
    base: tuple[str, ...] = ("logs", "-n", namespace, "-c", container, "--timestamps")
    base += (f"--limit-bytes={limit_bytes}",) + ((f"--since={since}",) if since else ())
    file = f"logs/{safe(pod)}/{safe(container)}"
    out = [Step(kind, "kubectl", (*base, "--", pod), f"{file}.log")]
    if previous:
        out.append(Step(kind, "kubectl", (*base, "--previous", "--", pod), f"{file}.previous.log"))
    return out


def tail_step(step: Step, lines: int) -> Step:
    """The end of a log whose beginning filled the size bound (startup lines and the latest
    ones are both worth having).

    >>> s = tail_step(log_steps("log", "ns", "p", "c", False, None, 9)[0], 50)
    >>> s.args[-4:], s.file
    (('--timestamps', '--tail=50', '--', 'p'), 'logs/p/c.tail.log')
    """
    flags, pod = step.args[:-2], step.args[-2:]  # (..., "--", POD)
    args = tuple(a for a in flags if not a.startswith("--limit-bytes="))
    return Step(
        step.kind,
        step.program,
        (*args, f"--tail={lines}", *pod),
        step.file.removesuffix(".log") + ".tail.log",
    )


def node_commands(catalogue: Catalogue, nodes: list[str]) -> list[tuple[str, str]]:
    """(title, command) of every node-only kind: what the user runs on the GPU node."""
    values = {"NODE": nodes[0] if len(nodes) == 1 else None}
    return [
        (k.title, fill(k.collect, values)[0])
        for k in catalogue.kinds.values()
        if k.where == "node" and k.collect
    ]
