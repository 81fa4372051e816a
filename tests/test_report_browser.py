"""The report in a real browser (headless Chromium): opened from file://, no console errors,
no network requests, the verdict in the first viewport, hostile content inert, and at a phone's
390 px and a desktop's 1280 px nothing wider than the viewport and no checked boxes overlapping
(the copy button over its command, the link boxes, a section's blocks, the timeline's labels).
Screenshots at both widths are written to test-artifacts/ for a human to look at."""

from __future__ import annotations

import base64
import hashlib
import html as htmlmod
import json
import re
import shutil
import subprocess

import pytest

from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.render.html import render_html
from conftest import REPO, SAMPLES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not installed (apt-get install chromium; .ci/run installs it)",
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--no-pings",
    # nothing leaves this machine: every host name fails to resolve
    "--host-resolver-rules=MAP * ~NOTFOUND",
]
ARTIFACTS = REPO / "test-artifacts"
PROBE = (
    "(function(){var out={errors:[],csp:[],dialogs:0};"
    "window.alert=window.confirm=window.prompt=function(){out.dialogs++;};"
    "window.addEventListener('error',function(e){out.errors.push(String(e.message));});"
    "document.addEventListener('securitypolicyviolation',function(e){out.csp.push(e.violatedDirective+' '+e.blockedURI);});"
    "window.addEventListener('load',function(){var v=document.getElementById('verdict');"
    "out.verdictBottom=v?v.getBoundingClientRect().bottom:null;out.viewport=window.innerHeight;"
    "out.resources=performance.getEntriesByType('resource').map(function(r){return r.name;});"
    "out.title=document.title;out.pwned=document.body.dataset.pwned||null;"
    "out.copyButtons=document.querySelectorAll('[data-copy]:not([hidden])').length;"
    "out.layout=window.__layout();"
    "document.documentElement.setAttribute('data-probe',JSON.stringify(out));"
    "if(window.parent!==window){window.parent.postMessage(JSON.stringify(out),'*');}});})();"
)
PHONE = 390  # CSS px; headless Chromium's window is at least 500 wide, so a phone is an iframe
# the page a phone-sized report is opened in: the report's probe posts its result up here
FRAME = (
    '<!doctype html><html><body style="margin:0"><iframe src="{src}" title="report" '
    'style="width:{width}px;height:844px;border:0"></iframe><script>'
    "window.addEventListener('message',function(e){{"
    "document.documentElement.setAttribute('data-probe',e.data);}});</script></body></html>"
)
# Layout checks, run in the page: what sticks out of the viewport (outside the boxes that scroll
# sideways on purpose), and which of the checked boxes overlap.
LAYOUT = """
window.__layout = function () {
  function name(e) {
    return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
      (e.className && e.className.baseVal === undefined && e.className ? '.' + e.className.split(' ')[0] : '') +
      ' "' + (e.textContent || '').trim().slice(0, 40) + '"';
  }
  function meet(a, b) {
    return a.width > 0 && b.width > 0 && a.left < b.right - 1 && b.left < a.right - 1 &&
      a.top < b.bottom - 1 && b.top < a.bottom - 1;
  }
  function rect(e) { return e.getBoundingClientRect(); }
  var view = document.documentElement.clientWidth, out = {view: view,
    page: document.documentElement.scrollWidth, wide: [], overlaps: []};
  document.querySelectorAll('body *').forEach(function (e) {
    var p = e.parentElement;
    if (p && p.closest('.scroll, pre, svg, details:not([open])')) return;
    var r = rect(e);
    if (r.width > 0 && (r.right > view + 1 || r.left < -1)) out.wide.push(name(e));
  });
  // text can run out of its box without the box growing: measure the text itself
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), t, range = document.createRange();
  while ((t = walk.nextNode())) {
    var host = t.parentElement;
    if (!t.textContent.trim() || !host || host.closest('.scroll, pre, svg, details:not([open]), script, [hidden]')) continue;
    range.selectNodeContents(t);
    var tr = range.getBoundingClientRect();
    if (tr.width > 0 && tr.right > view + 1) out.wide.push('text in ' + name(host));
  }
  function pairs(list, why) {
    for (var i = 0; i < list.length; i++) for (var j = i + 1; j < list.length; j++)
      if (meet(rect(list[i]), rect(list[j]))) out.overlaps.push(why + ': ' + name(list[i]) + ' / ' + name(list[j]));
  }
  document.querySelectorAll('[data-copy]:not([hidden])').forEach(function (b) {
    var pre = document.getElementById(b.getAttribute('data-copy')), range = document.createRange();
    range.selectNodeContents(pre);
    var box = rect(b);
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (meet(box, r)) out.overlaps.push('copy button over its command: ' + name(pre));
    });
  });
  pairs(document.querySelectorAll('.chain > .link'), 'link boxes');
  document.querySelectorAll('header, section, article, .consequences').forEach(function (s) {
    pairs(Array.prototype.filter.call(s.children, function (c) {
      return getComputedStyle(c).display !== 'none' && c.tagName !== 'SCRIPT';
    }), 'blocks of ' + name(s));
  });
  document.querySelectorAll('svg').forEach(function (svg) {
    pairs(svg.querySelectorAll('text'), 'labels of ' + name(svg));
  });
  return out;
};
"""
SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "expected.yaml").is_file())


def _with_probe(page: str, keep_csp: bool = True) -> str:
    script = LAYOUT + PROBE
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    if keep_csp and "script-src '" in page:
        page = page.replace("script-src '", f"script-src 'sha256-{digest}' '", 1)
    elif keep_csp:  # a page with no script of its own (the batch summary)
        page = page.replace(
            "default-src 'none';", f"default-src 'none'; script-src 'sha256-{digest}';", 1
        )
    else:
        page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    return page.replace(
        '<meta charset="utf-8">', f'<meta charset="utf-8"><script>{script}</script>', 1
    )


def _run(path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *FLAGS, *extra, f"file://{path}"], capture_output=True, text=True, timeout=120
    )


def _probe(tmp_path, page: str, keep_csp: bool = True, width: int = 1280, shot=None) -> dict:
    """Open the page at `width` px, run the probe (and take a screenshot when `shot` names one)."""
    f = tmp_path / f"probe-{width}.html"
    f.write_text(_with_probe(page, keep_csp), encoding="utf-8")
    extra = [f"--screenshot={shot}"] if shot else []
    window = f"--window-size={width},800"
    if width < 500:
        frame = tmp_path / f"frame-{width}.html"
        frame.write_text(FRAME.format(src=f.name, width=width), encoding="utf-8")
        f, window = frame, "--window-size=500,860"
    res = _run(f, window, "--virtual-time-budget=3000", "--dump-dom", *extra)
    m = re.search(r'data-probe="([^"]*)"', res.stdout)
    assert m, f"probe did not report: {res.stderr[-500:]}"
    return json.loads(htmlmod.unescape(m.group(1)))


def _assert_layout(layout: dict, where: str) -> None:
    assert layout["page"] <= layout["view"], f"{where}: the page scrolls sideways"
    assert layout["wide"] == [], f"{where}: wider than the viewport: {layout['wide'][:5]}"
    assert layout["overlaps"] == [], f"{where}: overlapping: {layout['overlaps'][:5]}"


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_report_in_browser(tmp_path, ruleset, sample):
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    page = render_html(report)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{sample.name}.png"
    out = _probe(tmp_path, page, shot=shot)
    assert out["errors"] == [] and out["csp"] == [], out
    assert out["resources"] == [], "the report loaded something"
    assert out["verdictBottom"] <= out["viewport"], "verdict not in the first viewport"
    assert out["dialogs"] == 0 and out["pwned"] is None and "PWNED" not in out["title"]
    faults = report.worst.faults()
    if faults and any(s.command for s in faults[0].remediation):
        assert out["copyButtons"] > 0, "our own script (allowed by its CSP hash) did not run"
    assert shot.is_file() and shot.stat().st_size > 10_000
    _assert_layout(out["layout"], "1280 px")
    phone_shot = ARTIFACTS / f"phone-{sample.name}.png"
    phone = _probe(tmp_path, page, width=PHONE, shot=phone_shot)
    assert phone["errors"] == [] and phone["layout"]["view"] <= PHONE
    _assert_layout(phone["layout"], "390 px")
    assert phone_shot.is_file()


def test_hostile_bundle_inert_even_without_csp(tmp_path, ruleset):
    """Escaping alone must keep the XSS sample inert; the CSP is a second wall."""
    report = analyze(
        [str(SAMPLES / "xss-hostile" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    out = _probe(tmp_path, render_html(report), keep_csp=False)
    assert out["dialogs"] == 0 and out["pwned"] is None and "PWNED" not in out["title"]
    assert out["resources"] == []


def test_layout_check_finds_overflow_and_a_covered_command(tmp_path, ruleset):
    """The layout probe itself: a page that scrolls sideways and a copy button moved over its
    command are both reported (so a clean result above means something)."""
    report = analyze(
        [str(SAMPLES / "annotation-health-omitted" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    page = render_html(report).replace(
        "</style>",
        "#verdict{min-width:900px}.cmd pre{padding-right:10px !important}"
        ".cmd button{position:absolute !important;left:12px;top:8px}</style>",
        1,
    )
    layout = _probe(tmp_path, page, width=PHONE)["layout"]
    assert layout["page"] > layout["view"]
    assert any("verdict" in w for w in layout["wide"])
    assert any(o.startswith("copy button over its command") for o in layout["overlaps"])
