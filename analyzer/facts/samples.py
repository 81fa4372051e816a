"""Tiny in-memory inputs for the producers' docstring examples (insights-core style): each
producer shows a sample input and the facts it yields, and the examples run as tests."""

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
    from analyzer.parse.pod import parse_pod

    return parse_pod(artefact(kind, text, "pod.yaml"))[0]


def config(kind: str, text: str):
    from analyzer.parse.configs import parse_config

    return parse_config(artefact(kind, text, f"{kind}.txt"))


def annotation_spec():
    from analyzer.parse.annotations import AnnotationSpec
    from analyzer.rules import builtin_rules_dir

    return AnnotationSpec.load(builtin_rules_dir() / "annotations.yaml")
