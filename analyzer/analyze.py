"""The analysis API: `analyze(inputs, AnalyzeOptions(...)) -> Analysis`.

The whole analysis of one input as a pure function of it: read (and redact) the files, recognise
and parse them, facts per node, evaluate the rules, build the report. The CLI (`analyze`,
`inspect`), `batch`, the issue bot, the rule self-tests and the corpus scorer all call `analyze`;
the functions below it are its stages (the `timeline` command and stage tests use them).

    >>> from analyzer.rules.loader import load_ruleset
    >>> issue = Issue(b"nvml Init err: ERROR_LIBRARY_NOT_FOUND")
    >>> analyze(issue, AnalyzeOptions(ruleset=load_ruleset())).report.primary.rule_id
    'nvml-init-failed'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.bundle.reader import BundleReader, Limits
from analyzer.errors import BundleError
from analyzer.facts.context import build_contexts
from analyzer.parse.matcher import Matcher, signature_matcher
from analyzer.pipeline import ParsedBundle, parse_bundle, parse_files
from analyzer.report.build import build_node, build_report
from analyzer.report.model import NodeReport, Report
from analyzer.rules.engine import evaluate
from analyzer.rules.model import RuleSet
from analyzer.timeline import NodeTimeline, Shown, node_timeline

if TYPE_CHECKING:
    from analyzer.bundle.thread import Post, ThreadFiles


@dataclass(frozen=True)
class Issue:
    """One GitHub issue as read: its Markdown text or a GitHub event JSON holding it."""

    raw: bytes


@dataclass(frozen=True)
class Thread:
    """An issue thread (the issue, comments, attachments) as the bot reads it: the newest post's
    artefacts of each kind, except the kinds in `accumulate`, which every post adds to."""

    posts: tuple[Post, ...]
    accumulate: frozenset[str] = frozenset()


# paths (folders, archives, files, "-" for stdin), an issue, a thread, or an open reader (whose
# files the caller added and closes)
Inputs = Sequence[str] | Issue | Thread | BundleReader


@dataclass(frozen=True)
class RedactOptions:
    """Analyse a redacted copy (`--redact`): the analysis sees only redacted files; `redactors`
    add to the built-in catalogue and `map_file` is the token map to extend (paths only)."""

    redactors: tuple[Path, ...] = ()
    map_file: Path | None = None


@dataclass(frozen=True)
class AnalyzeOptions:
    """How to analyse. Every field has the CLI's default."""

    ruleset: RuleSet | None = None  # None: the built-in rules
    node: str | None = None  # only this node (under --redact, its real name or its token)
    # the language of the rule texts and verdict, or a chooser given the input's prose (the bot)
    lang: str | Callable[[str], str] = "en"
    limits: Limits | None = None  # the reader's caps; None: the defaults
    redact: RedactOptions | None = None
    content_digest: bool = False  # also hash every file whole (batch duplicates)


@dataclass(frozen=True)
class Analysis:
    """What `analyze` returns: the parsed bundle, the report, and for issues and threads the
    thread's files (prose, attachments that could not be read)."""

    bundle: ParsedBundle
    report: Report
    lang: str  # the language the report is written in
    # what identifies the input in a Markdown comment's `input=` digest: the bundle's digest,
    # or an issue's (redacted) text
    digest: bytes
    thread: ThreadFiles | None = None


def analyze(inputs: Inputs, options: AnalyzeOptions | None = None) -> Analysis:
    """Analyse `inputs`. Paths with nothing analysable, an unreadable input or a bad rule set
    are an `AnalyzerError` with a one-line message; an issue or a thread with nothing to analyse
    is a report (it says what to collect)."""
    options = options or AnalyzeOptions()
    ruleset = options.ruleset
    if ruleset is None:
        from analyzer.rules.loader import load_ruleset

        ruleset = load_ruleset()
    node = options.node
    thread: ThreadFiles | None = None
    with ExitStack() as stack:
        if isinstance(inputs, Issue | Thread):
            bundle, thread, digest = _read_thread(inputs, ruleset, options)
        elif isinstance(inputs, BundleReader):
            if options.redact is not None:
                raise ValueError("an open reader is analysed as it is: redact its inputs instead")
            bundle = parse_reader(inputs, ruleset)
            digest = bundle.digest.encode()
        elif options.redact is not None:
            from analyzer.redact.bundle import redacted_reader

            reader, result = stack.enter_context(
                redacted_reader(
                    list(inputs),
                    options.limits,
                    list(options.redact.redactors),
                    options.redact.map_file,
                )
            )
            bundle = parse_reader(reader, ruleset)
            check_analysable(bundle)
            if node is not None:
                node = result.tokens.lookup(node) or node
            digest = bundle.digest.encode()
        else:
            limits, content = options.limits, options.content_digest
            bundle = load_bundle(list(inputs), ruleset, limits=limits, content=content)
            digest = bundle.digest.encode()
        lang = options.lang
        if callable(lang):
            lang = lang(thread.prose if thread is not None else "")
        return Analysis(bundle, analyze_parsed(bundle, ruleset, node, lang), lang, digest, thread)


def _read_thread(
    inputs: Issue | Thread, ruleset: RuleSet, options: AnalyzeOptions
) -> tuple[ParsedBundle, ThreadFiles, bytes]:
    from analyzer.bundle.thread import Post, digest_source

    redact = options.redact is not None
    if isinstance(inputs, Issue):
        from analyzer.bundle.issue import issue_from_payload

        raw = inputs.raw
        if options.redact is not None:  # redacted as one text, with the options' catalogue and map
            from analyzer.redact.bundle import redact_issue

            raw = redact_issue(raw, list(options.redact.redactors), options.redact.map_file)
            redact = False
        inputs = Thread((Post("issue", issue_from_payload(raw)),))
    elif options.redact is not None and (options.redact.redactors or options.redact.map_file):
        raise ValueError("a thread is redacted with the built-in catalogue only")
    bundle, files = thread_bundle(
        list(inputs.posts), ruleset, options.limits, inputs.accumulate, redact
    )
    return bundle, files, digest_source(list(inputs.posts))


_MATCHERS: dict[int, tuple[RuleSet, Matcher]] = {}


def matcher_for(ruleset: RuleSet) -> Matcher:
    """The compiled signature scan, built once per rule set and process (a batch worker analyses
    thousands of bundles with the same rules)."""
    built = ruleset.matcher
    if built is not None and built._compile.signatures is ruleset.signatures:
        return built  # a rule set copied with other signatures has its own scan built below
    hit = _MATCHERS.get(id(ruleset))
    if hit is None or hit[0] is not ruleset:
        matcher = signature_matcher(ruleset.signatures)
        if len(_MATCHERS) > 8:
            _MATCHERS.clear()
        hit = _MATCHERS[id(ruleset)] = (ruleset, matcher)  # held so its id stays its own
    return hit[1]


def parse_reader(reader: BundleReader, ruleset: RuleSet) -> ParsedBundle:
    return parse_files(reader, ruleset.catalogue, matcher_for(ruleset))


def check_analysable(bundle: ParsedBundle) -> None:
    """An input with nothing to analyse is a usage error, not a healthy node."""
    if bundle.analysable:
        return
    files = bundle.inventory.files
    if not files:
        why = "; ".join(bundle.warnings[:3]) or "no files"
        raise BundleError(f"nothing to analyse: {why}")
    kinds = sorted(set(bundle.kinds))
    raise BundleError(f"nothing to analyse: {len(files)} file(s), all {'/'.join(kinds)}")


def node_timelines(
    bundle: ParsedBundle, ruleset: RuleSet, node: str | None = None
) -> Iterator[tuple[str | None, NodeTimeline]]:
    """Each node's timeline (facts and timeline stages; no rule is evaluated), in the order
    the bundle holds the nodes; a node's facts are built when its turn comes."""
    facts = build_contexts(bundle, ruleset.fact_inputs, node)
    for target in facts.targets:
        ctx = facts.context(target)
        yield ctx.name, node_timeline(ctx, ruleset.episodes)


def first_timeline(
    bundle: ParsedBundle, ruleset: RuleSet, node: str | None = None
) -> tuple[Shown, NodeTimeline]:
    """The timeline the `timeline` command prints: `node`'s, or the first node's, built from
    that node's facts alone; and the other nodes it leaves out."""
    facts = build_contexts(bundle, ruleset.fact_inputs, node)
    ctx = facts.context(facts.targets[0])
    others = tuple(n for n in facts.names[1:] if n)
    return Shown(ctx.name, others), node_timeline(ctx, ruleset.episodes)


def analyze_parsed(
    bundle: ParsedBundle, ruleset: RuleSet, node: str | None = None, lang: str = "en"
) -> Report:
    """Facts per node, then each node's timeline and rule results into its report; its words
    (rule texts, verdict, what to collect) in `lang`."""
    facts = build_contexts(bundle, ruleset.fact_inputs, node)
    reports: list[NodeReport] = []
    for ctx in facts.contexts:
        timeline = node_timeline(ctx, ruleset.episodes)
        reports.append(build_node(ctx, evaluate(ruleset, ctx, lang), ruleset, timeline, lang))
    return build_report(bundle, reports, ruleset, facts.warnings)


def load_bundle(
    inputs: list[str], ruleset: RuleSet, limits: Limits | None = None, content: bool = False
) -> ParsedBundle:
    """Read and parse the inputs; nothing analysable is a BundleError."""
    bundle = parse_bundle(inputs, ruleset.catalogue, matcher_for(ruleset), limits, content)
    check_analysable(bundle)
    return bundle


def thread_bundle(
    posts: list[Post],
    ruleset: RuleSet,
    limits: Limits | None = None,
    accumulate: frozenset[str] = frozenset(),
    redact: bool = False,
) -> tuple[ParsedBundle, ThreadFiles]:
    """An issue thread (analyzer/bundle/thread.py): the newest post's artefacts of each kind
    not in `accumulate`; with the thread's prose and the attachments it could not read."""
    from functools import partial

    from analyzer.bundle.thread import newest_per_kind, read_thread

    with ExitStack() as stack:
        files = stack.enter_context(read_thread(posts, limits))
        if redact:  # a reader over the redacted copies, below the analysis
            from analyzer.redact.bundle import redacted_thread

            files = stack.enter_context(redacted_thread(files, limits))
        select = partial(newest_per_kind, accumulate=accumulate)
        return parse_files(files, ruleset.catalogue, matcher_for(ruleset), select=select), files
