"""Every fact a rule may name, declared once: its path, type, whether it may be absent, which
producer makes it, the artefact kinds it comes from, and what it means.

A path ending in `.*` declares a family (labels, annotations, config keys). `sources` are the
kinds whose absence makes the fact UNKNOWN (a rule condition on it is then "not evaluated");
an empty tuple means the fact is always known (derived from the whole bundle).
`hami-analyzer rules facts` prints this table for rule authors.
"""

from __future__ import annotations

from dataclasses import dataclass

TYPES = ("int", "float", "str", "bool", "list", "datetime", "any")


@dataclass(frozen=True)
class FactSpec:
    """A declared fact path: its type, who produces it and from which kinds."""

    path: str
    type: str
    producer: str
    sources: tuple[str, ...]
    description: str
    nullable: bool = True

    @property
    def family(self) -> bool:
        return self.path.endswith(".*")


def _f(path, type_, producer, sources, description, nullable=True) -> FactSpec:
    return FactSpec(path, type_, producer, tuple(sources), description, nullable)


NODE = ("node",)
POD = ("pod",)
FACTS: tuple[FactSpec, ...] = (
    # bundle: always known
    _f("bundle.kinds", "list", "bundle", (), "artefact kinds in the bundle", False),
    _f("bundle.node_count", "int", "bundle", (), "Node objects in the bundle", False),
    _f("bundle.collected_at", "datetime", "clock", (), "inferred collection time (UTC)"),
    # node object or describe output
    _f(
        "node.present",
        "bool",
        "node",
        (),
        "a Node object or describe output is in the bundle",
        False,
    ),
    _f("node.name", "str", "node", (), "name of the node analysed (object, or named by logs/pod)"),
    _f("node.form", "str", "node", NODE, "yaml (kubectl get -o yaml/json) or describe"),
    _f("node.labels.*", "str", "node", NODE, "node labels"),
    _f(
        "node.label_managers.*",
        "str",
        "node",
        NODE,
        "field managers that set a label, comma-separated (--show-managed-fields)",
    ),
    _f("node.annotations.*", "str", "node", NODE, "node annotations, raw"),
    _f("node.taints", "list", "node", NODE, "taints as {key, value, effect}"),
    _f("node.taint_keys", "list", "node", NODE, "keys of NoSchedule/NoExecute taints"),
    _f("node.unschedulable", "bool", "node", NODE, "spec.unschedulable"),
    _f("node.ready", "bool", "node", NODE, "the Ready condition is True"),
    _f(
        "node.ready_message",
        "str",
        "node",
        NODE,
        "the Ready condition's reason and message, when it is not True",
    ),
    _f("node.kubelet_version", "str", "node", NODE, "status.nodeInfo.kubeletVersion (v1.28.2)"),
    _f("node.os_image", "str", "node", NODE, "status.nodeInfo.osImage (Bottlerocket OS 1.19 ...)"),
    _f(
        "node.container_runtime",
        "str",
        "node",
        NODE,
        "status.nodeInfo.containerRuntimeVersion (containerd://1.7.2)",
    ),
    _f(
        "node.kernel_version",
        "str",
        "node",
        NODE,
        "status.nodeInfo.kernelVersion (5.15.148-tegra on a Jetson)",
    ),
    _f("node.architecture", "str", "node", NODE, "status.nodeInfo.architecture (amd64, arm64)"),
    _f(
        "node.allocatable.gpu",
        "int",
        "node",
        NODE,
        "allocatable nvidia.com/gpu (0 when the node lists no such resource)",
    ),
    _f(
        "node.capacity.gpu",
        "int",
        "node",
        NODE,
        "capacity nvidia.com/gpu (0 when the node lists no such resource)",
    ),
    _f("node.allocatable.*", "str", "node", NODE, "status.allocatable by resource name, raw"),
    _f(
        "node.allocated.gpu",
        "int",
        "node",
        NODE,
        "nvidia.com/gpu requested by the node's pods (describe node's Allocated resources)",
    ),
    _f(
        "node.unhealthy_gpu_slots",
        "int",
        "node",
        NODE,
        "capacity minus allocatable nvidia.com/gpu: slots the device plugin reports unhealthy",
    ),
    _f(
        "node.free_gpu_slots",
        "int",
        "node",
        NODE,
        "allocatable minus allocated nvidia.com/gpu (vGPU slots no pod holds yet)",
    ),
    _f("node.allocated.*", "str", "node", NODE, "describe node's Allocated resources: requests"),
    _f("node.capacity.*", "str", "node", NODE, "status.capacity by resource name, raw"),
    _f(
        "node.capacity_gpu_resources",
        "list",
        "node",
        NODE,
        "GPU-like resources in Capacity (nvidia.com/gpu, MIG profiles, alpha.kubernetes.io/nvidia-gpu,"
        " other vendors'); empty: no device plugin ever registered a GPU there",
    ),
    _f(
        "node.capacity_gpu_resources_offered",
        "list",
        "node",
        NODE,
        "the GPU-like resources in Capacity at a count above 0 (a MIG profile or a renamed shared "
        "GPU, beside an nvidia.com/gpu the kubelet keeps at 0)",
    ),
    _f("node.hami_annotation_keys", "list", "node", NODE, "hami.io/* and 4pd.io/* annotation keys"),
    # register annotation (node object, or register data a HAMi log printed)
    _f(
        "register.present",
        "bool",
        "register",
        NODE,
        "an NVIDIA register value is known (annotation, or printed by a HAMi log)",
    ),
    _f(
        "register.from",
        "str",
        "register",
        NODE,
        "annotation (node object) or log (printed by the plugin or scheduler)",
    ),
    _f("register.status", "str", "register", NODE, "absent | empty | invalid | elided | ok"),
    _f("register.format", "str", "register", NODE, "json | csv-9 | csv-7 | csv-5"),
    _f("register.error", "str", "register", NODE, "decoder error of an invalid annotation"),
    _f("register.text", "str", "register", NODE, "the raw register value"),
    _f("register.device_count", "int", "register", NODE, "decoded devices"),
    _f(
        "register.unhealthy_count",
        "int",
        "register",
        NODE,
        "devices whose health is false (absent in JSON means unhealthy)",
    ),
    _f(
        "register.health_unknown_count",
        "int",
        "register",
        NODE,
        "devices whose health the format does not tell (csv-5 always writes false)",
    ),
    _f(
        "register.health_absent_count", "int", "register", NODE, "JSON devices without a health key"
    ),
    _f(
        "register.split_total",
        "int",
        "register",
        NODE,
        "sum of count over devices (the expected allocatable)",
    ),
    _f("register.split_counts", "list", "register", NODE, "distinct count values"),
    _f(
        "register.allocatable_gap",
        "int",
        "register",
        NODE,
        "allocatable nvidia.com/gpu minus the sum of count",
    ),
    _f("register.max_devmem", "int", "register", NODE, "largest devmem (MiB) of any GPU"),
    _f("register.max_devcore", "int", "register", NODE, "largest devcore of any GPU"),
    _f("register.types", "list", "register", NODE, "distinct GPU types"),
    _f("register.modes", "list", "register", NODE, "distinct device modes (hami-core, mig, mps)"),
    _f(
        "register.index_or_numa_absent",
        "int",
        "register",
        NODE,
        "JSON devices lacking index or numa (normal: 0 omitted)",
    ),
    _f("register.other_vendor_keys", "list", "register", NODE, "register keys of other vendors"),
    # handshake annotation
    _f("handshake.present", "bool", "handshake", NODE, "hami.io/node-handshake exists"),
    _f("handshake.state", "str", "handshake", NODE, "Requesting | Reported | Deleted | other"),
    _f("handshake.value", "str", "handshake", NODE, "raw handshake value"),
    _f("handshake.time", "datetime", "handshake", NODE, "timestamp in the handshake value"),
    _f("handshake.age_seconds", "float", "handshake", NODE, "collection time minus handshake time"),
    _f(
        "handshake.other_vendor_keys",
        "list",
        "handshake",
        NODE,
        "handshake keys with a vendor suffix (-dcu, -xpu, ...)",
    ),
    _f(
        "handshake.nvidia_suffix_key",
        "bool",
        "handshake",
        NODE,
        "a hami.io/node-handshake-nvidia key exists (it never should)",
    ),
    # the failing pod
    _f("pod.present", "bool", "pod", (), "a pod (describe or YAML) is in the bundle", False),
    _f("pod.name", "str", "pod", POD, "pod name"),
    _f("pod.namespace", "str", "pod", POD, "pod namespace"),
    _f("pod.status", "str", "pod", POD, "pod status / phase"),
    _f("pod.node", "str", "pod", POD, "node the pod is bound to"),
    _f("pod.scheduler_name", "str", "pod", POD, "spec.schedulerName (known from YAML only)"),
    _f("pod.runtime_class", "str", "pod", POD, "runtimeClassName"),
    _f(
        "pod.privileged_container",
        "str",
        "pod",
        POD,
        "the first container with securityContext.privileged: true (known from YAML only)",
    ),
    _f(
        "pod.owner",
        "str",
        "pod",
        POD,
        "KIND/NAME of the workload whose pod template was read as the pod (a Deployment, Job...)",
    ),
    _f("pod.annotations.*", "str", "pod", POD, "pod annotations"),
    _f(
        "pod.env.*",
        "str",
        "pod",
        POD,
        "containers' environment variables set in the spec (env name/value, a describe's"
        " Environment), merged",
    ),
    _f(
        "pod.limits.*",
        "int",
        "pod",
        POD,
        "container resource limits, merged (numbers for nvidia.com/* resources)",
    ),
    _f(
        "pod.gpu_total",
        "int",
        "pod",
        POD,
        "nvidia.com/gpu summed over all containers of the pod (limit, else request)",
    ),
    _f(
        "pod.gpu_per_container_max",
        "int",
        "pod",
        POD,
        "the most vGPUs one container asks for, nvidia.com/gpu or volcano.sh/vgpu-number (each"
        " of its vGPUs needs its own card)",
    ),
    _f("pod.event_sources", "list", "pod", POD, "the From column of the pod's events"),
    _f("pod.event_reasons", "list", "pod", POD, "the Reason column of the pod's events"),
    _f("pod.container_reasons", "list", "pod", POD, "container state and last-state reasons"),
    _f(
        "pod.selector_matching_cards",
        "int",
        "selector",
        ("node", "pod"),
        "cards left by the pod's use-/nouse-gputype and -gpuuuid annotations",
    ),
    # configuration files
    _f(
        "config.*",
        "any",
        "config",
        (),
        "flattened config values: config.<kind>.<dotted.key> (known when that kind is in the bundle)",
    ),
    _f(
        "helm.kube_scheduler_tag",
        "str",
        "config",
        (),
        "the chart's kube-scheduler image tag (scheduler.kubeScheduler.image.tag / imageTag)",
    ),
    _f(
        "helm.kube_scheduler_skew",
        "int",
        "config",
        (),
        "minor releases between that kube-scheduler tag and the node's kubelet",
    ),
    _f("cdi.kinds", "list", "runtime", ("cdi-spec",), "CDI kinds in the bundle's CDI specs"),
    _f(
        "cdi.devices.*",
        "list",
        "runtime",
        ("cdi-spec",),
        "device names under a CDI kind (cdi.devices.nvidia.com/gpu)",
    ),
    _f(
        "cdi.default_kind_uuid_names",
        "int",
        "runtime",
        ("cdi-spec", "toolkit-config"),
        "UUID-named devices under the toolkit's default CDI kind (absent: no spec of that kind)",
    ),
    _f(
        "toolkit.modes",
        "list",
        "runtime",
        ("toolkit-config",),
        "nvidia-container-runtime modes in the config.toml copies (auto, cdi, legacy)",
    ),
    _f(
        "toolkit.default_kinds",
        "list",
        "runtime",
        ("toolkit-config",),
        "CDI default-kind values in the config.toml copies",
    ),
    _f(
        "toolkit.cdi_default_kinds",
        "list",
        "runtime",
        ("toolkit-config",),
        "default kinds of the configs running in CDI mode (else all)",
    ),
    _f(
        "containerd.default_runtime",
        "str",
        "runtime",
        ("containerd-config",),
        "containerd default_runtime_name",
    ),
    _f(
        "containerd.enable_cdi", "bool", "runtime", ("containerd-config",), "containerd CDI enabled"
    ),
    _f(
        "containerd.runtimes",
        "list",
        "runtime",
        ("containerd-config",),
        "runtime handlers configured in containerd",
    ),
    _f(
        "containerd.systemd_cgroup_runtimes",
        "list",
        "runtime",
        ("containerd-config",),
        "runtime handlers whose options set SystemdCgroup = true",
    ),
    _f(
        "containerd.cgroupfs_runtimes",
        "list",
        "runtime",
        ("containerd-config",),
        "runtime handlers whose options table leaves SystemdCgroup unset or false (cgroupfs)",
    ),
    _f(
        "docker.default_runtime",
        "str",
        "runtime",
        ("docker-daemon-config",),
        "Docker's default-runtime in daemon.json (runc when it names none)",
    ),
    _f(
        "docker.default_runs_nvidia",
        "bool",
        "runtime",
        ("docker-daemon-config",),
        "Docker's default runtime is nvidia, or one whose path or BinaryName is NVIDIA's",
    ),
    _f(
        "docker.runtimes",
        "list",
        "runtime",
        ("docker-daemon-config",),
        "runtimes declared in Docker's daemon.json",
    ),
    _f(
        "nvidia_smi.total_mib",
        "int",
        "smi",
        ("nvidia-smi",),
        "total GPU memory nvidia-smi reports (in a HAMi container: the gpumem limit)",
    ),
    _f(
        "nvidia_smi.min_total_mib",
        "int",
        "smi",
        ("nvidia-smi",),
        "the smallest total of the GPUs nvidia-smi lists (the largest is nvidia_smi.total_mib)",
    ),
    _f(
        "nvidia_smi.gpu_count",
        "int",
        "smi",
        ("nvidia-smi",),
        "GPUs nvidia-smi lists (its table, -L or -q; inside a container only the ones it was given)",
    ),
    _f("lease.holder", "str", "lease", ("lease",), "holderIdentity of the hami-scheduler Lease"),
    # versions: always known (None when no clue)
    _f(
        "version.known",
        "bool",
        "version",
        (),
        "the HAMi version could be narrowed from the bundle",
        False,
    ),
    _f("version.range", "str", "version", (), "inferred HAMi version range"),
    _f(
        "version.conflict",
        "bool",
        "version",
        (),
        "HAMi version clues contradict each other (mixed versions)",
        False,
    ),
    _f(
        "version.register_format_split",
        "bool",
        "version",
        (),
        "HAMi version clues fall on both sides of v2.8.0, where the register annotation went from CSV to JSON",
        False,
    ),
    _f(
        "version.toolkit",
        "str",
        "version",
        (),
        "NVIDIA container toolkit version range seen in the bundle",
    ),
    _f(
        "version.gpu-operator",
        "str",
        "version",
        (),
        "GPU Operator version range seen in the bundle",
    ),
    _f(
        "version.*",
        "str",
        "version",
        (),
        "version range of another component seen in the bundle (version.nvidia-device-plugin, ...)",
    ),
    # the device plugin's DaemonSet and pods as kubectl printed them
    _f(
        "device_plugin_ds.desired",
        "int",
        "workloads",
        (),
        "DESIRED of the device-plugin DaemonSets (get ds table, describe daemonset); the highest if several",
    ),
    _f("device_plugin_ds.name", "str", "workloads", (), "that DaemonSet's name"),
    _f("device_plugin_ds.node_selector", "str", "workloads", (), "its Node-Selector (describe)"),
    _f(
        "device_plugin_pods.listed",
        "int",
        "workloads",
        (),
        "0 when a kubectl get of device-plugin pods or DaemonSets answered 'No resources found'",
    ),
    # where HAMi runs (analyzer/facts/namespace.py); absent: nothing in the bundle states it
    _f(
        "hami.namespace",
        "str",
        "namespace",
        (),
        "HAMi's namespace as the bundle states it (collect's manifest, helm namespaceOverride, "
        "HAMi's objects, its pods' describes or a get pods -A row); printed commands use it",
    ),
    _f("hami.namespace_from", "str", "namespace", (), "which statement gave hami.namespace"),
    # HAMi-core in the workload's output
    _f(
        "hami_core.stops_at_banner",
        "bool",
        "hamicore",
        (),
        "a pasted command's output ends at HAMi-core's 'Initializing.....' banner (nothing after it)",
    ),
    _f(
        "hami_core.card_free_mib",
        "int",
        "hamicore",
        (),
        "the card's own free memory HAMi-core reported ('orig free=') where it was below what the "
        "container's limit still allowed (absent: never below)",
    ),
    _f("hami_core.limit_left_mib", "int", "hamicore", (), "that line's limit - usage, MiB"),
    _f("hami_core.card_total_mib", "int", "hamicore", (), "that line's card total, MiB"),
    _f("hami_core.limit_mib", "int", "hamicore", (), "that line's container limit, MiB"),
    # what the reporter states and no artefact shows (weak: rules reading it cap at low)
    _f(
        "stated.gpu_count",
        "int",
        "stated",
        (),
        "physical GPUs the issue's words say the node has ('only 1 GPU', '8x A100', '两卡'); absent: not said",
    ),
    # kube-scheduler's FitError summary
    _f(
        "scheduling.unlisted_nodes",
        "int",
        "scheduling",
        (),
        "unavailable nodes that no reason of kube-scheduler's '0/N nodes are available: ...' summary"
        " counts (the most of any summary; older kube-schedulers leave out the nodes the extender"
        " rejected); absent: no summary with its numbers",
    ),
    # Go panics
    _f(
        "panic.*",
        "str",
        "panic",
        (),
        "the first Go panic of the component whose log kind is named (panic.device-plugin-log,"
        " panic.scheduler-log, ...), attributed by its stack's first claimed frame or else by the log"
        " it came in; absent: no panic of that component",
    ),
    _f(
        "served_panic.*",
        "str",
        "panic",
        (),
        "the first panic in a request handler that Go's HTTP server caught ('http: panic serving"
        " ...': the request failed, the process went on) of the component whose log kind is named,"
        " attributed as panic.* is; absent: none",
    ),
    # log statistics
    _f(
        "logs.device_plugin.lines",
        "int",
        "logs",
        ("device-plugin-log",),
        "lines in the device-plugin log",
    ),
    _f(
        "logs.device_plugin.errors",
        "int",
        "logs",
        ("device-plugin-log",),
        "E/F lines in the device-plugin log",
    ),
    _f(
        "logs.device_plugin.truncated",
        "bool",
        "logs",
        ("device-plugin-log",),
        "the device-plugin log ends mid-line",
    ),
    _f("logs.scheduler.lines", "int", "logs", ("scheduler-log",), "lines in the scheduler log"),
    _f(
        "logs.scheduler.pod",
        "str",
        "logs",
        ("scheduler-log",),
        "the hami-scheduler pod the extender log came from (kubectl --prefix or the pasted command)",
    ),
)

_EXACT = {f.path: f for f in FACTS if not f.family}
_FAMILIES = sorted((f for f in FACTS if f.family), key=lambda f: -len(f.path))


def spec_of(path: str) -> FactSpec | None:
    """The declaration that covers a path: the exact entry, else the longest family prefix."""
    hit = _EXACT.get(path)
    if hit is not None:
        return hit
    for f in _FAMILIES:
        prefix = f.path[:-1]  # keep the dot
        if path.startswith(prefix) and len(path) > len(prefix):
            return f
    return None


def sources_of(path: str) -> tuple[str, ...]:
    """Kinds whose absence leaves the fact unknown; `config.<kind>.x` depends on <kind>."""
    if path.startswith("config."):
        kind = path.split(".", 2)[1]
        return (kind,)
    spec = spec_of(path)
    return spec.sources if spec else ()


# Values that only say what the bundle holds or that a source could be read: a rule may need them
# as a precondition, but "node.form = yaml" tells a reader nothing about the node, so the report
# never cites them as evidence. None: every value of the fact.
PRECONDITIONS: dict[str, tuple[object, ...] | None] = {
    "node.form": None,
    "node.present": (True,),
    "pod.present": (True,),
    "handshake.present": (True,),
    "register.status": ("ok",),
    "version.known": (True,),
    "bundle.kinds": None,
    "bundle.node_count": None,
}


def cited(path: str | None, value: object) -> bool:
    """Whether a fact a rule matched is evidence worth showing (see PRECONDITIONS).

    >>> cited("node.form", "yaml"), cited("register.status", "ok"), cited("register.status", "absent")
    (False, False, True)
    """
    if path not in PRECONDITIONS:
        return True
    quiet = PRECONDITIONS[path]
    return quiet is not None and value not in quiet
