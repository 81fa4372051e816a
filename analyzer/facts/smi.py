"""nvidia-smi output: the total memory it reports (inside a HAMi container that is the vGPU's
gpumem limit, so a physical-size total means HAMi-core is not active), the least of its GPUs'
totals (one GPU at the limit beside a physical-size one: HAMi-core is active, the other GPU is
extra) and how many GPUs it lists."""

from __future__ import annotations

import re

from analyzer.facts.model import FactSet, Where
from analyzer.parse.logs import ParsedLog

_TOTAL_RE = re.compile(r"(?:^\s*Total\s*:\s*(\d+)\s*MiB)|(?:\d+MiB\s*/\s*(\d+)MiB)")
# a GPU row of the default table ("|   0  NVIDIA A100 ...  On  | 00000000:07:00.0 Off |"), a line of
# `nvidia-smi -L` ("GPU 0: ... (UUID: GPU-...)"), or -q's "Attached GPUs : 8"
_GPU_ROW_RE = re.compile(
    r"^\|\s+(\d+)\s+\S.*\|\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d"
)
_GPU_LIST_RE = re.compile(r"^GPU (\d+): .*\(UUID: GPU-")
_ATTACHED_RE = re.compile(r"^\s*Attached GPUs\s*:\s*(\d+)")


def produce(logs: list[ParsedLog], facts: FactSet) -> None:
    """
    >>> fs = FactSet(); produce([], fs); fs.lookup("nvidia_smi.total_mib")
    UNKNOWN
    """
    totals: list[tuple[int, Where]] = []
    gpus: tuple[int, Where] | None = None
    for log in logs:
        if log.artefact.kind != "nvidia-smi":
            continue
        facts.mark_known("nvidia_smi.")
        for line, text in log.frame.select("line", "text").iter_rows():
            m = _TOTAL_RE.search(text or "")
            if m:
                totals.append((int(m.group(1) or m.group(2)), Where(log.artefact.file.name, line)))
            n = _gpu_count(text or "")
            if n is not None and (gpus is None or n > gpus[0]):
                gpus = (n, Where(log.artefact.file.name, line))
    if totals:  # the first of equal totals keeps its line, as before
        facts.put("nvidia_smi.total_mib", *max(totals, key=lambda t: t[0]))
        facts.put("nvidia_smi.min_total_mib", *min(totals, key=lambda t: t[0]))
    if gpus is not None:
        facts.put("nvidia_smi.gpu_count", gpus[0], gpus[1])


def _gpu_count(text: str) -> int | None:
    """How many GPUs a line of nvidia-smi output shows at least.

    >>> _gpu_count("|   1  NVIDIA A100-SXM4-40GB          On  | 00000000:0F:00.0 Off |                    0 |")
    2
    >>> _gpu_count("GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-1b2c)"), _gpu_count("Attached GPUs                             : 8")
    (4, 8)
    >>> _gpu_count("| N/A   34C    P8     9W /  70W |      0MiB /  3000MiB |      0%      Default |")
    """
    if m := _GPU_ROW_RE.match(text) or _GPU_LIST_RE.match(text):
        return int(m.group(1)) + 1
    if m := _ATTACHED_RE.match(text):
        return int(m.group(1))
    return None
