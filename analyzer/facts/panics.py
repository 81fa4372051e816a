"""Go panics, attributed to the component that panicked: a process's (`panic: `, it exits) and a
request handler's that Go's HTTP server caught (`http: panic serving`, the process goes on).

A panic belongs to the component whose Go package its stack names first (the first frame a kind of
rules/kinds.yaml claims with `packages:`; runtime, standard-library and shared-library frames
never decide), else to the component whose log it came in. A panic of unknown owner (a bare paste
whose frames no component claims) is evidence for nobody."""

from __future__ import annotations

from collections import defaultdict

from analyzer.facts.matches import SignatureIndex
from analyzer.facts.model import FactSet, Match, Where

PANIC, SERVED, FRAME = "dp-panic", "go-http-handler-panic", "go-stack-frame"
STACK_LINES = 200  # a stack is read this far below its panic line (or to the next panic)


def owners(index: SignatureIndex, signature: str = PANIC) -> dict[str, tuple[Match, str]]:
    """Kind id -> (its first panic line of `signature`, why it is that kind's)."""
    frames: dict[str, list[Match]] = defaultdict(list)
    for m in index.matches.get(FRAME, []):
        frames[m.file].append(m)
    panics = sorted(index.matches.get(signature, []), key=lambda m: (m.file, m.line))
    out: dict[str, tuple[Match, str]] = {}
    for i, p in enumerate(panics):
        nxt = panics[i + 1] if i + 1 < len(panics) else None
        end = p.line + STACK_LINES
        if nxt is not None and nxt.file == p.file:
            end = min(end, nxt.line)
        owner = _by_frames(index, [f for f in frames[p.file] if p.line < f.line < end])
        if owner is None:
            kind = index.catalogue.get(p.kind)
            if kind is not None and kind.packages is not None:
                owner = (p.kind, f"in a {p.kind}")
        if owner is not None and owner[0] not in out:
            out[owner[0]] = (p, owner[1])
    return out


def _by_frames(index: SignatureIndex, stack: list[Match]) -> tuple[str, str] | None:
    for f in sorted(stack, key=lambda m: m.line):
        where = f.captures.get("pkg") or f.captures.get("path") or ""
        kind = index.catalogue.owner_of(where)
        if kind is not None:
            return kind, f"first claimed frame {where}"
    return None


def produce(index: SignatureIndex, facts: FactSet) -> None:
    """`panic.<kind>`: the panic line of that component's first panic and why it is its own.

    >>> from analyzer.dev.samples import index_of
    >>> stack = "panic: boom\\n\\ngoroutine 7 [running]:\\nvolcano.sh/volcano/pkg/scheduler/actions/allocate.(*Action).Execute(0xc0)\\n"
    >>> fs = FactSet(); produce(index_of({"dp.log": stack}, "device-plugin-log"), fs)
    >>> fs.value("panic.volcano-scheduler-log"), fs.value("panic.device-plugin-log")
    ('panic: boom (first claimed frame volcano.sh/volcano/pkg/scheduler/actions/allocate)', None)
    >>> fs = FactSet(); produce(index_of({"dp.log": "panic: 0\\n"}, "device-plugin-log"), fs)
    >>> fs.value("panic.device-plugin-log")
    'panic: 0 (in a device-plugin-log)'
    >>> fs = FactSet(); produce(index_of({"x.txt": "panic: 0\\n\\ngoroutine 1 [running]:\\nmain.main()\\n"}), fs)
    >>> sorted(fs.facts)
    []
    >>> served = "2025/05/23 07:05:21 http2: panic serving 127.0.0.1:5: boom\\ngoroutine 9 [running]:\\ngithub.com/Project-HAMi/HAMi/pkg/scheduler.(*Scheduler).Filter(0xc0)\\n"
    >>> fs = FactSet(); produce(index_of({"x.txt": served}), fs)
    >>> fs.value("served_panic.scheduler-log"), fs.value("panic.scheduler-log")
    ('boom (first claimed frame github.com/Project-HAMi/HAMi/pkg/scheduler)', None)
    """
    # a process's panic line as it is; a served one by its value (after the logger's date and
    # the client's address)
    for family, signature, shown in (("panic", PANIC, None), ("served_panic", SERVED, "value")):
        facts.mark_known(f"{family}.")
        for kind, (m, why) in owners(index, signature).items():
            text = (m.captures.get(shown) if shown else None) or m.text.strip()
            facts.put(f"{family}.{kind}", f"{text[:160]} ({why})", Where(m.file, m.line))
