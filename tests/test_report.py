"""HTML report: structure parsed from the page, and inertness of hostile bundle content."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import polars as pl
import pytest
import yaml

from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.render.html import render_html
from conftest import SAMPLES

SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "expected.yaml").is_file())


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: dict[str, dict] = {}
        self.scripts = 0
        self.handlers: list[str] = []
        self.urls: list[str] = []
        self.stack: list[str] = []
        self.text_in: dict[str, list[str]] = {}
        self.gpu_rows = 0
        self._in_gpu_body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for k, v in attrs:
            if k.startswith("on"):
                self.handlers.append(f"{tag} {k}")
            if k in ("href", "src", "action", "xlink:href") and v:
                self.urls.append(v)
        if "id" in a:
            self.ids[a["id"]] = a
            self.stack.append(a["id"])
        else:
            self.stack.append("")
        if tag == "tbody" and "gpu-table" in self.ids and self.stack.count("gpu-table"):
            self._in_gpu_body = True
        if tag == "tr" and self._in_gpu_body:
            self.gpu_rows += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_gpu_body = False
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for i in self.stack:
            if i:
                self.text_in.setdefault(i, []).append(data)

    def text(self, id_: str) -> str:
        return " ".join("".join(self.text_in.get(id_, [])).split())


def _page(ruleset, sample):
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    html = render_html(report)
    p = Page()
    p.feed(html)
    return report.worst, html, p


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_report_structure(ruleset, sample):
    d, html, page = _page(ruleset, sample)
    expected = yaml.safe_load((sample / "expected.yaml").read_text())
    verdict = page.text("verdict")
    assert expected["primary_category"] in verdict
    assert d.primary.title.split()[0] in verdict
    for rid in expected["must_fire"]:
        finding = next(f for f in d.all_findings() if f.rule_id == rid)
        if finding.kind == "fault":
            assert f"f-{rid}" in page.ids, rid
            assert rid in page.text(f"f-{rid}")
    if d.register and d.register.devices:
        assert page.gpu_rows == len(d.register.devices)
    for link in ("count", "spec", "liveness"):
        assert f"link-{link}" in page.ids
    assert page.scripts == 1  # ours, allowed by hash in the CSP
    assert page.handlers == []
    assert all(
        not u.lower().startswith(("http:", "https:", "javascript:", "//")) for u in page.urls
    )
    assert "default-src 'none'" in html


def test_hostile_strings_are_inert_text(ruleset):
    _d, html, page = _page(ruleset, SAMPLES / "xss-hostile")
    assert "<script>document.title" not in html
    assert "&lt;script&gt;document.title=&#34;PWNED&#34;&lt;/script&gt;" in html
    assert "<img src=x" not in html and "</style><script>" not in html
    assert 'href="javascript:' not in html
    assert page.handlers == [] and page.scripts == 1


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_rule_texts_render_code_spans_and_healthy_reports_draw_no_red(ruleset, sample):
    """Markdown `code` in a rule's text is shown as code, never as raw backticks; a node with no
    fault draws nothing in the fault colour (lines a "normal" finding cites are green)."""
    d, html, _ = _page(ruleset, sample)
    body = html[html.index("<main>") :]
    prose = re.sub(r"<pre\b.*?</pre>|<code>.*?</code>|<title>.*?</title>", "", body, flags=re.S)
    assert "`" not in prose, prose[max(prose.index("`") - 200, 0) : prose.index("`") + 50]
    if not d.faults():
        assert "fill:var(--bad)" not in body
        assert not re.search(r'class="[^"]*\b(?:sev-critical|sev-error|s-broken)\b', body)


def test_timeline_axis_has_round_ticks(ruleset):
    """The axis is labelled at round times across the whole span, not just at its two ends."""
    html = _page(ruleset, SAMPLES / "xid79-gpu-lost")[1]
    labels = re.findall(r'<text class="tick-label"[^>]*>([^<]+)</text>', html)
    assert len(labels) >= 4, labels
    assert all(re.fullmatch(r"(?:\d\d-\d\d )?\d\d:\d\d(?::\d\d)?", x) for x in labels), labels


def test_small_frames_read_as_python_values_give_the_report_queries_give(ruleset, monkeypatch):
    """The later stages read a frame of a few rows as Python values (`READ_WHOLE_ROWS`: a query
    costs a small run more than its work) and a bigger one by polars queries: every sample's
    report, its timeline rows and episodes among it, is the same both ways."""
    from analyzer import timeline
    from analyzer.analyze import load_bundle, node_timelines
    from analyzer.facts import matches, workloads
    from analyzer.render.jsonout import render_json
    from analyzer.report import build

    def reports() -> list[str]:
        options = AnalyzeOptions(ruleset=ruleset)
        return [render_json(analyze([str(s / "bundle")], options).report) for s in SAMPLE_DIRS]

    def timelines() -> list[tuple[str, pl.DataFrame, tuple]]:
        bundles = [load_bundle([str(s / "bundle")], ruleset) for s in SAMPLE_DIRS]
        return [
            (name, t.frame, t.episodes) for b in bundles for name, t in node_timelines(b, ruleset)
        ]

    as_values, frames = reports(), timelines()
    for module in (timeline, matches, build, workloads):
        monkeypatch.setattr(module, "READ_WHOLE_ROWS", -1)
    assert reports() == as_values
    by_queries = timelines()
    assert [(n, e) for n, _f, e in by_queries] == [(n, e) for n, _f, e in frames]
    assert all(
        a.equals(b) and a.schema == b.schema
        for (_, a, _), (_, b, _) in zip(frames, by_queries, strict=True)
    )
    assert any('"timeline": [\n' in x and '"episodes": [\n' in x for x in as_values)
