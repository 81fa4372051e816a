"""Whether the device plugin runs anywhere, from what kubectl printed about its DaemonSet and pods:
`kubectl get ds` rows (DESIRED), `kubectl describe daemonset` (Desired Number of Nodes Scheduled,
Node-Selector), and a listing of the plugin's pods or DaemonSets that answered "No resources
found in <ns> namespace." A DaemonSet counts as a device plugin's when its name says so."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.facts.model import FactSet, Where
from analyzer.parse.logs import READ_WHOLE_ROWS, ParsedLog

PLUGIN_RE = re.compile(r"device[-_]?plugin|nvdp|vgpu-device", re.I)
NOT_PLUGIN_RE = re.compile(r"mps-control|validator", re.I)  # GPU Operator DaemonSets named after it
_GET_RE = re.compile(
    r"\bkubectl\b(?P<args>.*?\bget\s+(?P<res>po|pods?|ds|daemonsets?(?:\.apps)?|all)\b.*)$", re.I
)
COMMAND_CHARS = 4096
_NONE_RE = re.compile(r"^No resources found(?: in (?P<ns>\S+) namespace)?\.?\s*$")
_DS_HEADER_RE = re.compile(r"^(?:NAMESPACE\s+)?NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE")
_DS_ROW_RE = re.compile(
    r"^(?:(?P<ns>[a-z0-9][\w.-]*)\s+)?(?P<name>[a-z0-9][\w.-]*)\s+(?P<desired>\d+)\s+(?P<current>\d+)"
    r"\s+(?P<ready>\d+)\s+\d+\s+\d+(?:\s+(?P<selector>\S+))?"
)
_DESCRIBE_NAME_RE = re.compile(r"^Name:\s+(?P<name>\S+)\s*$")
_DESCRIBE_DESIRED_RE = re.compile(r"^Desired Number of Nodes Scheduled:\s*(?P<n>\d+)\s*$")
_DESCRIBE_SELECTOR_RE = re.compile(r"^Node-Selector:\s*(?P<sel>.*?)\s*$")


@dataclass
class DaemonSetSeen:
    """A DaemonSet as a bundle shows it: how many pods it wants, and where."""

    name: str
    desired: int
    node_selector: str | None
    where: Where


def daemonsets(log: ParsedLog) -> list[DaemonSetSeen]:
    """Device-plugin DaemonSets a `get ds` table or a `describe daemonset` shows."""
    out: list[DaemonSetSeen] = []
    if not _mentions(
        log, ["DESIRED", "Desired Number of Nodes Scheduled", "get ds", "get daemonset"]
    ):
        return out  # no table's header, describe's line or command: no row to read
    file = log.artefact.file.name
    in_table = False
    name: str | None = None
    selector: str | None = None
    for line, text in log.frame.select("line", "text").iter_rows():
        text = (text or "").rstrip()
        if _DS_HEADER_RE.match(text):
            in_table = True
            continue
        # `kubectl get ds ... | grep nvidia`: the filter took the header out, the rows follow
        if len(text) < COMMAND_CHARS and "get" in text and (m := _GET_RE.search(text)):
            in_table = m["res"].lower().startswith(("ds", "daemonset")) and "|" in m["args"]
            continue
        if in_table:
            m = _DS_ROW_RE.match(text)
            if m is None:
                in_table = bool(text.strip() == "") and in_table
                continue
            if _is_plugin(m["name"], m["selector"]):
                out.append(
                    DaemonSetSeen(m["name"], int(m["desired"]), m["selector"], Where(file, line))
                )
            continue
        if m := _DESCRIBE_NAME_RE.match(text):
            name, selector = m["name"], None
        elif (m := _DESCRIBE_SELECTOR_RE.match(text)) and name:
            selector = m["sel"]
        elif (m := _DESCRIBE_DESIRED_RE.match(text)) and name and _is_plugin(name, selector):
            out.append(DaemonSetSeen(name, int(m["n"]), selector, Where(file, line)))
            name = None
    return out


def _is_plugin(name: str, selector: str | None = None) -> bool:
    """A device plugin's DaemonSet; not the GPU Operator's plugin behind its deploy label (the
    operator keeps it at 0 nodes on purpose where another plugin, HAMi's, serves the GPUs)."""
    if selector and "nvidia.com/gpu.deploy.device-plugin" in selector:
        return False
    return bool(PLUGIN_RE.search(name)) and not NOT_PLUGIN_RE.search(name)


def empty_listing(log: ParsedLog) -> Where | None:
    """The "No resources found" answer of a `kubectl get` that asked for device-plugin pods or
    DaemonSets (by name, label, grep or namespace): the plugin is not deployed there."""
    if not _mentions(log, ["No resources found"]):
        return None
    asked = False
    for line, text in log.frame.select("line", "text").iter_rows():
        text = (text or "").strip()
        # a command line is short; the search is quadratic in the `kubectl` words of a long line
        if len(text) < COMMAND_CHARS and (m := _GET_RE.search(text)):
            asked = bool(PLUGIN_RE.search(m["args"]))
            continue
        if asked and _NONE_RE.match(text):
            return Where(log.artefact.file.name, line)
        if text:
            asked = False
    return None


def _mentions(log: ParsedLog, needles: list[str]) -> bool:
    """Some line of the log holds one of these texts (one vectorised pass: the line loops
    above cost milliseconds per thousand lines, and a big log keeps thousands; a few lines are
    read in Python, where the query costs more than the search)."""
    texts = log.frame.get_column("text")
    if len(texts) <= READ_WHOLE_ROWS:
        return any(x in text for text in texts.to_list() if text is not None for x in needles)
    return bool(texts.str.contains_any(needles).any())


def produce(logs: list[ParsedLog], facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import parsed
    >>> fs = FactSet(); produce([parsed("$ kubectl get ds -n gpu\\nNAME  DESIRED  CURRENT  READY  UP-TO-DATE  AVAILABLE  NODE SELECTOR  AGE\\nnvdp-nvidia-device-plugin  0  0  0  0  0  <none>  3m\\n")], fs)
    >>> fs.value("device_plugin_ds.desired"), fs.value("device_plugin_ds.name"), str(fs.where("device_plugin_ds.desired"))
    (0, 'nvdp-nvidia-device-plugin', 'sample.txt:3')
    >>> grep = "$ kubectl get ds -A -o wide | grep nvid\\nnvidia-device-plugin   nvdp-nvidia-device-plugin   0   0   0   0   0   <none>   4m20s   ctr\\n"
    >>> fs = FactSet(); produce([parsed(grep)], fs); fs.value("device_plugin_ds.desired"), fs.value("device_plugin_ds.node_selector")
    (0, '<none>')
    >>> fs = FactSet(); produce([parsed("$ kubectl get ds -A\\nnvdp-nvidia-device-plugin  0  0  0  0  0  <none>  3m\\n")], fs)
    >>> fs.value("device_plugin_ds.desired")
    >>> fs = FactSet(); produce([parsed("Name:           hami-device-plugin\\nSelector:       app=x\\nNode-Selector:  gpu=on\\nDesired Number of Nodes Scheduled: 0\\n")], fs)
    >>> fs.value("device_plugin_ds.desired"), fs.value("device_plugin_ds.node_selector")
    (0, 'gpu=on')
    >>> table = "NAME  DESIRED  CURRENT  READY  UP-TO-DATE  AVAILABLE  NODE SELECTOR  AGE\\n"
    >>> rows = "hami-device-plugin  2  2  2  2  2  gpu=on  9d\\nnvidia-device-plugin-mps-control-daemon  0  0  0  0  0  x=y  9d\\nold-nvidia-device-plugin  0  0  0  0  0  z=w  9d\\n"
    >>> fs = FactSet(); produce([parsed(table + rows)], fs); fs.value("device_plugin_ds.desired")
    2
    >>> fs = FactSet(); produce([parsed("root@m1:~# kubectl get pods -n kube-system -l app.kubernetes.io/component=hami-device-plugin\\nNo resources found in kube-system namespace.\\n")], fs)
    >>> fs.value("device_plugin_pods.listed"), fs.value("device_plugin_ds.desired")
    (0, None)
    >>> fs = FactSet(); produce([parsed("$ kubectl get pods -n monitoring\\nNo resources found in monitoring namespace.\\n")], fs)
    >>> fs.value("device_plugin_pods.listed")
    """
    facts.mark_known("device_plugin_ds.", "device_plugin_pods.")
    seen = [ds for log in logs for ds in daemonsets(log)]
    if seen:  # the plugin runs nowhere only when every device-plugin DaemonSet wants no node
        ds = max(seen, key=lambda d: d.desired)
        facts.put("device_plugin_ds.desired", ds.desired, ds.where)
        facts.put("device_plugin_ds.name", ds.name, ds.where)
        if ds.node_selector:
            facts.put("device_plugin_ds.node_selector", ds.node_selector, ds.where)
    for log in logs:
        where = empty_listing(log)
        if where is not None:
            facts.put("device_plugin_pods.listed", 0, where)
            break
