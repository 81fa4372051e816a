"""HAMi-core in a workload's output: a command whose output stops at HAMi-core's start-up banner.

HAMi-core prints "Initializing....." when it is loaded and "Initialized" once its set-up is done;
a pasted command (nvidia-smi, python ...) followed by that banner and nothing else means the
process printed nothing more: it hangs in HAMi-core's initialisation (or was cut off right there)."""

from __future__ import annotations

import re

from analyzer.facts.model import FactSet, Where
from analyzer.parse.logs import ParsedLog
from analyzer.structured import SHELL_PROMPT

_BANNER_RE = re.compile(r"\[(?:HAMI-core|4pdvGPU) Msg\(\d+:\d+:[\w.]+:\d+\)\]: Initializing\.+\s*$")
_HAMI_CORE_RE = re.compile(r"\[(?:HAMI-core|4pdvGPU) \w+[ (]")
# a shell prompt running a command: user@host:dir# cmd, $ cmd, # cmd
_PROMPT_RE = re.compile(rf"^\s*{SHELL_PROMPT}\s*\S")


def stops_at_banner(lines: list[str]) -> int | None:
    """Index of the banner line when the text is a command whose output ends at the banner.

    >>> stops_at_banner(["root@pod-0:/w# nvidia-smi", "[HAMI-core Msg(5:139:libvgpu.c:838)]: Initializing....."])
    1
    >>> stops_at_banner(["$ nvidia-smi", "[HAMI-core Msg(5:139:libvgpu.c:838)]: Initializing.....", "| NVIDIA-SMI 550.54 |"])
    >>> stops_at_banner(["[HAMI-core Msg(5:139:libvgpu.c:838)]: Initializing....."])
    """
    body = [i for i, x in enumerate(lines) if x.strip()]
    if len(body) < 2 or not _BANNER_RE.search(lines[body[-1]]):
        return None
    j = len(body) - 2
    while j >= 0 and _HAMI_CORE_RE.search(lines[body[j]]):
        j -= 1  # the banner may follow other HAMi-core messages of the same start
    return body[-1] if j >= 0 and _PROMPT_RE.match(lines[body[j]]) else None


def produce(logs: list[ParsedLog], facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import parsed
    >>> fs = FactSet(); produce([parsed("# python train.py\\n[HAMI-core Msg(7:1:libvgpu.c:871)]: Initializing.....")], fs)
    >>> fs.value("hami_core.stops_at_banner"), str(fs.where("hami_core.stops_at_banner"))
    (True, 'sample.txt:2')
    """
    facts.mark_known("hami_core.")
    for log in logs:
        text = log.artefact.text
        if not text or "Initializing" not in text:
            continue
        lines = text.split("\n")
        at = stops_at_banner(lines)
        if at is not None:
            where = Where(log.artefact.file.name, log.artefact.first_line + at)
            facts.put("hami_core.stops_at_banner", True, where)
            return
