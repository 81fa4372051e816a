"""The JSON report (analyzer/render/jsonout.py) is written exactly as json writes its document
with `indent=2`, though each node's members are encoded once and by the module's own writer:
on every sample bundle, on bundles of two nodes, on texts holding newlines, quotes and
non-ASCII characters, and (the writer alone) on generated documents."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_multinode import LAYOUTS, write_bundle

from analyzer.analyze import analyze
from analyzer.render.jsonout import _default, indented, render_json, report_document
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


class _Odd:
    """A value json does not know: written through `_default` (as its str)."""

    def __str__(self) -> str:
        return 'odd "[1]"'


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
    | st.sampled_from(["", "[]", "{}", '"', "\\", "\n", "\t", "\x00", "\u2028", "调度"])
    | st.datetimes()
    | st.builds(_Odd)
)
_KEYS = (
    st.text(max_size=6)
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.none()
    | st.just(float("inf"))
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.frozensets(st.integers(0, 9), max_size=3)
        | st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(doc=_DOCUMENTS)
def test_a_document_is_indented_as_json_writes_it(doc):
    """`indented` is `json.dumps(..., indent=2, ensure_ascii=False, default=_default)`: texts
    with quotes, backslashes, newlines and control characters, every kind of key json takes,
    NaN and the infinities, empty and nested lists, tuples and dicts, and values only
    `_default` knows (datetimes, sets, anything else by its str)."""
    assert indented(doc) == json.dumps(doc, indent=2, ensure_ascii=False, default=_default)


def test_a_key_json_refuses_is_refused():
    with pytest.raises(TypeError, match="keys must be str, int, float, bool or None, not tuple"):
        indented({(1, 2): 3})
