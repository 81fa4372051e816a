"""The hami-scheduler leader Lease: which replica holds it (a follower's quiet log is normal
when another replica is the holder)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.facts.model import FactSet, Where

if TYPE_CHECKING:  # imported when a bundle holds their kinds (parse/registry.py)
    from analyzer.parse.configs import ConfigFacts


def produce(configs: list[ConfigFacts], facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import config
    >>> fs = FactSet(); produce([config("lease", "kind: Lease\\nmetadata: {name: hami-scheduler}\\nspec:\\n  holderIdentity: hami-scheduler-7d9f_1")], fs)
    >>> fs.value("lease.holder")
    'hami-scheduler-7d9f_1'
    """
    for cf in configs:
        if cf.kind != "lease":
            continue
        facts.mark_known("lease.")
        holder = cf.values.get("spec.holderIdentity")
        if holder:
            facts.put("lease.holder", str(holder), Where(cf.file, cf.line_of("holderIdentity")))
