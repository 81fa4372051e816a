"""HAMi-core in a workload's output: a command whose output stops at HAMi-core's start-up banner,
and a card with less memory free than the container's limit still allows.

HAMi-core prints "Initializing....." when it is loaded and "Initialized" once its set-up is done;
a pasted command (nvidia-smi, python ...) followed by that banner and nothing else means the
process printed nothing more: it hangs in HAMi-core's initialisation (or was cut off right there)."""

from __future__ import annotations

import re

from analyzer.facts.matches import SignatureIndex
from analyzer.facts.model import FactSet, Where
from analyzer.parse.logs import ParsedLog
from analyzer.structured import SHELL_PROMPT

CARD_MEMORY = "hami-core-card-memory"  # "orig free=F total=T limit=L usage=U", in bytes
MIB = 1 << 20
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


def produce_card_memory(index: SignatureIndex, facts: FactSet) -> None:
    """`hami_core.card_free_mib` (and `limit_left_mib`, `card_total_mib`, `limit_mib`): the line
    where the card's own free memory falls furthest below what the container's limit still allows
    (limit - usage), only when it does: there an allocation the limit permits fails on the card.

    >>> from analyzer.dev.samples import index_of
    >>> line = "[HAMI-core Msg(141:1:memory.c:512)]: orig free=358350848 total=4227727360 limit=4294967296 usage=8520704"
    >>> fs = FactSet(); produce_card_memory(index_of({"app.log": line}), fs)
    >>> [fs.value(f"hami_core.{k}") for k in ("card_free_mib", "limit_left_mib", "card_total_mib", "limit_mib")]
    [341, 4087, 4031, 4096]
    >>> fine = "[HAMI-core Msg(38:1:memory.c:511)]: orig free=15521808384 total=15642329088 limit=5368709120 usage=0"
    >>> fs = FactSet(); produce_card_memory(index_of({"app.log": fine}), fs)
    >>> fs.lookup("hami_core.card_free_mib")
    UNKNOWN
    """
    worst: tuple[int, dict[str, int], Where] | None = None
    for m in index.matches.get(CARD_MEMORY, []):
        n = {k: int(m.captures[k]) for k in ("free", "total", "limit", "usage")}
        short = n["limit"] - n["usage"] - n["free"]
        if short > 0 and (worst is None or short > worst[0]):
            worst = (short, n, Where(m.file, m.line))
    if worst is None:
        return
    _, n, where = worst
    facts.put("hami_core.card_free_mib", n["free"] // MIB, where)
    facts.put("hami_core.limit_left_mib", (n["limit"] - n["usage"]) // MIB, where)
    facts.put("hami_core.card_total_mib", n["total"] // MIB, where)
    facts.put("hami_core.limit_mib", n["limit"] // MIB, where)
