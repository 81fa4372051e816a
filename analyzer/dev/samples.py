"""Tiny in-memory inputs for the producers' docstring examples (insights-core style): each
producer shows a sample input and the facts it yields, and the examples run as tests. They load
the rules and run the scan, so they live here, above the stages, not in facts/."""

from __future__ import annotations

from pathlib import Path

from analyzer.bundle.model import Artefact, BundleFile


def artefact(kind: str, text: str, name: str = "sample.txt") -> Artefact:
    f = BundleFile(name=name, path=Path("/nonexistent"), size=len(text))
    return Artefact(f, kind, "sample", 1, text)


def node(text: str, kind: str = "node"):
    from analyzer.parse.node import parse_node

    return parse_node(artefact(kind, text, "node.yaml"))[0]


def pod(text: str, kind: str = "pod"):
    """The first pod of a text, read as `kind` (a workload's: its templates, as its kind says)."""
    from analyzer.parse.registry import parse_artefact

    ((_, parsed),) = parse_artefact(artefact(kind, text, "pod.yaml"), catalogue()[kind], ("pod",))
    return parsed.items[0]


def config(kind: str, text: str):
    from analyzer.parse.configs import parse_config

    return parse_config(artefact(kind, text, f"{kind}.txt"))


def catalogue():
    """The built-in kind catalogue (rules/kinds.yaml)."""
    from analyzer.catalogue.kinds import load_catalogue
    from analyzer.rules import builtin_rules_dir

    return load_catalogue(builtin_rules_dir() / "kinds.yaml")


def annotation_spec():
    from analyzer.parse.annotations import AnnotationSpec
    from analyzer.rules import builtin_rules_dir

    return AnnotationSpec.load(builtin_rules_dir() / "annotations.yaml")


def index_of(texts: dict[str, str], kind: str = "text"):
    """The signature index of some pasted texts (file name -> text), each read as `kind`, with the
    built-in signatures and kind catalogue."""
    from analyzer.analyze import matcher_for
    from analyzer.facts.clock import infer_clock, stamp_logs
    from analyzer.facts.matches import collect_matches
    from analyzer.parse.logs import parse_log
    from analyzer.rules.loader import load_ruleset

    rs = load_ruleset()
    start = rs.catalogue.record_start
    logs = [parse_log(artefact(kind, t, name), matcher_for(rs), start) for name, t in texts.items()]
    logs = stamp_logs(logs, infer_clock([], [], [], False, None))
    return collect_matches(logs, [kind] * len(logs), rs.signatures, rs.catalogue)


def parsed(text: str, kind: str = "text"):
    """One pasted text parsed as a log of `kind` (its lines, klog columns and signatures)."""
    from analyzer.analyze import matcher_for
    from analyzer.parse.logs import parse_log
    from analyzer.rules.loader import load_ruleset

    rs = load_ruleset()
    return parse_log(artefact(kind, text), matcher_for(rs), rs.catalogue.record_start)
