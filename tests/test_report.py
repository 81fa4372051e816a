"""HTML report: structure parsed from the page, and inertness of hostile bundle content."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
import yaml

from analyzer.analyze import analyze
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
    _, report = analyze([str(sample / "bundle")], ruleset)
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
