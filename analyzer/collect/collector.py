"""One collection run: check the cluster answers, find HAMi, run the plan into a staging folder,
write manifest.json, redact when asked, and archive."""

from __future__ import annotations

import datetime as dt
import json
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.atomic import atomic_path
from analyzer.collect import discover, plan
from analyzer.collect.runner import Call, Runner
from analyzer.errors import AnalyzerError
from analyzer.kinds import Catalogue
from analyzer.parse.manifest import MANIFEST_API, MANIFEST_KIND
from analyzer.report.collect import DEFAULT_NAMESPACE, DEFAULT_RELEASE

MAX_NODES = 10  # nodes collected when none is named (those running the HAMi device plugin)
MAX_PODS = 10  # pending or failing pods described
TAIL_LINES = 5000
VERSION_TIMEOUT = 10.0  # seconds for the first call, which tells whether the cluster answers
NOT_RUNNING = "status.phase!=Running,status.phase!=Succeeded"
NOT_FOUND = "not found by pod labels"


class CollectError(AnalyzerError):
    """The collection cannot start (no kubectl, no cluster): one line, exit 2."""


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
    redact: Callable[..., Any] | None = None  # analyzer.redact.redact_tree when asked for


@dataclass(frozen=True)
class Result:
    output: Path
    files: int
    calls: list[Call]
    manifest: dict[str, Any]


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

    def kubectl_read(self, *args: str, timeout: float | None = None) -> dict[str, Any] | None:
        timeout = timeout or self.opts.timeout
        data = self.runner.read([*self.kubectl, *args, f"--request-timeout={timeout:g}s"], timeout)
        try:
            doc = json.loads(data) if data else None
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
            raise CollectError(f"cannot reach the cluster with {call.command}: {why}")
        client = (doc or {}).get("clientVersion") or {}
        return {"kubectl": client.get("gitVersion", ""), "server": server.get("gitVersion", "")}

    def run_step(self, step: plan.Step) -> Call:
        if step.program == "helm":
            if not self.helm:
                self.runner.skip(shlex.join(["helm", *step.args]), "helm not found on PATH")
                return self.runner.calls[-1]
            return self.runner.keep([*self.helm, *step.args], step.file, step.kind)
        argv = [*self.kubectl, *step.args, f"--request-timeout={self.opts.timeout:g}s"]
        return self.runner.keep(argv, step.file, step.kind)

    def find_install(self) -> tuple[discover.Install, str]:
        """HAMi's pods by label: in --namespace, else in every namespace, else (listing every
        namespace forbidden) in kube-system."""
        scopes = [["-n", self.opts.namespace]] if self.opts.namespace else [["-A"]]
        scopes += [] if self.opts.namespace else [["-n", DEFAULT_NAMESPACE]]
        for scope in scopes:
            doc = self.kubectl_read("get", "pods", *scope, "-l", discover.SELECTOR, "-o", "json")
            if doc is not None:
                install = discover.find_install(doc)
                if install.namespace:
                    return install, f"pod labels ({' '.join(scope)})"
        return discover.Install(None, None, ()), NOT_FOUND

    def problem_pods(self, install: discover.Install, namespace: str) -> list[tuple[str, str]]:
        if self.opts.pods:
            return [tuple(p.split("/", 1)) for p in self.opts.pods]  # type: ignore[misc]
        doc = self.kubectl_read(
            "get", "pods", "-A", f"--field-selector={NOT_RUNNING}", "-o", "json"
        )
        if doc is None:
            doc = self.kubectl_read(
                "get", "pods", "-n", namespace, f"--field-selector={NOT_RUNNING}", "-o", "json"
            )
        pods = discover.problem_pods(doc or {}, install, MAX_PODS)
        return [(p.namespace, p.name) for p in pods]

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

    def run(self) -> dict[str, Any]:
        started = dt.datetime.now(dt.UTC)
        versions = self.versions()
        install, found_by = self.find_install()
        namespace = self.opts.namespace or install.namespace or DEFAULT_NAMESPACE
        release = install.release or DEFAULT_RELEASE
        running = install.plugin_nodes()
        nodes = list(self.opts.nodes) or running[:MAX_NODES]
        pods = install.on_nodes(nodes)
        covered = {c for p in pods for c in p.containers}
        values = {"NS": namespace, "RELEASE": release}
        for step in plan.cluster_steps(self.catalogue, values, nodes, covered):
            self.run_step(step)
        self.logs(pods)
        for ns, name in self.problem_pods(install, namespace):
            for step in plan.pod_steps(self.catalogue, ns, name):
                self.run_step(step)
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
            "calls": [asdict(c) for c in self.runner.calls],
            "node_commands": [
                {"title": t, "command": c} for t, c in plan.node_commands(self.catalogue, nodes)
            ],
        }


def collect(opts: Options, catalogue: Catalogue, progress: Callable[[str], None]) -> Result:
    with tempfile.TemporaryDirectory(prefix="hami-collect-") as tmp:
        staging = Path(tmp) / "bundle"
        staging.mkdir()
        collector = Collector(opts, catalogue, staging, progress)
        manifest = collector.run()
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if opts.redact is not None:
            redacted = Path(tmp) / "redacted"
            opts.redact(staging, redacted)
            staging = redacted
        files = write_archive(staging, opts.output, manifest["collected_at"])
    return Result(opts.output, files, collector.runner.calls, manifest)


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


def find_program(name: str, given: str | None) -> str | None:
    if given:
        return given if Path(given).is_file() else None
    return shutil.which(name)


def summary(result: Result) -> str:
    """What was written, what could not be collected, and what to run on the node."""
    counts: dict[str, int] = {}
    for c in result.calls:
        if c.status not in ("ok", "empty"):
            counts[c.status] = counts.get(c.status, 0) + 1
    problems = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines = [
        f"wrote {result.output}: {result.files} files from {len(result.calls)} calls"
        + (f" ({problems}; see manifest.json)" if problems else "")
    ]
    hami, nodes = result.manifest["hami"], result.manifest["nodes"]
    if hami["found_by"] == NOT_FOUND:
        lines.append("HAMi's pods were not found by their labels: name its namespace with -n")
    if not nodes:
        lines.append("no GPU node found running HAMi's device plugin: name one with --node")
    if left := result.manifest["nodes_left_out"]:
        lines.append(f"{len(left)} more nodes run HAMi's device plugin: name them with --node")
    where = nodes[0] if len(nodes) == 1 else "each GPU node"
    lines.append(f"Run these on {where} and attach the output too:")
    lines += [f"  {n['command']}    # {n['title']}" for n in result.manifest["node_commands"]]
    return "\n".join(lines)
