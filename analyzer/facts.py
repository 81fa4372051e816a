"""Parsed bundle -> per-node context: facts by path, signature matches, clock, version."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import regex

from analyzer.parse.annotations import Handshake, RegisterAnnotation
from analyzer.parse.node import NodeFacts
from analyzer.pipeline import ParsedBundle
from analyzer.rules.model import RuleSet
from analyzer.versions import Range, VersionEvidence, VersionInference

CAPTURE_TIMEOUT = 0.25  # seconds per line: a catastrophic custom regex becomes a rule error
PLACEHOLDER_YEAR = 2000  # leap year, used for ordering only when no year can be inferred
NVIDIA_REGISTER = "hami.io/node-nvidia-register"
NVIDIA_HANDSHAKE = "hami.io/node-handshake"
LOG_SOURCE_KEYS = {"device-plugin-log": "device_plugin", "scheduler-log": "scheduler"}


@dataclass
class Match:
    sig: str
    file: str
    line: int
    text: str
    ts: dt.datetime | None
    captures: dict[str, str]
    span: tuple[int, int]


@dataclass
class Clock:
    """How klog timestamps (no year) were placed in time."""

    collected_at: dt.datetime | None
    year: int | None
    source: str  # human sentence: how the year / collection time were inferred


@dataclass
class NodeContext:
    node: NodeFacts | None
    facts: dict[str, Any]
    matches: dict[str, list[Match]]
    sig_counts: dict[str, int]
    register: RegisterAnnotation | None
    handshake: Handshake | None
    version: VersionInference
    clock: Clock
    sources: set[str]
    errors: list[str] = field(default_factory=list)  # signature/capture errors
    components: dict[str, VersionInference] = field(default_factory=dict)  # toolkit, gpu-operator

    def locate(self, path: str) -> tuple[str | None, int | None]:
        """File and line a node fact came from, for evidence."""
        n = self.node
        if n is None:
            return None, None
        key = path.split(".", 1)[1] if path.startswith("node.annotations.") else None
        if path.startswith(("register.", "handshake.")):
            key = NVIDIA_REGISTER if path.startswith("register.") else NVIDIA_HANDSHAKE
        line = n.line_of.get(key) if key else None
        if path.startswith(("node.allocatable", "node.capacity")):
            res = "nvidia.com/gpu" if path.endswith(".gpu") else path.split(".", 2)[2]
            line = n.line_of.get(f"{path.split('.')[1]}.{res}")
        return n.file, line


def parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def infer_clock(bundle: ParsedBundle, ruleset: RuleSet) -> Clock:
    candidates: list[tuple[dt.datetime, str]] = []
    for n in bundle.nodes:
        for c in n.conditions:
            t = parse_time(c.get("lastHeartbeatTime"))
            if t:
                candidates.append((t, f"node {n.name} condition heartbeat"))
        for k, hs in n.handshakes.items():
            if hs.time:
                candidates.append((hs.time, f"handshake annotation {k}"))
    for log in bundle.logs:
        rfc = log.frame["rfc"].drop_nulls() if "rfc" in log.frame.columns else None
        if rfc is not None and len(rfc):
            t = parse_time(rfc[-1])
            if t:
                candidates.append((t, f"kubectl --timestamps prefix in {log.artefact.file.name}"))
    if not candidates and bundle.member_mtimes:
        t = dt.datetime.fromtimestamp(max(bundle.member_mtimes), dt.UTC)
        candidates.append((t, "archive member modification times"))
    if not candidates:
        return Clock(
            None,
            None,
            "no clue to the year or collection time in the bundle; "
            "klog times are shown without a year and ages are not evaluated",
        )
    when, why = max(candidates)
    return Clock(when, when.year, f"collection time {when:%Y-%m-%d %H:%M:%S} UTC from {why}")


def _timestamp_expr(year: int, collected: dt.datetime | None) -> pl.Expr:
    """Vectorised klog time; a month after the collection month belongs to the previous year."""
    y = pl.lit(year)
    if collected is not None:
        y = (
            pl.when(pl.col("mm").cast(pl.Int32, strict=False) > collected.month)
            .then(year - 1)
            .otherwise(year)
        )
    klog = pl.concat_str(
        [y.cast(pl.String), pl.col("mm"), pl.col("dd"), pl.lit(" "), pl.col("clock")]
    ).str.to_datetime("%Y%m%d %H:%M:%S%.f", strict=False, time_zone="UTC", time_unit="us")
    rfc = pl.col("rfc").str.to_datetime(strict=False, time_zone="UTC", time_unit="us")
    return pl.coalesce(rfc, klog).alias("ts")


def stamp_logs(bundle: ParsedBundle, clock: Clock) -> None:
    year = clock.year or PLACEHOLDER_YEAR
    for log in bundle.logs:
        if "ts" not in log.frame.columns:
            log.frame = log.frame.with_columns(_timestamp_expr(year, clock.collected_at))


def collect_matches(
    bundle: ParsedBundle, ruleset: RuleSet
) -> tuple[dict[str, list[Match]], dict[str, int], list[str]]:
    matches: dict[str, list[Match]] = {}
    counts: dict[str, int] = {}
    errors: list[str] = []
    for log in bundle.logs:
        for sid, n in log.stats.sig_counts.items():
            counts[sid] = counts.get(sid, 0) + n
        hits = log.frame.filter(pl.col("sigs").list.len() > 0).select("line", "text", "ts", "sigs")
        for line, text, ts, sigs in hits.iter_rows():
            for sid in sigs:
                sig = ruleset.signatures[sid]
                try:
                    m = sig.compiled.search(text, timeout=CAPTURE_TIMEOUT)
                except TimeoutError:
                    errors.append(
                        f"signature {sid}: regex timed out on {log.artefact.file.name}:{line}"
                    )
                    continue
                if not m:
                    continue  # Rust and Python regex dialects disagreed; trust the stricter
                caps = {k: v or "" for k, v in m.groupdict().items()}
                matches.setdefault(sid, []).append(
                    Match(sid, log.artefact.file.name, line, text, ts, caps, m.span())
                )
    return matches, counts, errors


def _gpu_int(resources: dict[str, str], name: str = "nvidia.com/gpu") -> int | None:
    """None when the bundle has no such block (unknown); 0 when the block lacks the resource."""
    if not resources:
        return None
    v = resources.get(name)
    if v is None:
        return 0
    try:
        return int(str(v).strip())
    except ValueError:
        return None


def build_contexts(
    bundle: ParsedBundle, ruleset: RuleSet, node_name: str | None = None
) -> list[NodeContext]:
    clock = infer_clock(bundle, ruleset)
    stamp_logs(bundle, clock)
    all_matches, counts, errors = collect_matches(bundle, ruleset)
    nodes: list[NodeFacts | None] = list(bundle.nodes)
    if node_name:
        nodes = [n for n in nodes if n.name == node_name] or [None]
    if not nodes:
        nodes = [None]
    return [
        _context(bundle, ruleset, n, clock, all_matches, counts, errors, len(bundle.nodes))
        for n in nodes
    ]


def _node_guess(matches: dict[str, list[Match]], ruleset: RuleSet) -> str | None:
    """Without a Node object, the node the device plugin says it works on names the node."""
    for sid, ms in matches.items():
        if "device-plugin-log" not in ruleset.signatures[sid].sources:
            continue
        for m in ms:
            if m.captures.get("node"):
                return m.captures["node"]
    return None


def _context(bundle, ruleset, node, clock, all_matches, counts, errors, node_count) -> NodeContext:
    name = node.name if node else _node_guess(all_matches, ruleset) or _pod_node(bundle)
    matches: dict[str, list[Match]] = {}
    for sid, ms in all_matches.items():
        cap = ruleset.signatures[sid].node_capture
        kept = [m for m in ms if not cap or not name or m.captures.get(cap) in (None, "", name)]
        if kept:
            matches[sid] = kept
    sources = {a.kind for a in bundle.inventory.artefacts}
    if bundle.pods:
        sources.add("pod")
    if node is not None:
        sources.add("node")
    spec = ruleset.annotations
    facts: dict[str, Any] = {
        "bundle.sources": sorted(sources),
        "bundle.collected_at": clock.collected_at,
        "bundle.node_count": node_count,
        "node.present": node is not None,
        "node.name": name,
    }
    register = handshake = None
    version = VersionInference()
    components: dict[str, VersionInference] = {}
    if node is not None:
        facts.update(_node_facts(node))
        register, handshake = _annotations(node, spec, facts, clock, version)
    for log in bundle.logs:
        key = LOG_SOURCE_KEYS.get(log.artefact.kind)
        if key:
            st = log.stats
            facts[f"logs.{key}.lines"] = facts.get(f"logs.{key}.lines", 0) + st.lines
            errs = st.severities.get("E", 0) + st.severities.get("F", 0)
            facts[f"logs.{key}.errors"] = facts.get(f"logs.{key}.errors", 0) + errs
            if st.truncated_last_line:
                facts[f"logs.{key}.truncated"] = True
    _pod_facts(bundle, facts)
    for cf in bundle.configs:
        for k, v in cf.values.items():
            facts.setdefault(f"config.{cf.kind}.{k}", v)
    facts.update(runtime_facts(bundle))
    facts.update(selector_facts(facts, register.devices if register else []))
    facts.update(nvidia_smi_facts(bundle))
    for sid, ms in sorted(matches.items()):
        sig = ruleset.signatures[sid]
        if sig.version_capture and sig.component != "hami":
            comp = components.setdefault(sig.component, VersionInference())
            for m in ms[:5]:
                _tag_evidence(
                    comp,
                    m.captures.get(sig.version_capture, ""),
                    f"{m.file}:{m.line}",
                    sig.component,
                )
        elif sig.version_capture:
            for m in ms[:5]:
                what = sig.meaning.split(".")[0].lower() or "version"
                _tag_evidence(
                    version, m.captures.get(sig.version_capture, ""), f"{m.file}:{m.line}", what
                )
        if sig.implies_version and not sig.versions.empty():
            version.add(
                VersionEvidence(
                    sig.versions,
                    f"log line '{sid}' exists only in {sig.versions}",
                    f"{ms[0].file}:{ms[0].line}",
                )
            )
    for k, v in facts.items():
        if (
            k.startswith("config.helm-values.")
            and k.endswith(("imageTag", "image.tag"))
            and isinstance(v, str)
        ):
            _tag_evidence(version, v, k)
    if node is not None:
        for img in node.images:
            if regex.search(r"(?:hami|k8s-vgpu|vgpu-scheduler)[^:@]*:v?\d+\.\d+", img):
                _tag_evidence(version, img.rsplit(":", 1)[1], f"node image {img}")
    for comp, inf in components.items():
        facts[f"version.{comp}"] = str(inf.range) if inf.known else None
    facts["version.known"] = version.known
    facts["version.range"] = str(version.range) if version.known else None
    facts["version.conflict"] = bool(version.conflicts)
    ctx = NodeContext(
        node, facts, matches, counts, register, handshake, version, clock, sources, list(errors)
    )
    ctx.components = components
    return ctx


def _tag_evidence(version: VersionInference, tag: str, where: str, what: str = "image tag") -> None:
    m = regex.match(r"v?(\d+)\.(\d+)\.(\d+)$", tag.strip())
    if m:
        rng = Range.parse(f"=={m[1]}.{m[2]}.{m[3]}")
        version.add(VersionEvidence(rng, f"{what} {tag}", where))


def _node_facts(node: NodeFacts) -> dict[str, Any]:
    f: dict[str, Any] = {"node.form": node.form, "node.unschedulable": node.unschedulable}
    for k, v in node.labels.items():
        f[f"node.labels.{k}"] = v
    for k, managers in node.label_managers.items():
        f[f"node.label_managers.{k}"] = sorted(set(managers))
    for k, v in node.annotations.items():
        f[f"node.annotations.{k}"] = v
    f["node.taints"] = node.taints
    f["node.taint_keys"] = sorted(
        {t.get("key", "") for t in node.taints if t.get("effect") in ("NoSchedule", "NoExecute")}
    )
    ready = [c for c in node.conditions if c.get("type") == "Ready"]
    f["node.ready"] = (ready[0].get("status") == "True") if ready else None
    for res, v in node.allocatable.items():
        f[f"node.allocatable.{res}"] = v
    for res, v in node.capacity.items():
        f[f"node.capacity.{res}"] = v
    f["node.allocatable.gpu"] = _gpu_int(node.allocatable)
    f["node.capacity.gpu"] = _gpu_int(node.capacity)
    f["node.hami_annotation_keys"] = sorted(
        k for k in node.annotations if k.startswith(("hami.io/", "4pd.io/"))
    )
    return f


def _annotations(
    node, spec, facts, clock, version
) -> tuple[RegisterAnnotation | None, Handshake | None]:
    register = handshake = None
    others, other_hs = [], []
    for key, value in node.annotations.items():
        vendor = spec.register_vendor(key)
        if vendor is not None:
            if vendor == "nvidia":
                register = spec.decode_register(key, value, key in node.elided)
            else:
                others.append(key)
        hv = spec.handshake_vendor(key)
        if hv is not None:
            if key.endswith("-nvidia"):
                facts["handshake.nvidia_suffix_key"] = True
            if hv == spec.default_vendor and not key.endswith("-nvidia"):
                handshake = node.handshakes[key]
            else:
                other_hs.append(key)
    facts["other_registers"] = sorted(others)
    facts["handshake.other_vendor_keys"] = sorted(other_hs)
    facts["register.present"] = register is not None
    facts["register.status"] = register.status if register else "absent"
    if register:
        devs = register.devices
        facts.update(
            {
                "register.format": register.format,
                "register.error": register.error,
                "register.text": register.text,
                "register.device_count": len(devs),
                "register.unhealthy_count": sum(1 for d in devs if not d.health),
                "register.health_absent_count": sum(
                    1 for d in devs if "health" in d.absent and register.format == "json"
                ),
                "register.split_total": sum(d.count for d in devs),
                "register.split_counts": sorted({d.count for d in devs}),
                "register.max_devmem": max((d.devmem for d in devs), default=None),
                "register.max_devcore": max((d.devcore for d in devs), default=None),
                "register.types": sorted({d.type for d in devs}),
                "register.allocatable_gap": (
                    facts["node.allocatable.gpu"] - sum(d.count for d in devs)
                    if facts.get("node.allocatable.gpu") is not None and devs
                    else None
                ),
                "register.index_or_numa_absent": sum(
                    1
                    for d in devs
                    if {"index", "numa"} & set(d.absent) and register.format == "json"
                ),
            }
        )
        where = f"{node.file}:{node.line_of.get(register.key, node.first_line)}"
        if register.versions is not None:
            version.add(
                VersionEvidence(
                    register.versions, f"register annotation format {register.format}", where
                )
            )
        for rng, why in register.version_reasons:
            version.add(VersionEvidence(rng, why, where))
    facts["handshake.present"] = handshake is not None
    if handshake:
        facts["handshake.state"] = handshake.state
        facts["handshake.value"] = handshake.text
        facts["handshake.time"] = handshake.time
        if handshake.time and clock.collected_at:
            facts["handshake.age_seconds"] = (clock.collected_at - handshake.time).total_seconds()
        if handshake.versions is not None and handshake.state != "other":
            where = f"{node.file}:{node.line_of.get(handshake.key, node.first_line)}"
            version.add(
                VersionEvidence(
                    handshake.versions, f"handshake value form {handshake.state}", where
                )
            )
    return register, handshake


def _pod_facts(bundle: ParsedBundle, facts: dict[str, Any]) -> None:
    facts["pod.present"] = bool(bundle.pods)
    if not bundle.pods:
        return
    p = bundle.pods[0]
    facts.update(
        {
            "pod.name": p.name,
            "pod.status": p.status,
            "pod.node": p.node,
            "pod.scheduler_name": p.scheduler_name,
            "pod.runtime_class": p.runtime_class,
        }
    )
    for k, v in p.annotations.items():
        facts[f"pod.annotations.{k}"] = v
    for k, v in p.limits().items():
        facts[f"pod.limits.{k}"] = v
    events = [e for pod in bundle.pods for e in pod.events]
    facts["pod.event_sources"] = sorted({e.source for e in events})
    facts["pod.event_reasons"] = sorted({e.reason for e in events})
    reasons = set()
    for pod in bundle.pods:
        for c in pod.containers:
            reasons.update(x for x in (c.reason, c.last_reason) if x)
    facts["pod.container_reasons"] = sorted(reasons)


def _pod_node(bundle: ParsedBundle) -> str | None:
    """Without a Node object, the node the failing pod was bound to names the node."""
    for p in bundle.pods:
        if p.node and p.node not in ("<none>", ""):
            return p.node
        v = p.annotations.get("hami.io/vgpu-node")
        if v:
            return v
    return None


def runtime_facts(bundle: ParsedBundle) -> dict[str, Any]:
    """Container-runtime facts across config files: CDI kinds and device names, the toolkit's
    modes and default kinds (host and GPU Operator copies), containerd's default runtime."""
    f: dict[str, Any] = {}
    kinds: dict[str, set[str]] = {}
    modes, default_kinds, cdi_enabled, default_runtimes, runtimes = [], [], [], [], set()
    cdi_mode_kinds: list[str] = []  # default kinds of the configs that run in CDI mode
    for cf in bundle.configs:
        v = cf.values
        if cf.kind == "cdi-spec":
            kind = v.get("kind") or next((x for k, x in v.items() if k.endswith(".kind")), None)
            names = {
                str(x) for k, x in v.items() if regex.search(r"(?:^|\.)devices\.\d+\.name$", k)
            }
            if kind:
                kinds.setdefault(str(kind), set()).update(names)
        elif cf.kind == "toolkit-config":
            mode = str(v.get("nvidia-container-runtime.mode", v.get("mode", "auto")))
            modes.append(mode)
            dk = v.get("nvidia-container-runtime.modes.cdi.default-kind")
            if dk:
                default_kinds.append(str(dk))
                if mode == "cdi":
                    cdi_mode_kinds.append(str(dk))
        elif cf.kind == "containerd-config":
            for k, x in v.items():
                if k.endswith(".default_runtime_name"):
                    default_runtimes.append(str(x))
                if k.endswith("enable_cdi"):
                    cdi_enabled.append(bool(x))
                m = regex.search(r"\.runtimes\.([\w.-]+)\.runtime_type$", k)
                if m:
                    runtimes.add(m[1])
    if kinds:
        f["cdi.kinds"] = sorted(kinds)
        for k, names in kinds.items():
            f[f"cdi.devices.{k}"] = sorted(names)
    if modes:
        f["toolkit.modes"] = sorted(set(modes))
    if default_kinds:
        f["toolkit.default_kinds"] = sorted(set(default_kinds))
        judged = cdi_mode_kinds or default_kinds
        f["toolkit.cdi_default_kinds"] = sorted(set(judged))
        uuid_names = [
            n for k in judged for n in kinds.get(k, set()) if n.startswith(("GPU-", "MIG-"))
        ]
        has_spec = any(k in kinds for k in judged)
        f["cdi.default_kind_uuid_names"] = len(uuid_names) if has_spec else None
    if default_runtimes:
        f["containerd.default_runtime"] = default_runtimes[0]
    if cdi_enabled:
        f["containerd.enable_cdi"] = any(cdi_enabled)
    if runtimes:
        f["containerd.runtimes"] = sorted(runtimes)
    return f


def selector_facts(facts: dict[str, Any], devices: list) -> dict[str, Any]:
    """How many cards the pod's type/UUID selector annotations leave (HAMi compares types by
    case-insensitive substring, UUIDs exactly; `use-` keeps matches, `nouse-` drops them)."""
    out: dict[str, Any] = {}
    if not devices:
        return out
    keys = {
        "nvidia.com/use-gputype": ("type", True),
        "nvidia.com/nouse-gputype": ("type", False),
        "nvidia.com/use-gpuuuid": ("id", True),
        "nvidia.com/nouse-gpuuuid": ("id", False),
    }
    cards = list(devices)
    seen = False
    for key, (field_name, keep) in keys.items():
        raw = facts.get(f"pod.annotations.{key}")
        if not raw:
            continue
        seen = True
        wanted = [w.strip().upper() for w in str(raw).split(",") if w.strip()]

        def hit(dev, wanted=wanted, field_name=field_name) -> bool:
            value = str(getattr(dev, field_name)).upper()
            return any((w in value) if field_name == "type" else (w == value) for w in wanted)

        cards = [d for d in cards if hit(d) == keep]
    if seen:
        out["pod.selector_matching_cards"] = len(cards)
    return out


def nvidia_smi_facts(bundle: ParsedBundle) -> dict[str, Any]:
    """Total memory nvidia-smi reports (inside a container: what the process is allowed to see)."""
    totals: list[int] = []
    for log in bundle.logs:
        if log.artefact.kind != "nvidia-smi":
            continue
        for text in log.frame["text"].to_list():
            m = regex.search(
                r"(?:^\s*Total\s*:\s*(\d+)\s*MiB)|(?:\d+MiB\s*/\s*(\d+)MiB)", text or ""
            )
            if m:
                totals.append(int(m.group(1) or m.group(2)))
    return {"nvidia_smi.total_mib": max(totals)} if totals else {}
