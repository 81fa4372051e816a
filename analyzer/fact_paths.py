"""The fact paths rules may name. `*` accepts any suffix (labels, annotations, config keys)."""

FACT_PATHS: dict[str, str] = {
    "bundle.sources": "source ids present in the bundle (node, device-plugin-log, ...)",
    "bundle.collected_at": "collection time inferred from the bundle (UTC)",
    "bundle.node_count": "how many Node objects the bundle holds",
    "node.present": "a Node object or describe output for the analysed node is present",
    "node.name": "node name",
    "node.form": "yaml (from -o yaml/json) or describe",
    "node.labels.*": "node labels",
    "node.annotations.*": "node annotations (raw strings)",
    "node.taints": "list of taints {key, value, effect}",
    "node.taint_keys": "list of taint keys with NoSchedule/NoExecute effect",
    "node.unschedulable": "spec.unschedulable",
    "node.ready": "Ready condition is True",
    "node.allocatable.*": "status.allocatable by resource name ('gpu' = nvidia.com/gpu as int)",
    "node.capacity.*": "status.capacity by resource name ('gpu' = nvidia.com/gpu as int)",
    "node.hami_annotation_keys": "all hami.io/* and 4pd.io/* annotation keys",
    "register.present": "the NVIDIA register annotation exists",
    "register.status": "absent | empty | invalid | elided | ok",
    "register.format": "json | csv-9 | csv-7 | csv-5",
    "register.error": "decoder error for an invalid annotation",
    "register.text": "the raw annotation value",
    "register.device_count": "decoded devices",
    "register.unhealthy_count": "devices whose health is false (absent in JSON = unhealthy)",
    "register.health_absent_count": "JSON devices without a health key",
    "register.split_total": "sum of count over devices (expected allocatable)",
    "register.allocatable_gap": "allocatable nvidia.com/gpu minus the sum of count (0 when consistent)",
    "register.split_counts": "distinct count values",
    "register.types": "distinct GPU types",
    "register.index_or_numa_absent": "JSON devices lacking index or numa keys (normal: 0 omitted)",
    "handshake.present": "the NVIDIA handshake annotation (hami.io/node-handshake) exists",
    "handshake.state": "Requesting | Reported | Deleted | other",
    "handshake.value": "raw handshake value",
    "handshake.time": "timestamp in the handshake value",
    "handshake.age_seconds": "collection time minus handshake time",
    "handshake.other_vendor_keys": "handshake keys with a vendor suffix (-dcu, -xpu, ...)",
    "handshake.nvidia_suffix_key": "a hami.io/node-handshake-nvidia key exists (it never should)",
    "other_registers": "register keys of other vendors",
    "version.known": "the HAMi version could be narrowed from the bundle",
    "version.range": "inferred HAMi version range",
    "version.conflict": "version clues contradict each other (mixed versions)",
    "logs.device_plugin.lines": "lines in the device-plugin log",
    "logs.device_plugin.errors": "E/F lines in the device-plugin log",
    "logs.device_plugin.truncated": "the device-plugin log ends mid-line",
    "logs.scheduler.lines": "lines in the scheduler log",
    "pod.present": "a pod (describe or YAML) is in the bundle",
    "pod.name": "pod name",
    "pod.status": "pod status/phase",
    "pod.node": "node the pod is bound to",
    "pod.scheduler_name": "spec.schedulerName (YAML only)",
    "pod.runtime_class": "runtimeClassName",
    "pod.annotations.*": "pod annotations",
    "pod.event_sources": "the From column of the pod's events",
    "pod.event_reasons": "the Reason column of the pod's events",
    "pod.limits.*": "container resource limits (merged)",
    "pod.container_reasons": "container state and last-state reasons",
    "config.*": "flattened config values: config.<kind>.<dotted.key> (helm-values, toolkit-config, ...)",
}


def known_path(path: str) -> bool:
    if path in FACT_PATHS:
        return True
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) + ".*" in FACT_PATHS and i < len(parts):
            return True
    return False
