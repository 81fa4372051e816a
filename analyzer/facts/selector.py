"""How many of the node's cards the pod's GPU type/UUID selector annotations leave (HAMi compares
types by case-insensitive substring, UUIDs exactly; `use-` keeps matches, `nouse-` drops them)."""

from __future__ import annotations

from analyzer.facts.model import FactSet
from analyzer.parse.annotations import GpuDevice

SELECTORS = {
    "nvidia.com/use-gputype": ("type", True),
    "nvidia.com/nouse-gputype": ("type", False),
    "nvidia.com/use-gpuuuid": ("id", True),
    "nvidia.com/nouse-gpuuuid": ("id", False),
}


def produce(devices: list[GpuDevice], facts: FactSet) -> None:
    """
    >>> from analyzer.parse.annotations import GpuDevice
    >>> fs = FactSet(); fs.put("pod.annotations.nvidia.com/use-gputype", "A100,H100")
    >>> produce([GpuDevice("GPU-1", 0, 10, 24564, 100, "NVIDIA GeForce RTX 4090", 0, "hami-core", True)], fs)
    >>> fs.value("pod.selector_matching_cards")
    0
    """
    if not devices:
        return
    cards = list(devices)
    seen = None
    for key, (field_name, keep) in SELECTORS.items():
        raw = facts.value(f"pod.annotations.{key}")
        if not raw:
            continue
        seen = facts.where(f"pod.annotations.{key}")
        wanted = [w.strip().upper() for w in str(raw).split(",") if w.strip()]

        def hit(dev, wanted=wanted, field_name=field_name) -> bool:
            value = str(getattr(dev, field_name)).upper()
            return any((w in value) if field_name == "type" else (w == value) for w in wanted)

        cards = [d for d in cards if hit(d) == keep]
    if seen is not None or any(facts.value(f"pod.annotations.{k}") for k in SELECTORS):
        facts.put("pod.selector_matching_cards", len(cards), seen)
