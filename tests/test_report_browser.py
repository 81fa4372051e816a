"""The report in a real browser (headless Chromium): opened from file://, no console errors,
no network requests, the verdict in the first viewport, hostile content inert. Screenshots are
written to test-artifacts/ for a human to look at."""

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
    "window.addEventListener('load',function(){var v=document.getElementById('verdict').getBoundingClientRect();"
    "out.verdictBottom=v.bottom;out.viewport=window.innerHeight;"
    "out.resources=performance.getEntriesByType('resource').map(function(r){return r.name;});"
    "out.title=document.title;out.pwned=document.body.dataset.pwned||null;"
    "out.copyButtons=document.querySelectorAll('[data-copy]:not([hidden])').length;"
    "document.documentElement.setAttribute('data-probe',JSON.stringify(out));});})();"
)
SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "expected.yaml").is_file())


def _with_probe(page: str, keep_csp: bool = True) -> str:
    digest = base64.b64encode(hashlib.sha256(PROBE.encode()).digest()).decode()
    if keep_csp:
        page = page.replace("script-src '", f"script-src 'sha256-{digest}' '", 1)
    else:
        page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    return page.replace(
        '<meta charset="utf-8">', f'<meta charset="utf-8"><script>{PROBE}</script>', 1
    )


def _run(path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *FLAGS, *extra, f"file://{path}"], capture_output=True, text=True, timeout=120
    )


def _probe(tmp_path, page: str, keep_csp: bool = True) -> dict:
    f = tmp_path / "probe.html"
    f.write_text(_with_probe(page, keep_csp), encoding="utf-8")
    res = _run(f, "--window-size=1280,800", "--virtual-time-budget=3000", "--dump-dom")
    m = re.search(r'data-probe="([^"]*)"', res.stdout)
    assert m, f"probe did not report: {res.stderr[-500:]}"
    return json.loads(htmlmod.unescape(m.group(1)))


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_report_in_browser(tmp_path, ruleset, sample):
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    page = render_html(report)
    page_file = tmp_path / "report.html"
    page_file.write_text(page, encoding="utf-8")
    out = _probe(tmp_path, page)
    assert out["errors"] == [] and out["csp"] == [], out
    assert out["resources"] == [], "the report loaded something"
    assert out["verdictBottom"] <= out["viewport"], "verdict not in the first viewport"
    assert out["dialogs"] == 0 and out["pwned"] is None and "PWNED" not in out["title"]
    faults = report.worst.faults()
    if faults and any(s.command for s in faults[0].remediation):
        assert out["copyButtons"] > 0, "our own script (allowed by its CSP hash) did not run"
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{sample.name}.png"
    _run(page_file, "--window-size=1280,900", f"--screenshot={shot}")
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_hostile_bundle_inert_even_without_csp(tmp_path, ruleset):
    """Escaping alone must keep the XSS sample inert; the CSP is a second wall."""
    report = analyze(
        [str(SAMPLES / "xss-hostile" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    out = _probe(tmp_path, render_html(report), keep_csp=False)
    assert out["dialogs"] == 0 and out["pwned"] is None and "PWNED" not in out["title"]
    assert out["resources"] == []


def test_phone_width_screenshot(tmp_path, ruleset):
    report = analyze(
        [str(SAMPLES / "annotation-health-omitted" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(report), encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "phone-annotation-health-omitted.png"
    _run(page_file, "--window-size=390,844", f"--screenshot={shot}")
    assert shot.is_file()
