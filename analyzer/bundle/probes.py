"""The recognition vocabulary of rules/kinds.yaml: what a kind's `recognise:` entries may say,
checked and compiled when the catalogue loads, and how each is tried on a text.

A text is recognised by the first step, in `order`, that matches it: a kind's own entries (all of
an entry's conditions must hold), the Kubernetes-object step (every kind with a `k8s_kind`), the
log-marker vote (every kind with `markers`) and the unwrapping of a unified diff. The steps know
no kind by name: which kind a text is lives in the catalogue only."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

from analyzer.bundle.text import KLOG_HEADER_PATTERN, PREFIX_RE, diff_after_side, in_script
from analyzer.catalogue.kinds import Catalogue, unknown_keys
from analyzer.errors import RuleLoadError

# a pattern written `@name` is one the analyzer defines once for every reader of logs
NAMED_PATTERNS = {"klog": KLOG_HEADER_PATTERN}
# what `recognition.unwrap` may name: text -> the text it wraps, or None when it wraps nothing
UNWRAPPERS: dict[str, Callable[[str], str | None]] = {"unified-diff": diff_after_side}
PROBE_KEYS = {
    "order",
    "reason",
    "blank",
    "otherwise",
    "line",
    "min_lines",
    "all_lines",
    "no_line",
    "starts",
    "sections",
    "log_line",
}
RECOGNITION_KEYS = {"head_chars", "log_lines", "objects", "markers", "unwrap"}
SECTION_KEYS = {"pattern", "any_of", "only", "min"}
CONDITION_KEYS = PROBE_KEYS - {"order", "reason", "min_lines"}

Found = tuple[str, str]  # (kind id, reason)


class Text:
    """One text under recognition, with what several steps read computed once."""

    def __init__(self, text: str, log_lines: int) -> None:
        # runs of blank lines as one: a line pattern `^\s*x` tried at each of n blank lines
        # reads all n (`\s` takes the newline), and 200,000 of them took hours
        self.text = _BLANK_LINES.sub("\n\n", text)
        self._raw = text
        self._log_lines = log_lines
        self.sections: dict[str, set[str]] = {}

    @cached_property
    def log_lines(self) -> list[str]:
        """The first lines read as a log reads them: without the kubectl/CRI prefix."""
        return [
            PREFIX_RE.sub("", raw, count=1) for raw in self._raw.splitlines()[: self._log_lines]
        ]


_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n)+")


@dataclass(frozen=True)
class Sections:
    """The distinct names a pattern's group captures (the sections a describe paste kept)."""

    pattern: re.Pattern
    any_of: frozenset[str] = frozenset()  # at least one of these is among them
    only: frozenset[str] = frozenset()  # they are exactly these
    min: int = 0  # at least this many distinct names

    def found(self, text: Text) -> set[str] | None:
        names = text.sections.get(self.pattern.pattern)
        if names is None:
            names = text.sections[self.pattern.pattern] = set(self.pattern.findall(text.text))
        if self.any_of and not names & self.any_of:
            return None
        if self.only and names != self.only:
            return None
        if len(names) < self.min:
            return None
        return names


@dataclass(frozen=True)
class Probe:
    """One `recognise:` entry of a kind: every condition it states must hold."""

    kind: str
    order: int
    reason: str
    where: str  # file:line of the entry, for errors
    blank: bool = False
    otherwise: bool = False
    line: re.Pattern | None = None
    min_lines: int = 1
    all_lines: tuple[re.Pattern, ...] = ()
    no_line: re.Pattern | None = None
    starts: re.Pattern | None = None
    sections: Sections | None = None
    log_line: re.Pattern | None = None
    # per pattern that must match (`line`, `all_lines`, `starts`), its required literals when
    # known: a text holding none of one set is not searched (a few regex searches of a 200 KB
    # head cost more than looking for a dozen literals)
    needs: tuple[tuple[str, ...], ...] = ()

    def attempt(self, text: Text, _sniff) -> Found | None:
        s = text.text
        if self.blank and s.strip():
            return None
        if any(not any(x in s for x in literals) for literals in self.needs):
            return None
        if self.line is not None:
            if self.min_lines > 1:
                if len(self.line.findall(s)) < self.min_lines:
                    return None
            elif not self.line.search(s):
                return None
        if any(not p.search(s) for p in self.all_lines):
            return None
        if self.starts is not None and not self.starts.match(s):
            return None
        names: set[str] = set()
        if self.sections is not None:
            got = self.sections.found(text)
            if got is None:
                return None
            names = got
        if self.no_line is not None and self.no_line.search(s):
            return None
        count = 0
        if self.log_line is not None:
            count = sum(1 for x in text.log_lines if self.log_line.match(x))
            if not count:
                return None
        return self.kind, self.reason.format(sections=", ".join(sorted(names)), count=count)


@dataclass(frozen=True)
class ObjectStep:
    """A Kubernetes object: the kind whose `k8s_kind` is its top-level `kind:`; a `List` is the
    first of `list_items` among its items, else its first item of a catalogued kind."""

    order: int
    reason: str
    list_reason: str
    list_items: tuple[str, ...]
    by_k8s_kind: dict[str, str]
    where: str = ""

    _KIND = re.compile(r'(?m)^\s*"?kind"?\s*:\s*"?([A-Za-z]+)"?\s*,?\s*$')
    # a top-level `kind:` (column 0): kubectl sorts keys, so a List's own `kind: List` comes after
    # its items, and an item's data may hold other objects' `kind:` lines (a scheduler config)
    _TOP_KIND = re.compile(r'(?m)^"?kind"?\s*:\s*"?([A-Za-z]+)"?\s*,?\s*$')
    _JSON_KIND = re.compile(r'"?\bkind"?\s*:\s*"?([A-Za-z]+)')

    def attempt(self, text: Text, _sniff) -> Found | None:
        head = text.text
        kinds = self._KIND.findall(head)
        if not kinds and head.lstrip().startswith("{"):
            kinds = self._JSON_KIND.findall(head)[:1]
        if not kinds:
            return None
        top = self._TOP_KIND.search(head)
        first = top.group(1) if top else kinds[0]
        json = _json_kinds(head) if top is None and head.lstrip().startswith("{") else []
        if json:  # the object's own `kind` is the least indented one
            first = min(json, key=lambda x: x[0])[1]
        if first == "List":
            # the items' own kind before a kind they name (an Event's involvedObject, a static
            # pod's owner, a template's): kubectl indents an item's keys by two in YAML, and in JSON
            # they are the least indented `kind` inside the list
            items = _item_kinds(head, json)
            for item in (*self.list_items, *items):
                listed = item in items if items else _list_item(item).search(head)
                if item in self.by_k8s_kind and listed:
                    return self.by_k8s_kind[item], self.list_reason.format(k8s_kind=item)
            first = next((k for k in kinds if k in self.by_k8s_kind), first)
        kid = self.by_k8s_kind.get(first)
        if kid is None:
            return None
        return kid, self.reason.format(k8s_kind=first)


_YAML_ITEM_KIND = re.compile(r"(?m)^(?:- |  )kind:\s*\"?([A-Za-z]+)\"?\s*$")
_JSON_KIND_AT = re.compile(r'(?m)^(\s*)"kind"\s*:\s*"([A-Za-z]+)"')


def _json_kinds(head: str) -> list[tuple[int, str]]:
    """Each `"kind": "..."` line of a JSON text, with its indentation."""
    return [(len(indent), k) for indent, k in _JSON_KIND_AT.findall(head)]


def _item_kinds(head: str, json: list[tuple[int, str]]) -> tuple[str, ...]:
    r"""The kinds of a List's items, in order: YAML's at an item's own indentation, else JSON's
    (`json`: `_json_kinds`) at the least indentation below the List's own `kind` (empty when
    neither shows).

    >>> _item_kinds("items:\n- involvedObject:\n    kind: Pod\n  kind: Event\nkind: List", [])
    ('Event',)
    >>> text = '{\n  "items": [\n    {\n      "involvedObject": {\n        "kind": "Node"\n      },\n      "kind": "Event"\n    }\n  ],\n  "kind": "List"\n}'
    >>> _item_kinds(text, _json_kinds(text))
    ('Event',)
    """
    found = tuple(dict.fromkeys(k for k in _YAML_ITEM_KIND.findall(head) if k != "List"))
    if found:
        return found
    kinds = [(n, k) for n, k in json if k != "List"]
    least = min((n for n, _ in kinds), default=0)
    return tuple(dict.fromkeys(k for n, k in kinds if n == least))


@lru_cache(maxsize=64)
def _list_item(k8s_kind: str) -> re.Pattern:
    """An item of a List: its `kind:` line, indented, after a `- ` or not."""
    return re.compile(rf'(?m)^\s*(?:-\s+)?"?kind"?\s*:\s*"?{re.escape(k8s_kind)}"?\s*,?\s*$')


@dataclass(frozen=True)
class MarkerStep:
    """The log-marker vote: the kind whose `markers` the most lines match (a script line that
    echoes a log message counts for no kind)."""

    order: int
    reason: str
    # (kind id, one alternation of its markers, literals one of which each match holds or None):
    # a line without them is not searched (a search costs ~20,000 instructions, a literal ~200)
    markers: tuple[tuple[str, re.Pattern, tuple[str, ...] | None], ...]
    where: str = ""

    def attempt(self, text: Text, _sniff) -> Found | None:
        lines = [line for line in text.log_lines if not in_script(line)]
        whole = "\n".join(lines)
        scores: dict[str, int] = {}
        for kid, marker, literals in self.markers:
            held = None if literals is None else [x for x in literals if x in whole]
            if held == []:
                continue  # no line holds one
            count = sum(
                1
                for line in lines
                if (held is None or any(x in line for x in held)) and marker.search(line)
            )
            if count:
                scores[kid] = count
        if not scores:
            return None
        best = max(sorted(scores), key=lambda k: scores[k])
        klog = sum(1 for x in text.log_lines if _KLOG.match(x))
        return best, self.reason.format(kind=best, count=scores[best], klog=klog)


_KLOG = re.compile(KLOG_HEADER_PATTERN)


@dataclass(frozen=True)
class UnwrapStep:
    """A text wrapped in something (a unified diff) is recognised as what it wraps."""

    order: int
    reason: str
    unwrap: Callable[[str], str | None]
    where: str = ""

    def attempt(self, text: Text, sniff) -> Found | None:
        inner = self.unwrap(text.text)
        if inner is None:
            return None
        kind, reason = sniff(inner)
        return kind, self.reason.format(reason=reason)


Step = Probe | ObjectStep | MarkerStep | UnwrapStep


@dataclass(frozen=True)
class Recognition:
    """The compiled recognition of a catalogue: its steps in order."""

    head_chars: int = 200_000
    log_lines: int = 3000
    steps: tuple[Step, ...] = field(default_factory=tuple)


def _pattern(raw, where: str, problems: list[str], flags: int = re.MULTILINE) -> re.Pattern | None:
    """One pattern, or a list of them as one alternation; `@name` is a named pattern. The
    alternation is compiled once (every run compiles recognition); its parts one by one only to
    name the bad one when it does not compile."""
    items = raw if isinstance(raw, list) else [raw]
    parts = []
    for p in items:
        if not isinstance(p, str) or not p:
            problems.append(f"{where}: expected a regex or a list of regexes, got {p!r}")
            continue
        if p.startswith("@"):
            if p[1:] not in NAMED_PATTERNS:
                problems.append(
                    f"{where}: unknown named pattern {p!r} ({', '.join(NAMED_PATTERNS)})"
                )
                continue
            p = NAMED_PATTERNS[p[1:]]
        parts.append(p)
    try:
        return _compiled(parts, flags)
    except re.error:
        pass
    good = []
    for p in parts:
        try:
            re.compile(p, flags)
            good.append(p)
        except re.error as exc:
            problems.append(f"{where}: bad regex {p!r}: {exc}")
    try:
        return _compiled(good, flags)
    except re.error as exc:  # parts that compile alone but not together: (?i) not at the start
        problems.append(f"{where}: bad regex {'|'.join(good)!r}: {exc}")
        return None


def _compiled(parts: list[str], flags: int) -> re.Pattern | None:
    if not parts:
        return None
    return re.compile(parts[0] if len(parts) == 1 else "|".join(f"(?:{p})" for p in parts), flags)


def _names(raw, where: str, problems: list[str]) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        problems.append(f"{where}: expected a list of names, got {raw!r}")
        return frozenset()
    return frozenset(raw)


def _int(raw, what: str, where: str, problems: list[str], default: int = 0) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        problems.append(f"{where}: {what} must be a whole number >= 0, got {raw!r}")
        return default
    return raw


def _sections(raw, where: str, problems: list[str]) -> Sections | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: sections: expected a mapping with pattern, any_of, only, min")
        return None
    for key in unknown_keys(raw, SECTION_KEYS):
        problems.append(
            f"{where}: sections: unknown key {key!r} ({', '.join(sorted(SECTION_KEYS))})"
        )
    pattern = _pattern(raw.get("pattern"), f"{where}: sections.pattern", problems)
    if pattern is not None and pattern.groups != 1:
        problems.append(f"{where}: sections.pattern must capture exactly one group (the name)")
        return None
    if pattern is None:
        return None
    return Sections(
        pattern,
        _names(raw.get("any_of"), f"{where}: sections.any_of", problems),
        _names(raw.get("only"), f"{where}: sections.only", problems),
        _int(raw.get("min"), "sections.min", where, problems),
    )


def parse_probe(kind: str, raw, where: str, problems: list[str]) -> Probe | None:
    """One `recognise:` entry; every problem names the file and line of the entry."""
    if not isinstance(raw, dict):
        problems.append(f"{where}: kind {kind}: a recognise entry must be a mapping")
        return None
    for key in unknown_keys(raw, PROBE_KEYS):
        problems.append(
            f"{where}: kind {kind}: unknown recognise key {key!r} ({', '.join(sorted(PROBE_KEYS))})"
        )
    n = len(problems)
    conditions = CONDITION_KEYS & set(raw)
    if not conditions:
        problems.append(f"{where}: kind {kind}: a recognise entry states no condition")
    if "otherwise" in raw and len(conditions) > 1:
        problems.append(f"{where}: kind {kind}: `otherwise` takes no other condition")
    if "min_lines" in raw and "line" not in raw:
        problems.append(f"{where}: kind {kind}: min_lines counts the matches of `line`")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        problems.append(f"{where}: kind {kind}: a recognise entry needs a reason (shown to users)")
        reason = kind
    if "order" not in raw:
        problems.append(f"{where}: kind {kind}: a recognise entry needs an order")
    probe = Probe(
        kind=kind,
        order=_int(raw.get("order"), "order", where, problems),
        reason=reason,
        where=where,
        blank=raw.get("blank") is True,
        otherwise=raw.get("otherwise") is True,
        line=_pattern(raw["line"], f"{where}: line", problems) if "line" in raw else None,
        min_lines=_int(raw.get("min_lines"), "min_lines", where, problems, 1),
        all_lines=tuple(
            p
            for x in (raw.get("all_lines") or [])
            if (p := _pattern(x, f"{where}: all_lines", problems)) is not None
        ),
        no_line=_pattern(raw["no_line"], f"{where}: no_line", problems)
        if "no_line" in raw
        else None,
        starts=_pattern(raw["starts"], f"{where}: starts", problems, 0)
        if "starts" in raw
        else None,
        sections=_sections(raw["sections"], where, problems) if "sections" in raw else None,
        log_line=_pattern(raw["log_line"], f"{where}: log_line", problems)
        if "log_line" in raw
        else None,
    )
    for key in ("blank", "otherwise"):
        if key in raw and raw[key] is not True:
            problems.append(f"{where}: kind {kind}: {key} takes only `true`")
    try:
        reason.format(sections="", count=0)
    except (KeyError, IndexError, ValueError) as exc:
        problems.append(f"{where}: kind {kind}: reason {reason!r}: unknown placeholder {exc}")
    return probe if len(problems) == n else None


def _needing(probe: Probe, literals: dict[str, tuple[str, ...]]) -> Probe:
    """The probe with the known literals of the patterns it needs to match."""
    needs = tuple(literals[p.pattern] for p in _required_patterns(probe) if p.pattern in literals)
    return replace(probe, needs=needs) if needs else probe


def _required_patterns(probe: Probe) -> list[re.Pattern]:
    return [p for p in (probe.line, *probe.all_lines, probe.starts) if p is not None]


def gating_patterns(recognition: Recognition) -> list[str]:
    """The texts of the patterns that must match for a step to find a kind (each kind's log
    markers, and each probe's `line`, `all_lines` and `starts`): those whose literals are
    worth knowing (`Catalogue.literals`)."""
    out: list[str] = []
    for step in recognition.steps:
        if isinstance(step, MarkerStep):
            out.extend(marker.pattern for _kid, marker, _literals in step.markers)
        elif isinstance(step, Probe):
            out.extend(p.pattern for p in _required_patterns(step))
    return out


@lru_cache(maxsize=16)
def recognition_of(catalogue: Catalogue) -> Recognition:
    """The catalogue's recognition, compiled once per catalogue (a RuleLoadError when broken)."""
    return compile_recognition(catalogue)


def compile_recognition(catalogue: Catalogue) -> Recognition:
    """The steps of recognition in order: every kind's entries and the shared steps (objects,
    log markers, unwrapping) declared under the top-level `recognition:`. Two kinds may not
    share an order: which would win is then a matter of file order, which nobody reads. Every
    problem names the file and line of its entry."""
    problems: list[str] = []
    if catalogue.recognition is None:
        raise RuleLoadError(["the kind catalogue has no `recognition:` mapping"])
    where, raw = catalogue.recognition.where, catalogue.recognition.spec
    path = where.rsplit(":", 1)[0]
    kinds = catalogue.kinds
    by_k8s_kind = catalogue.by_k8s_kind
    for key in unknown_keys(raw, RECOGNITION_KEYS):
        problems.append(f"{where}: recognition: unknown key {key!r}")
    steps: list[Step] = [
        _needing(p, catalogue.literals)
        for k in kinds.values()
        for d in k.recognise
        if (p := parse_probe(k.id, d.spec, d.where, problems)) is not None
    ]
    objects = raw.get("objects")
    if isinstance(objects, dict):
        steps.append(
            ObjectStep(
                order=_order(objects, path, problems),
                reason=str(objects.get("reason", "")),
                list_reason=str(objects.get("list_reason", "")),
                list_items=tuple(objects.get("list_items") or ()),
                by_k8s_kind=by_k8s_kind,
                where=_where(path, objects),
            )
        )
        for item in objects.get("list_items") or ():
            if item not in by_k8s_kind:
                problems.append(
                    f"{_where(path, objects)}: list_items: no kind has k8s_kind {item!r}"
                )
    else:
        problems.append(f"{where}: recognition.objects: expected a mapping (order, reason, ...)")
    markers = raw.get("markers")
    if isinstance(markers, dict):
        steps.append(
            MarkerStep(
                order=_order(markers, path, problems),
                reason=str(markers.get("reason", "")),
                markers=tuple(
                    (k.id, k.marker, catalogue.literals.get(k.marker.pattern))
                    for k in kinds.values()
                    if k.is_log and k.marker is not None
                ),
                where=_where(path, markers),
            )
        )
    else:
        problems.append(f"{where}: recognition.markers: expected a mapping (order, reason)")
    for u in raw.get("unwrap") or []:
        if not isinstance(u, dict) or u.get("transform") not in UNWRAPPERS:
            problems.append(
                f"{_where(path, u)}: recognition.unwrap: expected a transform among"
                f" {sorted(UNWRAPPERS)}, an order and a reason"
            )
            continue
        steps.append(
            UnwrapStep(
                order=_order(u, path, problems),
                reason=str(u.get("reason", "{reason}")),
                unwrap=UNWRAPPERS[u["transform"]],
                where=_where(path, u),
            )
        )
    last = [s for s in steps if isinstance(s, Probe) and s.otherwise]
    if not last:
        problems.append(
            f"{where}: recognition: no kind declares the last resort (`otherwise: true`)"
        )
    for resort in last if len(last) > 1 else ():
        others = ", ".join(f"{o.kind} ({o.where})" for o in last if o is not resort)
        problems.append(
            f"{resort.where}: kind {resort.kind}: only one kind may be the last resort"
            f" (`otherwise: true`); also {others}"
        )
    if len(last) == 1 and any(s.order >= last[0].order for s in steps if s is not last[0]):
        problems.append(f"{last[0].where}: the `otherwise` entry must have the highest order")
    owner: dict[int, tuple[str, str]] = {}
    for s in steps:
        name = s.kind if isinstance(s, Probe) else type(s).__name__
        seen = owner.setdefault(s.order, (name, s.where))
        if seen[0] != name:
            problems.append(
                f"{s.where}: recognise order {s.order} is also {seen[0]}'s ({seen[1]}):"
                " give each kind its own order"
            )
    recognition = Recognition(
        head_chars=_int(raw.get("head_chars"), "head_chars", where, problems, 200_000),
        log_lines=_int(raw.get("log_lines"), "log_lines", where, problems, 3000),
        steps=tuple(sorted(steps, key=lambda s: s.order)),
    )
    if problems:
        raise RuleLoadError(problems)
    return recognition


def _where(path: str, spec) -> str:
    return f"{path}:{spec.get('__line__', 0) if isinstance(spec, dict) else 0}"


def _order(spec: dict, path: str, problems: list[str]) -> int:
    order = spec.get("order")
    if isinstance(order, bool) or not isinstance(order, int):
        problems.append(f"{_where(path, spec)}: order must be a whole number, got {order!r}")
        return 0
    return order
