"""One collection run: check the cluster answers, find HAMi, run the plan into a staging folder,
write manifest.json, redact when asked, and archive."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shlex
import shutil
import tarfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.atomic import atomic_path, private_folder
from analyzer.bundle.text import printable
from analyzer.catalogue.kinds import Catalogue
from analyzer.collect import discover, helm, nodedebug, plan, select
from analyzer.collect.runner import Call, Runner
from analyzer.errors import AnalyzerError
from analyzer.facts.namespace import DEFAULT as DEFAULT_NAMESPACE
from analyzer.parse.manifest import MANIFEST_API, MANIFEST_KIND, NOT_FOUND
from analyzer.report.next_steps import DEFAULT_RELEASE

MAX_NODES = 10  # nodes collected when none is named (those running the HAMi device plugin)
MAX_PODS = 10  # pending or failing pods described
TAIL_LINES = 5000
VERSION_TIMEOUT = 10.0  # seconds for the first call, which tells whether the cluster answers
NOT_RUNNING = "status.phase!=Running,status.phase!=Succeeded"


class CollectError(AnalyzerError):
    """The collection cannot start (no kubectl, no cluster, no such node): one line, exit 2."""


@dataclass(frozen=True)
class Options:
    kubectl: str
    helm: str | None
    output: Path
    nodes: tuple[str, ...] = ()
    pods: tuple[str, ...] = ()  # NS/NAME
    namespace: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    since: str | None = None
    timeout: float = 30.0
    max_log_bytes: int = 32 << 20
    redact: Callable[..., Any] | None = None  # analyzer.redact.redact_tree (with its options)
    map_file: Path | None = None  # where `redact` writes its token map (for the summary)
    node_debug: bool = False
    debug_image: str = nodedebug.DEFAULT_IMAGE


@dataclass(frozen=True)
class Result:
    output: Path
    files: int
    calls: list[Call]
    manifest: dict[str, Any]
    redacted: bool = False
    map_file: Path | None = None


class Collector:
    def __init__(self, opts: Options, catalogue: Catalogue, staging: Path, progress) -> None:
        self.opts = opts
        self.catalogue = catalogue
        self.runner = Runner(staging, opts.timeout, opts.max_log_bytes, progress)
        self.kubectl = [opts.kubectl]
        self.kubectl += ["--context", opts.context] if opts.context else []
        self.kubectl += ["--kubeconfig", opts.kubeconfig] if opts.kubeconfig else []
        self.helm = [opts.helm] if opts.helm else []
        if opts.helm and opts.context:
            self.helm += ["--kube-context", opts.context]
        if opts.helm and opts.kubeconfig:
            self.helm += ["--kubeconfig", opts.kubeconfig]

    def argv(self, *args: str, timeout: float | None = None) -> list[str]:
        """kubectl with the global options first (names after `--` stay last)."""
        return [*self.kubectl, f"--request-timeout={timeout or self.opts.timeout:g}s", *args]

    def kubectl_text(self, *args: str, timeout: float | None = None) -> str | None:
        data = self.runner.read(self.argv(*args, timeout=timeout), timeout)
        return None if data is None else data.decode("utf-8", "replace")

    def kubectl_read(self, *args: str, timeout: float | None = None) -> dict[str, Any] | None:
        text = self.kubectl_text(*args, timeout=timeout)
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None

    def versions(self) -> dict[str, str]:
        """Client and server versions; a cluster that does not answer stops the run here."""
        doc = self.kubectl_read("version", "-o", "json", timeout=VERSION_TIMEOUT)
        server = (doc or {}).get("serverVersion") or {}
        if not server:
            call = self.runner.calls[-1]
            why = call.error or call.status
            raise CollectError(printable(f"cannot reach the cluster with {call.command}: {why}"))
        client = (doc or {}).get("clientVersion") or {}
        return {"kubectl": client.get("gitVersion", ""), "server": server.get("gitVersion", "")}

    def run_step(self, step: plan.Step) -> Call:
        if step.program == "helm":
            if not self.helm:
                return self.helm_from_secret(step)
            return self.runner.keep([*self.helm, *step.args], step.file, step.kind)
        return self.runner.keep(self.argv(*step.args), step.file, step.kind)

    def helm_from_secret(self, step: plan.Step) -> Call:
        """Without the helm binary: the user-supplied values of the release's latest revision,
        read from its release Secret (nothing else of the release is kept)."""
        ns, release = self.values["NS"], self.values["RELEASE"]
        listing = self.kubectl_text(
            "get", "secret", "-n", ns, "-l", helm.SELECTOR.format(release=release),
            "-o", f"jsonpath={helm.LISTING}",
        )  # fmt: skip
        name = helm.latest(listing or "", release)
        if name is None:
            reason = "helm not found on PATH, and " + (
                f"no release Secret of {release}" if listing is not None else "no Secret listing"
            )
            self.runner.skip(shlex.join(["helm", *step.args]), reason)
            return self.runner.calls[-1]
        argv = self.argv("get", "secret", "-n", ns, "-o", f"jsonpath={helm.FIELD}", "--", name)
        return self.runner.keep(argv, step.file, step.kind, transform=helm.user_values)

    def find_install(self) -> tuple[discover.Install, str]:
        """HAMi's pods by label: in --namespace, else in every namespace, else (listing every
        namespace forbidden) in kube-system."""
        scopes = [["-n", self.opts.namespace]] if self.opts.namespace else [["-A"]]
        scopes += [] if self.opts.namespace else [["-n", DEFAULT_NAMESPACE]]
        for scope in scopes:
            selector = discover.selector(self.catalogue.hami)
            doc = self.kubectl_read("get", "pods", *scope, "-l", selector, "-o", "json")
            if doc is not None:
                install = discover.find_install(doc, self.catalogue.hami)
                if install.namespace:
                    return install, f"pod labels ({' '.join(scope)})"
        return discover.Install(None, None, ()), NOT_FOUND

    def check_nodes(self, install: discover.Install) -> None:
        """A named node the cluster does not have stops the run, naming those that run HAMi
        (a node that cannot be looked up, for want of rights, is collected as far as it can)."""
        for node in self.opts.nodes:
            self.kubectl_text("get", "node", "-o", "name", "--", node)
            if self.runner.calls[-1].status == "not-found":
                where = f" in namespace {self.opts.namespace}" if self.opts.namespace else ""
                running = ", ".join(install.plugin_nodes()) or "none found"
                raise CollectError(
                    printable(
                        f"--node {node}: the cluster has no such node; nodes running HAMi's "
                        f"device plugin{where}: {running}"
                    )
                )

    def problem_pods(self, chosen: list[discover.PodRef], namespace: str) -> list[tuple[str, str]]:
        if self.opts.pods:
            return [tuple(p.split("/", 1)) for p in self.opts.pods]  # type: ignore[misc]
        doc = self.kubectl_read(
            "get", "pods", "-A", f"--field-selector={NOT_RUNNING}", "-o", "json"
        )
        if doc is None:
            doc = self.kubectl_read(
                "get", "pods", "-n", namespace, f"--field-selector={NOT_RUNNING}", "-o", "json"
            )
        pods = discover.problem_pods(doc or {}, chosen, MAX_PODS)
        return [(p.namespace, p.name) for p in pods]

    def selected(self, namespace: str, release: str | None) -> None:
        """HAMi's ConfigMaps, the GPU DaemonSets and HAMi's webhook: chosen from listings of
        names and labels (select.py), then fetched by name, never a whole namespace."""
        cms = self.listing("configmap", "-n", namespace)
        hami = self.catalogue.hami
        self.fetch("configmap", select.configmaps(cms or [], release, hami), "configmaps.yaml")
        dss = self.listing("daemonset", "-A")
        if dss is None:  # listing every namespace is forbidden: HAMi's namespace
            dss = self.listing("daemonset", "-n", namespace)
        dss = select.daemonsets(dss or [], namespace, release, hami)
        self.fetch("daemonset", dss, "daemonsets.yaml")
        hooks = self.listing("mutatingwebhookconfiguration")
        self.fetch(
            "mutatingwebhookconfiguration",
            select.webhooks(hooks or [], namespace, hami),
            "webhooks.yaml",
        )

    def listing(self, resource: str, *scope: str) -> list[select.Listed] | None:
        text = self.kubectl_text(
            "get", resource, *scope, "-o", f"jsonpath={select.LISTINGS[resource]}"
        )
        return None if text is None else select.parse_listing(text, resource)

    def fetch(self, resource: str, rows: list[select.Listed], file: str) -> None:
        kind = self.catalogue.by_k8s_kind.get(select.K8S_KINDS[resource], "")
        by_ns: dict[str, list[str]] = {}
        for row in rows:
            by_ns.setdefault(row.namespace, []).append(row.name)
        for ns, names in sorted(by_ns.items()):
            scope = ["-n", ns] if ns else []
            path = f"{plan.safe(ns)}/{file}" if len(by_ns) > 1 and ns else file
            self.runner.keep(
                self.argv("get", resource, *scope, "-o", "yaml", "--", *names), path, kind
            )

    def logs(self, pods: list[discover.PodRef]) -> None:
        for pod in pods:
            for container in pod.containers:
                kind = self.catalogue.by_container.get(container, "container-log")
                steps = plan.log_steps(
                    kind,
                    pod.namespace,
                    pod.name,
                    container,
                    container in pod.restarted,
                    self.opts.since,
                    self.opts.max_log_bytes,
                )
                for step in steps:
                    call = self.run_step(step)
                    if call.truncated:
                        self.run_step(plan.tail_step(step, TAIL_LINES))

    def node_side(self, nodes: list[str], pods: list[discover.PodRef], namespace: str) -> None:
        """--node-debug: the node's files through a debug pod, nvidia-smi through the device
        plugin's pod; each call (and each file) is a manifest line, a refusal too."""
        for node in nodes:
            self.debug_node(node, namespace)
            plugin = next(
                (p for p in pods if p.node == node and p.role == "device-plugin" and p.running),
                None,
            )
            if plugin is not None and plugin.containers:
                container = (
                    "device-plugin"
                    if "device-plugin" in plugin.containers
                    else plugin.containers[0]
                )
                argv = self.argv(
                    "exec", "-n", plugin.namespace, plugin.name, "-c", container, "--",
                    "nvidia-smi", "-q",
                )  # fmt: skip
                self.runner.keep(argv, f"nodes/{plan.safe(node)}/nvidia-smi.txt", "nvidia-smi")

    def debug_node(self, node: str, namespace: str) -> None:
        """The node's files through a debug pod named here before it exists, so it is deleted
        whatever happens after the create call starts (a timeout, Ctrl-C, a TERM); only a
        creation the server refused leaves nothing to delete."""
        nonce = secrets.token_hex(8)
        parts = nodedebug.sections(self.catalogue)
        pod = nodedebug.pod_name()
        spec = nodedebug.pod(pod, node, self.opts.debug_image, nodedebug.script(parts, nonce))
        created: Call | None = None
        try:
            created = self.runner.run_for(
                self.argv("create", "-n", namespace, "--validate=false", "-o", "name", "-f", "-"),
                stdin=json.dumps(spec).encode(),
            )
            if created.status != "ok":
                return  # refused (forbidden, PodSecurity) or cut short: the manifest says so
            wait = max(2 * self.opts.timeout, 60.0)
            self.runner.read(
                self.argv(
                    "wait", "-n", namespace, f"pod/{pod}",
                    "--for=jsonpath={.status.phase}=Succeeded", f"--timeout={wait:g}s",
                ),
                wait,
            )  # fmt: skip
            output = self.runner.read(self.argv("logs", "-n", namespace, "--", pod))
            by_file = {p.file: p for p in nodedebug.split(output or b"", nonce)}
            for section in parts:
                part = by_file.get(section.file)
                if part is None:
                    continue
                self.runner.add(
                    f"chroot /host sh -c {shlex.quote(section.command)}  # in pod {pod}",
                    f"nodes/{plan.safe(node)}/{section.file}",
                    section.kind,
                    part.data,
                    part.exit_code,
                    part.seconds,
                    part.error,
                )
        finally:
            if created is None or created.status not in ("forbidden", "not-found"):
                self.runner.read(
                    self.argv(
                        "delete", "pod", "-n", namespace, "--ignore-not-found", "--wait=false",
                        "--", pod,
                    )
                )  # fmt: skip

    def run(self) -> dict[str, Any]:
        started = dt.datetime.now(dt.UTC)
        versions = self.versions()
        install, found_by = self.find_install()
        self.check_nodes(install)
        namespace = self.opts.namespace or install.namespace or DEFAULT_NAMESPACE
        release = install.release or DEFAULT_RELEASE
        self.values = {"NS": namespace, "RELEASE": release}
        running = install.plugin_nodes()
        nodes = list(self.opts.nodes) or running[:MAX_NODES]
        pods = install.on_nodes(nodes)
        covered = {c for p in pods for c in p.containers}
        for step in plan.cluster_steps(self.catalogue, self.values, nodes, covered):
            self.run_step(step)
        self.selected(namespace, install.release)
        self.logs(pods)
        for ns, name in self.problem_pods(pods, namespace):
            for step in plan.pod_steps(self.catalogue, ns, name):
                self.run_step(step)
        if self.opts.node_debug:
            self.node_side(nodes, pods, namespace)
        self.runner.finish()
        return {
            "kind": MANIFEST_KIND,
            "apiVersion": MANIFEST_API,
            "collected_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "finished_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "collector": f"hami-analyzer {__version__}",
            "versions": versions,
            "context": self.opts.context,
            "hami": {
                "namespace": namespace,
                "release": release,
                "found_by": found_by,
                "other_installs": list(install.others),
            },
            "nodes": nodes,
            "nodes_left_out": [] if self.opts.nodes else running[MAX_NODES:],
            "since": self.opts.since,
            "redacted": self.opts.redact is not None,
            "node_debug": self.opts.node_debug,
            "calls": [asdict(c) for c in self.runner.calls],
            "node_commands": [
                {"title": t, "command": c} for t, c in plan.node_commands(self.catalogue, nodes)
            ],
        }


def collect(opts: Options, catalogue: Catalogue, progress: Callable[[str], None]) -> Result:
    with private_folder("hami-collect-") as tmp:
        staging = Path(tmp) / "bundle"
        staging.mkdir()
        collector = Collector(opts, catalogue, staging, progress)
        manifest = collector.run()
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if opts.redact is not None:
            started = time.monotonic()
            redacted = Path(tmp) / "redacted"
            opts.redact(staging, redacted)
            staging = redacted
            took = time.monotonic() - started
            progress(
                f"[redact] the {len(collector.runner.calls)} calls' files ... ok ({took:.1f} s)"
            )
        files = write_archive(staging, opts.output, manifest["collected_at"])
    return Result(
        opts.output, files, collector.runner.calls, manifest, opts.redact is not None, opts.map_file
    )


def write_archive(folder: Path, output: Path, stamp: str) -> int:
    """A .tar.gz of `folder` under one top folder, written beside `output` and renamed into
    place, so a failed run never leaves half an archive."""
    top = "hami-bundle-" + stamp.replace("-", "").replace(":", "")
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    try:
        with atomic_path(output) as tmp, tarfile.open(tmp, "w:gz") as tar:
            for p in files:
                tar.add(p, f"{top}/{p.relative_to(folder).as_posix()}", recursive=False)
    except OSError as exc:
        raise CollectError(f"cannot write {output}: {exc.strerror or exc}") from None
    return len(files)


def kubeconfigs(given: str | None) -> list[str]:
    """The kubeconfig files kubectl reads: --kubeconfig, else $KUBECONFIG (a list), else
    ~/.kube/config (collect's inputs: no output may land on them)."""
    if given:
        return [given]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [str(Path.home() / ".kube" / "config")]


def find_program(name: str, given: str | None) -> str | None:
    if given:
        return given if Path(given).is_file() else None
    return shutil.which(name)


def summary(result: Result, namespace: str | None = None) -> str:
    """What was written, what could not be collected, how to add the node's side, and last
    the archive, its size and whether it is redacted."""
    counts: dict[str, int] = {}
    for c in result.calls:
        if c.status not in ("ok", "empty"):
            counts[c.status] = counts.get(c.status, 0) + 1
    problems = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines = [
        f"{result.files} files from {len(result.calls)} calls"
        + (f" ({problems}; see manifest.json)" if problems else "")
    ]
    manifest = result.manifest
    hami, nodes = manifest["hami"], manifest["nodes"]
    where = f" in namespace {namespace}" if namespace else ""
    if hami["found_by"] == NOT_FOUND:
        hint = "" if namespace else ": name its namespace with -n"
        lines.append(f"HAMi's pods were not found by their labels{where}{hint}")
    if not nodes:
        lines.append(f"no GPU node found running HAMi's device plugin{where}: name one with --node")
    if left := manifest["nodes_left_out"]:
        lines.append(f"{len(left)} more nodes run HAMi's device plugin: name them with --node")
    if not manifest.get("node_debug"):
        node = nodes[0] if len(nodes) == 1 else "each GPU node"
        lines.append(f"The node's side (or --node-debug to fetch it): run these on {node},")
        lines += [f"  {n['command']}    # {n['title']}" for n in manifest["node_commands"]]
        files = [n["command"].rpartition(" > ")[2] for n in manifest["node_commands"]]
        lines.append(
            "then analyse them with the archive: hami-analyzer analyze "
            + " ".join([str(result.output), *(f for f in files if f)])
        )
    size = result.output.stat().st_size if result.output.exists() else 0
    state = (
        f"redacted (map: {result.map_file})"
        if result.redacted and result.map_file
        else "redacted"
        if result.redacted
        else "WARNING: not redacted (--no-redact): it holds node names, addresses and "
        "registry names; redact it before posting it publicly"
    )
    lines.append(f"wrote {result.output} ({_size(size)}), {state}")
    return printable("\n".join(lines))


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.0f} KiB"
