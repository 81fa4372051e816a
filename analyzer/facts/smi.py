"""nvidia-smi output: the total memory it reports (inside a HAMi container that is the vGPU's
gpumem limit, so a physical-size total means HAMi-core is not active)."""

from __future__ import annotations

import re

from analyzer.facts.model import FactSet, Where
from analyzer.parse.logs import ParsedLog

_TOTAL_RE = re.compile(r"(?:^\s*Total\s*:\s*(\d+)\s*MiB)|(?:\d+MiB\s*/\s*(\d+)MiB)")


def produce(logs: list[ParsedLog], facts: FactSet) -> None:
    """
    >>> fs = FactSet(); produce([], fs); fs.lookup("nvidia_smi.total_mib")
    UNKNOWN
    """
    best: tuple[int, Where] | None = None
    for log in logs:
        if log.artefact.kind != "nvidia-smi":
            continue
        facts.mark_known("nvidia_smi.")
        for line, text in log.frame.select("line", "text").iter_rows():
            m = _TOTAL_RE.search(text or "")
            if m:
                total = int(m.group(1) or m.group(2))
                if best is None or total > best[0]:
                    best = (total, Where(log.artefact.file.name, line))
    if best is not None:
        facts.put("nvidia_smi.total_mib", best[0], best[1])
