"""Container-runtime facts across config files: CDI kinds and device names, the toolkit's modes
and default kinds (host and GPU Operator copies), containerd's default runtime and handlers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from analyzer.facts.model import FactSet, Where
from analyzer.structured import after_command

if TYPE_CHECKING:  # imported when a bundle holds their kinds (parse/registry.py)
    from analyzer.parse.configs import ConfigFacts

_DEVICE_NAME_RE = re.compile(r"(?:^|\.)devices\.\d+\.name$")
_RUNTIME_RE = re.compile(r"\.runtimes\.([\w.-]+)\.runtime_type$")
# a handler's runc options: `SystemdCgroup` (containerd 1.3+; the pre-1.5 CRI plugin's lowercase
# `systemdCgroup` too), containerd's default false, which is the cgroupfs driver
_OPTIONS_RE = re.compile(r"\.runtimes\.([\w.-]+)\.options\.(\w+)$")
# The CRI plugin's containerd table (config v1 `cri`, v2 `grpc.v1.cri`, v3 `cri.v1.runtime`): the
# only place default_runtime_name lives. Only a key of that table itself shows what it holds: a
# pasted fragment of its runtimes, or nvidia-ctk's drop-in (an empty header above the nvidia
# runtime, merged under the node's config.toml), says nothing about the default runtime; nor does
# `runtime = "runc"` under io.containerd.runtime.v1.linux (the old shim's binary).
_CRI_CONTAINERD_KEY_RE = re.compile(r"\.cri(?:\.v1\.runtime)?\.containerd\.[^.]+$")
# its header line: `[plugins."io.containerd.grpc.v1.cri".containerd]` (v2), `[plugins.cri.containerd]`
# (v1), `[plugins."io.containerd.cri.v1.runtime".containerd]` (v3; either quote)
_CRI_CONTAINERD_HEADER_RE = re.compile(
    r"""^\s*\[\s*plugins\.(?:(["'])io\.containerd\.(?:grpc\.v1\.cri|cri\.v1\.runtime)\1|cri)"""
    r"\.containerd\s*\]"
)
# containerd 1.x's `default_runtime` table (deprecated; v1's runtime_engine) is the default runtime
# itself (pkg/cri/config ValidatePluginConfig makes it the runtime named "default")
_DEFAULT_RUNTIME_TABLE_RE = re.compile(r"\.cri(?:\.v1\.runtime)?\.containerd\.default_runtime\.")
# containerd 1.x's v1 linux shim runs the binary its own plugin names (`[plugins.linux] runtime =`,
# or `[plugins."io.containerd.runtime.v1.linux"]`) for a runtime whose type is that shim
_V1_SHIM_BINARY_RE = re.compile(r"(?:^|\.)(?:linux|io\.containerd\.runtime\.v1\.linux)\.runtime$")
_V1_SHIM = "io.containerd.runtime.v1.linux"
# containerd's own default when the table has no default_runtime_name (containerd
# internal/cri/config/config_unix.go DefaultRuntimeConfig, pkg/cri/config in 1.x: DefaultRuntimeName "runc").
_CONTAINERD_DEFAULT_RUNTIME = "runc"


def _read_options(
    cf: ConfigFacts, handler: str, key: str, value: object, options: dict, where: dict
) -> None:
    """A handler's options key into `options` (handler -> SystemdCgroup on, or None where that
    is not known): a value of another type is containerd's decode error, not cgroupfs, and a
    table the paste shows only in part may have lost the key."""
    if key.lower() == "systemdcgroup":
        if not isinstance(value, bool):
            options[handler] = None
            return
        if value:
            options[handler] = True
            where.setdefault("options", Where(cf.file, cf.line_of(key)))
            return
    if handler in options:
        return
    header = re.compile(
        rf"""^\s*\[[^\]]*\.runtimes\.["']?{re.escape(handler)}["']?\.options\s*\]"""
    )
    options[handler] = False if cf.shows_whole(header) else None
    where.setdefault("options", Where(cf.file, cf.line_of(key)))


def produce(configs: list[ConfigFacts], facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import config
    >>> fs = FactSet()
    >>> produce([config("containerd-config", '[plugins."io.containerd.grpc.v1.cri".containerd]\\n  default_runtime_name = "nvidia"\\n[plugins.')], fs)
    >>> fs.value("containerd.default_runtime"), str(fs.where("containerd.default_runtime"))
    ('nvidia', 'containerd-config.txt:2')
    >>> fs.lookup("toolkit.modes")
    UNKNOWN

    A CRI containerd table without default_runtime_name runs containerd's default, runc; a
    fragment without that table leaves the default runtime unknown:

    >>> fs = FactSet()
    >>> produce([config("containerd-config", '[plugins."io.containerd.grpc.v1.cri".containerd]\\n  snapshotter = "overlayfs"\\n')], fs)
    >>> fs.value("containerd.default_runtime")
    'runc'
    >>> fs = FactSet()
    >>> produce([config("containerd-config", '[plugins."io.containerd.runtime.v1.linux"]\\n  runtime = "runc"\\n  shim = "containerd-shim"\\n')], fs)
    >>> fs.lookup("containerd.default_runtime")
    UNKNOWN

    A paste of the runtimes only (or nvidia-ctk's drop-in, an empty header above them) does not
    show the table; containerd 1.x's `default_runtime` table is the default runtime:

    >>> fs = FactSet()
    >>> produce([config("containerd-config", '[plugins."io.containerd.grpc.v1.cri".containerd]\\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\\n  BinaryName = "/usr/bin/nvidia-container-runtime"\\n')], fs)
    >>> fs.lookup("containerd.default_runtime")
    UNKNOWN
    >>> fs = FactSet()
    >>> produce([config("containerd-config", '[plugins.cri.containerd]\\n  snapshotter = "overlayfs"\\n[plugins.cri.containerd.default_runtime]\\n  runtime_engine = "/usr/bin/nvidia-container-runtime"\\n')], fs)
    >>> fs.value("containerd.default_runtime")
    'nvidia'

    The cgroup driver each handler with an options table runs (containerd's default: cgroupfs):

    >>> fs = FactSet()
    >>> produce([config("containerd-config", '[plugins.cri.containerd.runtimes.runc.options]\\n  SystemdCgroup = true\\n[plugins.cri.containerd.runtimes.nvidia.options]\\n  BinaryName = "nvidia-container-runtime"\\n')], fs)
    >>> fs.value("containerd.systemd_cgroup_runtimes"), fs.value("containerd.cgroupfs_runtimes")
    (['runc'], ['nvidia'])
    """
    kinds: dict[str, set[str]] = {}
    kind_where: dict[str, Where] = {}
    modes: list[str] = []
    default_kinds: list[str] = []
    cdi_mode_kinds: list[str] = []
    where: dict[str, Where] = {}
    runtimes: set[str] = set()
    options: dict[str, bool | None] = {}  # per handler with an options table: SystemdCgroup on
    default_runtime = enable_cdi = None
    unsure = whole = False
    cri_table: Where | None = None
    for cf in configs:
        v = cf.values
        if cf.kind == "cdi-spec":
            facts.mark_known("cdi.")
            kind = v.get("kind") or next((x for k, x in v.items() if k.endswith(".kind")), None)
            names = {str(x) for k, x in v.items() if _DEVICE_NAME_RE.search(k)}
            if kind:
                kinds.setdefault(str(kind), set()).update(names)
                kind_where.setdefault(str(kind), Where(cf.file, cf.line_of("kind")))
        elif cf.kind == "toolkit-config":
            facts.mark_known("toolkit.")
            mode = str(v.get("nvidia-container-runtime.mode", v.get("mode", "auto")))
            modes.append(mode)
            where.setdefault("mode", Where(cf.file, cf.line_of("mode")))
            dk = v.get("nvidia-container-runtime.modes.cdi.default-kind")
            if dk:
                default_kinds.append(str(dk))
                where.setdefault("kind", Where(cf.file, cf.line_of("default-kind")))
                if mode == "cdi":
                    cdi_mode_kinds.append(str(dk))
        elif cf.kind == "containerd-config":
            facts.mark_known("containerd.enable_cdi", "containerd.runtimes")
            for k, x in v.items():
                if cri_table is None and _CRI_CONTAINERD_KEY_RE.search(k):
                    cri_table = Where(cf.file, cf.line_of(k))
                    # containerd's own default only from its table shown whole: a paste cut in
                    # it, or with lines of it left out, may have lost default_runtime_name
                    whole = cf.shows_whole(_CRI_CONTAINERD_HEADER_RE)
                if _DEFAULT_RUNTIME_TABLE_RE.search(k) and default_runtime is None:
                    table = {n: y for n, y in v.items() if _DEFAULT_RUNTIME_TABLE_RE.search(n)}
                    binary = "nvidia" in " ".join(str(y) for y in table.values())
                    default_runtime = "nvidia" if binary else _CONTAINERD_DEFAULT_RUNTIME
                    where["runtime"] = Where(cf.file, cf.line_of(k))
                if _V1_SHIM_BINARY_RE.search(k) and "nvidia" in str(x) and default_runtime is None:
                    # the shim's binary is nvidia's; it is the default's when the default runs the shim
                    shim = any(
                        str(y) == _V1_SHIM for n, y in v.items() if n.endswith("runtime_type")
                    )
                    if shim:
                        default_runtime = "nvidia"
                        where["runtime"] = Where(cf.file, cf.line_of("runtime"))
                    unsure = not shim  # an nvidia binary the default may or may not run
                if k.endswith(".default_runtime_name") and default_runtime is None:
                    default_runtime = str(x)
                    where["runtime"] = Where(cf.file, cf.line_of("default_runtime_name"))
                if k.endswith("enable_cdi"):
                    enable_cdi = bool(x) or bool(enable_cdi)
                    where["cdi"] = Where(cf.file, cf.line_of("enable_cdi"))
                m = _RUNTIME_RE.search(k)
                if m:
                    runtimes.add(m[1])
                    where.setdefault("runtimes", Where(cf.file, cf.line_of("runtime_type")))
                o = _OPTIONS_RE.search(k)
                if o:
                    _read_options(cf, o[1], o[2], x, options, where)
    if kinds:
        first = next(iter(kind_where.values()))
        facts.put("cdi.kinds", sorted(kinds), first)
        for k, names in kinds.items():
            facts.put(f"cdi.devices.{k}", sorted(names), kind_where[k])
    if modes:
        facts.put("toolkit.modes", sorted(set(modes)), where.get("mode"))
    if default_kinds:
        facts.put("toolkit.default_kinds", sorted(set(default_kinds)), where.get("kind"))
        judged = cdi_mode_kinds or default_kinds
        facts.put("toolkit.cdi_default_kinds", sorted(set(judged)), where.get("kind"))
        if kinds:
            uuid_names = [
                n for k in judged for n in kinds.get(k, set()) if n.startswith(("GPU-", "MIG-"))
            ]
            has_spec = any(k in kinds for k in judged)
            facts.put(
                "cdi.default_kind_uuid_names",
                len(uuid_names) if has_spec else None,
                where.get("kind"),
            )
    _docker(configs, facts)
    if default_runtime is None and cri_table is not None and whole and not unsure:
        default_runtime, where["runtime"] = _CONTAINERD_DEFAULT_RUNTIME, cri_table
    if default_runtime is not None:
        facts.put("containerd.default_runtime", default_runtime, where["runtime"])
    if enable_cdi is not None:
        facts.put("containerd.enable_cdi", enable_cdi, where["cdi"])
    if runtimes:
        facts.put("containerd.runtimes", sorted(runtimes), where.get("runtimes"))
    if options:
        systemd = sorted(r for r, on in options.items() if on)
        facts.put("containerd.systemd_cgroup_runtimes", systemd, where.get("options"))
        cgroupfs = sorted(r for r, on in options.items() if on is False)
        facts.put("containerd.cgroupfs_runtimes", cgroupfs, where.get("options"))


# dockerd's own default runtime when daemon.json names none (moby daemon/config: StockRuntimeName)
_DOCKER_DEFAULT_RUNTIME = "runc"
_DOCKER_RUNTIME_RE = re.compile(r"^runtimes\.([\w.-]+?)\.(?:path|runtimeType)$")


def _docker(configs: list[ConfigFacts], facts: FactSet) -> None:
    """Docker's daemon.json, read whole: its default runtime (dockerd's own, runc, when it names
    none), whether that runtime runs NVIDIA's binary, and the runtimes it declares. A paste that
    is not one JSON object (a fragment of its keys, which YAML would read as a whole file without
    a default) gives nothing; of several, the last is the node's state (an issue's "I changed it
    to ...").

    >>> from analyzer.dev.samples import config
    >>> fs = FactSet()
    >>> _docker([config("docker-daemon-config", '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}, "default-runtime": "nvidia"}')], fs)
    >>> fs.value("docker.default_runtime"), fs.value("docker.default_runs_nvidia"), fs.value("docker.runtimes")
    ('nvidia', True, ['nvidia'])
    >>> fs = FactSet()
    >>> _docker([config("docker-daemon-config", '{"exec-opts": ["native.cgroupdriver=systemd"]}')], fs)
    >>> fs.value("docker.default_runtime"), fs.value("docker.default_runs_nvidia"), fs.lookup("docker.runtimes")
    ('runc', False, UNKNOWN)
    >>> fs = FactSet()
    >>> _docker([config("docker-daemon-config", '{"default-runtime": "nvidia-container-runtime", "runtimes": {"nvidia-container-runtime": {"path": "/usr/bin/nvidia-container-runtime"}}}')], fs)
    >>> fs.value("docker.default_runs_nvidia")
    True
    >>> fs = FactSet()
    >>> _docker([config("docker-daemon-config", '"runtimes": {\\n  "nvidia": {"path": "/usr/bin/nvidia-container-runtime"}\\n}')], fs)
    >>> fs.lookup("docker.default_runtime")
    UNKNOWN
    """
    read = [
        cf
        for cf in configs
        if cf.kind == "docker-daemon-config"
        and cf.values
        and not cf.warnings
        and after_command(cf.text or "").lstrip().startswith("{")  # loaded as JSON, not YAML
    ]
    if not read:
        return
    cf = read[-1]
    v = cf.values
    default = str(v.get("default-runtime") or _DOCKER_DEFAULT_RUNTIME)
    where = Where(cf.file, cf.line_of("default-runtime") if "default-runtime" in v else None)
    binary = " ".join(
        str(v.get(f"runtimes.{default}.{k}", "")) for k in ("path", "options.BinaryName")
    )
    facts.put("docker.default_runtime", default, where)
    facts.put("docker.default_runs_nvidia", default == "nvidia" or "nvidia" in binary, where)
    names = sorted({m[1] for k in v if (m := _DOCKER_RUNTIME_RE.search(k))})
    if names:
        facts.put("docker.runtimes", names, Where(cf.file, cf.line_of("runtimes")))
