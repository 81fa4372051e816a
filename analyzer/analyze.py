"""The whole analysis of one bundle as a pure function of its inputs: read and recognise, parse,
facts per node, evaluate the rules, build the report."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from analyzer.bundle.reader import BundleReader, Limits
from analyzer.errors import BundleError
from analyzer.facts.context import build_contexts
from analyzer.parse.logs import Matcher
from analyzer.pipeline import ParsedBundle, parse_bundle, parse_files
from analyzer.report.build import build_node, build_report
from analyzer.report.model import NodeReport, Report
from analyzer.rules.engine import evaluate
from analyzer.rules.model import RuleSet
from analyzer.timeline import NodeTimeline, node_timeline

if TYPE_CHECKING:
    from analyzer.bundle.thread import Post, ThreadFiles

_MATCHERS: dict[int, tuple[RuleSet, Matcher]] = {}


def matcher_for(ruleset: RuleSet) -> Matcher:
    """The compiled signature scan, built once per rule set and process (a batch worker analyses
    thousands of bundles with the same rules)."""
    hit = _MATCHERS.get(id(ruleset))
    if hit is None or hit[0] is not ruleset:
        sigs = list(ruleset.signatures.values())
        by_id = ruleset.signatures
        matcher = Matcher(
            [(s.id, s.pattern) for s in sigs],
            {s.id: list(s.prefilter) or None for s in sigs},
            lambda sid: by_id[sid].compiled,
        )
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
    the bundle holds the nodes."""
    for ctx in build_contexts(bundle, ruleset.fact_inputs, node).contexts:
        yield ctx.name, node_timeline(ctx, ruleset.episodes)


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


def analyze(
    inputs: list[str],
    ruleset: RuleSet,
    node: str | None = None,
    limits: Limits | None = None,
    lang: str = "en",
) -> tuple[ParsedBundle, Report]:
    bundle = load_bundle(inputs, ruleset, limits)
    return bundle, analyze_parsed(bundle, ruleset, node, lang)


def issue_bundle(raw: bytes, ruleset: RuleSet, limits: Limits | None = None) -> ParsedBundle:
    """A GitHub issue (Markdown or event JSON): its code blocks and its prose (title included,
    as the issue's own words) become the bundle, each block one file under the archive limits."""
    from analyzer.bundle.issue import issue_from_payload
    from analyzer.bundle.thread import Post

    return thread_bundle([Post("issue", issue_from_payload(raw))], ruleset, limits)[0]


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

    with read_thread(posts, limits, redact) as files:
        select = partial(newest_per_kind, accumulate=accumulate)
        return parse_files(files, ruleset.catalogue, matcher_for(ruleset), select=select), files


def analyze_issue(
    raw: bytes,
    ruleset: RuleSet,
    node: str | None = None,
    limits: Limits | None = None,
    lang: str = "en",
) -> tuple[ParsedBundle, Report]:
    bundle = issue_bundle(raw, ruleset, limits)
    return bundle, analyze_parsed(bundle, ruleset, node, lang)
