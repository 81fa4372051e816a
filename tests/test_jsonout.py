"""The JSON report (analyzer/render/jsonout.py) is written exactly as json writes its document
with `indent=2`, though each node's members are encoded once: on every sample bundle, on
bundles of two nodes, and on texts holding newlines, quotes and non-ASCII characters."""

from __future__ import annotations

import json

import pytest
from test_multinode import LAYOUTS, write_bundle

from analyzer.analyze import analyze
from analyzer.render.jsonout import _default, render_json, report_document
from conftest import SAMPLES


def _as_json_writes_it(report) -> str:
    return json.dumps(report_document(report), indent=2, ensure_ascii=False, default=_default)


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_a_samples_report_is_written_as_json_writes_it(sample):
    report = analyze([str(SAMPLES / sample / "bundle")]).report
    text = render_json(report)
    assert text == _as_json_writes_it(report)
    assert json.loads(text)["nodes"][0]["primary"] == json.loads(text)["primary"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_two_node_report_is_written_as_json_writes_it(tmp_path, layout):
    report = analyze([str(write_bundle(tmp_path, layout))]).report
    assert len(report.nodes) == 2
    assert render_json(report) == _as_json_writes_it(report)


def test_texts_with_newlines_quotes_and_other_scripts_are_written_as_json_writes_them(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for f in (SAMPLES / "healthy-single-gpu" / "bundle").iterdir():
        (bundle / f.name).write_bytes(f.read_bytes())
    with (bundle / "device-plugin.log").open("a", encoding="utf-8") as log:
        log.write('E0101 00:00:00.000000 1 x.go:1] nvml Init err: "quoted"\\n\t调度失败 \u212a\n')
    report = analyze([str(bundle)]).report
    text = render_json(report)
    assert text == _as_json_writes_it(report)
    assert '\\"quoted\\"\\\\n\\t调度失败' in text  # in the finding's evidence
