"""The batch summary answers questions: grids with an 'unknown'/'undated' column, every count a
link to its tickets, duplicates by content, undated and unversioned tickets listed with the clue
they lacked, and `--reports` writing each ticket's report next to the tables.

The expected numbers come from the samples' own expected.yaml (categories) and from what each
sample holds (a Node object with heartbeats dates a bundle; a lone device-plugin log does not).
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import polars as pl
import pytest
from typer.testing import CliRunner

from analyzer.cli import app
from analyzer.summary import grids, lists, plots, trends
from conftest import SAMPLES

runner = CliRunner()
HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">'


def _files(sample: str) -> list[Path]:
    return sorted((SAMPLES / sample / "bundle").iterdir())


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory) -> Path:
    """T-100 healthy, T-101 RBAC, T-102/T-103 the RBAC files re-packed (tar.gz, zip with other
    member times), T-104 a byte copy of T-100, T-105 a lone device-plugin log (undated,
    unversioned), T-106 the archive T-102 under another name, and a ticket whose name is markup
    (no GPU label)."""
    root = tmp_path_factory.mktemp("tickets")
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", root / "T-100")
    shutil.copytree(SAMPLES / "rbac-patch-forbidden" / "bundle", root / "T-101")
    with tarfile.open(root / "T-102.tgz", "w:gz") as tf:
        for f in _files("rbac-patch-forbidden"):
            info = tf.gettarinfo(str(f), arcname=f"logs/{f.name}")
            info.mtime = 1_500_000_000
            with f.open("rb") as fh:
                tf.addfile(info, fh)
    with zipfile.ZipFile(root / "T-103.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for f in _files("rbac-patch-forbidden"):
            zf.writestr(zipfile.ZipInfo(f"x/{f.name}", (2019, 3, 4, 5, 6, 8)), f.read_bytes())
    shutil.copytree(root / "T-100", root / "T-104")
    shutil.copy(root / "T-102.tgz", root / "T-106.tgz")
    shutil.copytree(SAMPLES / "runtime-runc-default" / "bundle", root / "T-105")
    (root / "T-105" / "containerd-config.toml").unlink()
    shutil.copytree(SAMPLES / "no-gpu-label" / "bundle", root / HOSTILE)
    out = tmp_path_factory.mktemp("out")
    res = runner.invoke(app, ["batch", str(root), "--out", str(out), "--jobs", "2", "--reports"])
    assert res.exit_code == 0, res.output
    return out


def _bundles(out: Path) -> dict[str, dict]:
    return {r["ticket"]: r for r in pl.read_parquet(out / "bundles.parquet").to_dicts()}


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.stack: list[str] = []
        self.grid_headers: dict[str, list[str]] = {}
        self._grid: str | None = None
        self._th = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if tag == "table" and "data-grid" in a:
            self._grid = a["data-grid"]
            self.grid_headers[self._grid] = []
        self._th = tag == "th" and self._grid is not None

    def handle_endtag(self, tag):
        if tag == "tr" and self._grid:
            self._grid = None if self.grid_headers[self._grid] else self._grid
        self._th = False

    def handle_data(self, data):
        if self._th and self._grid:
            self.grid_headers[self._grid].append(data)


def _page(out: Path) -> tuple[str, _Links]:
    html = (out / "summary.html").read_text(encoding="utf-8")
    p = _Links()
    p.feed(html)
    return html, p


def test_tickets_and_duplicates_by_content(batch_out):
    b = _bundles(batch_out)
    assert set(b) == {"T-100", "T-101", "T-102", "T-103", "T-104", "T-105", "T-106", HOSTILE}
    ids = {r["id"]: t for t, r in b.items()}
    dup = {t: ids[r["duplicate_of"]] for t, r in b.items() if r["duplicate_of"]}
    assert dup == {"T-102": "T-101", "T-103": "T-101", "T-104": "T-100", "T-106": "T-101"}
    # the same archive under another name is skipped before analysis (no duration)
    assert b["T-106"]["digest"] == b["T-102"]["digest"] and b["T-106"]["duration_s"] is None
    assert (
        b["T-102"]["content_digest"] == b["T-101"]["content_digest"] != b["T-100"]["content_digest"]
    )
    assert b["T-102"]["digest"] != b["T-101"]["digest"]  # not the same bytes: found by content
    assert b["T-103"]["category"] == "rbac-patch-forbidden"  # a copy carries the verdict
    how = {
        d.ticket: d.how for d in lists.duplicates(pl.read_parquet(batch_out / "bundles.parquet"))
    }
    assert how["T-104"] == "identical bytes" and how["T-102"].startswith("same files")
    findings = pl.read_parquet(batch_out / "findings.parquet")
    counted = set(findings.filter(pl.col("rule_id") == "rbac-patch-forbidden")["bundle_id"])
    assert counted == {b["T-101"]["id"]}, "a copy's findings would count the ticket twice"


def test_undated_and_unversioned_reasons(batch_out):
    b = _bundles(batch_out)
    lone = b["T-105"]
    assert lone["collected_at"] is None and lone["hami_version"] is None
    assert lone["undated_reason"].startswith("log times without a year")
    assert "no register annotation or handshake" in lone["unversioned_reason"]
    report = (batch_out / lone["report"]).read_text()  # the ticket's report says it too
    assert f"missing: {lone['undated_reason']}" in report
    for t in ("T-100", "T-101", HOSTILE):  # a Node object's heartbeats date the bundle
        assert b[t]["collected_at"] is not None and b[t]["undated_reason"] is None
    assert b["T-100"]["hami_version"] and b["T-100"]["unversioned_reason"] is None
    html, _ = _page(batch_out)
    assert "log times without a year" in html and "no register annotation or handshake" in html
    assert 'id="undated"' in html and 'id="unversioned"' in html


def test_grids_keep_unknown_and_undated_columns(batch_out):
    _, page = _page(batch_out)
    assert page.grid_headers["cm"][-2:] == ["undated", "all"]
    assert page.grid_headers["cm"][1] == "2026-08"
    assert page.grid_headers["cv"][-2:] == ["unknown", "all"]
    assert page.grid_headers["rm"][-2:] == ["undated", "all"]


def test_grid_counts(batch_out):
    tickets = grids.ticket_frame(pl.read_parquet(batch_out / "bundles.parquet"))
    g = grids.category_grid(tickets, "month", "cm", "t")
    cells = {
        (r.label, c): cell.count
        for r in g.rows
        for c, cell in zip(g.columns, r.cells, strict=True)
        if cell.count
    }
    assert g.columns == ("2026-08", "undated")
    assert cells == {
        ("healthy", "2026-08"): 1,
        ("rbac-patch-forbidden", "2026-08"): 1,
        ("no-device-plugin-pod", "2026-08"): 1,
        ("plugin-crash-nvml", "undated"): 1,
    }
    assert g.total.count == 4 and [t.count for t in g.totals] == [3, 1]


def test_links_resolve_and_reports_written(batch_out):
    b = _bundles(batch_out)
    _, page = _page(batch_out)
    local = [h for h in page.hrefs if h.startswith("#")]
    assert local and all(h[1:] in page.ids for h in local), "a count links to no section"
    reports = [h for h in page.hrefs if not h.startswith("#")]
    assert reports, "no ticket links to its report"
    for h in reports:
        assert h.startswith("reports/") and (batch_out / unquote(h)).is_file(), h
    for t in ("T-100", "T-101", "T-105", HOSTILE):  # every analysed ticket has its report
        assert (batch_out / b[t]["report"]).is_file()
    hostile = b[HOSTILE]["report"]
    assert "<" not in hostile and '"' not in hostile and hostile.startswith("reports/")
    assert "rbac-patch-forbidden" in (batch_out / b["T-101"]["report"]).read_text()


def test_hostile_ticket_name_is_escaped(batch_out):
    html, _ = _page(batch_out)
    assert HOSTILE not in html and "&lt;img src=x onerror=" in html


def _pairs(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["id", "row", "col"], orient="row")


def test_grid_share_totals_and_trend_from_a_hand_made_batch():
    """July: 2 rbac, 1 healthy; August: 1 rbac, 3 plugin-crash-nvml."""
    rows = [("a", "rbac", "2026-07"), ("b", "rbac", "2026-07"), ("c", "healthy", "2026-07")]
    rows += [("d", "rbac", "2026-08")] + [(x, "nvml", "2026-08") for x in "efg"]
    g = grids.build_grid(_pairs(rows), "k", "t", "category", ["2026-07", "2026-08", "undated"], 7)
    by_label = {r.label: r for r in g.rows}
    assert [r.label for r in g.rows] == ["nvml", "rbac", "healthy"]  # by bundles, then name
    assert by_label["rbac"].cells[0].count == 2 and by_label["rbac"].cells[0].share == 2 / 7
    assert [c.count for c in g.totals] == [3, 4, 0] and g.totals[2].anchor is None
    drill = {d.anchor: d for d in g.drills}
    assert drill[by_label["nvml"].cells[1].anchor].ids == ("e", "f", "g")
    t = trends.trends(g)
    assert (t.before, t.after) == ("2026-07", "2026-08")
    # a trend is of faults: the healthy bundle of July is no row of it
    assert [(r.label, r.before, r.after) for r in t.rows] == [("nvml", 0, 3), ("rbac", 2, 1)]
    assert t.empty == ()
    assert t.rows[0].after_share == 3 / 4
    plot = plots.stacked_bars(g)
    heights = [sum(s.height for s in bar.segments) for bar in plot.bars]
    assert heights[1] > heights[0] > 0 and heights[2] == 0  # August's bar is the tallest


def test_rule_grid_counts_bundles_not_findings():
    tickets = pl.DataFrame({"id": ["a", "b"], "month": ["2026-08", "undated"]})
    findings = pl.DataFrame(
        {
            "bundle_id": ["a", "a", "b", "b"],
            "rule_id": ["r1", "r1", "r1", "ok-rule"],
            "kind": ["fault", "fault", "fault", "ok"],
        }
    )
    g = grids.rule_grid(tickets, findings)
    assert [r.label for r in g.rows] == ["r1"]  # the 'link intact' oks are not rules that fired
    assert [c.count for c in g.rows[0].cells] == [1, 1] and g.rows[0].total.count == 2


def test_summary_only_on_tables_without_the_new_columns(batch_out, tmp_path):
    """Tables written before these columns existed still render (as unknown, not a crash)."""
    old = pl.read_parquet(batch_out / "bundles.parquet").drop(
        "ticket", "content_digest", "undated_reason", "unversioned_reason", "report"
    )
    old.write_parquet(tmp_path / "bundles.parquet")
    for name in ("findings", "unexplained"):
        shutil.copy(batch_out / f"{name}.parquet", tmp_path / f"{name}.parquet")
    res = runner.invoke(app, ["batch", "--summary-only", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "Primary category by HAMi release" in (tmp_path / "summary.html").read_text()


def test_reports_unsafe_column_is_not_linked(batch_out, tmp_path):
    frame = pl.read_parquet(batch_out / "bundles.parquet").with_columns(
        pl.lit("javascript:alert(1)").alias("report")
    )
    frame.write_parquet(tmp_path / "bundles.parquet")
    for name in ("findings", "unexplained"):
        shutil.copy(batch_out / f"{name}.parquet", tmp_path / f"{name}.parquet")
    assert runner.invoke(app, ["batch", "--summary-only", str(tmp_path)]).exit_code == 0
    assert "javascript:" not in (tmp_path / "summary.html").read_text()


def test_content_digest_ignores_names_and_container(tmp_path, ruleset):
    from analyzer.analyze import load_bundle

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for f in _files("healthy-single-gpu"):
            tf.add(str(f), arcname=f"renamed-{f.name}")
    (tmp_path / "a.tar.gz").write_bytes(buf.getvalue())

    def digest(path) -> str:
        return load_bundle([str(path)], ruleset, content=True).content_digest

    folder = digest(SAMPLES / "healthy-single-gpu" / "bundle")
    archive = digest(tmp_path / "a.tar.gz")
    other = digest(SAMPLES / "rbac-patch-forbidden" / "bundle")
    assert folder == archive != other and len(folder) == 64


SUMMARY_PROBE = (
    "(function(){var out={dialogs:0,errors:[],csp:[]};"
    "window.alert=window.confirm=window.prompt=function(){out.dialogs++;};"
    "window.addEventListener('error',function(e){out.errors.push(String(e.message));});"
    "document.addEventListener('securitypolicyviolation',function(e){out.csp.push(e.violatedDirective);});"
    "window.addEventListener('load',function(){"
    "var segs=[].slice.call(document.querySelectorAll('figure.plot rect.seg'));"
    "out.plots=document.querySelectorAll('figure.plot svg').length;out.segments=segs.length;"
    "out.drawn=segs.filter(function(r){var b=r.getBoundingClientRect();return b.width>0&&b.height>0;}).length;"
    "var links=[].slice.call(document.querySelectorAll('a[href]'));out.links=links.length;"
    "out.broken=links.filter(function(a){var h=a.getAttribute('href');"
    "return h.charAt(0)==='#'&&!document.getElementById(h.slice(1));}).map(function(a){return a.getAttribute('href');});"
    "out.reports=links.filter(function(a){return a.getAttribute('href').charAt(0)!=='#';}).map(function(a){return a.href;});"
    "var cell=document.querySelector('table.grid td a');cell.click();"
    "var t=document.querySelector(':target');out.clicked=cell.getAttribute('href');out.target=t?t.id:null;"
    "out.targetRows=t?t.querySelectorAll('tr').length-1:0;"
    "out.pwned=document.body.dataset.pwned||null;out.images=document.images.length;"
    "out.hostileText=document.body.textContent.indexOf('<img src=x onerror=')>=0;"
    "out.resources=performance.getEntriesByType('resource').map(function(r){return r.name;});"
    "document.documentElement.setAttribute('data-probe',JSON.stringify(out));});})();"
)


def _browser_probe(batch_out: Path, keep_csp: bool) -> dict:
    """Load summary.html with the probe (allowed by its hash when the CSP is kept)."""
    import base64
    import hashlib
    import html as htmlmod
    import json
    import re

    from test_report_browser import _run

    page = (batch_out / "summary.html").read_text(encoding="utf-8")
    if keep_csp:
        digest = base64.b64encode(hashlib.sha256(SUMMARY_PROBE.encode()).digest()).decode()
        page = page.replace(
            "default-src 'none';", f"default-src 'none'; script-src 'sha256-{digest}';", 1
        )
    else:
        page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    page = page.replace(
        '<meta charset="utf-8">', f'<meta charset="utf-8"><script>{SUMMARY_PROBE}</script>', 1
    )
    probe = batch_out / "probe.html"  # beside the tables, so that reports/ links resolve
    probe.write_text(page, encoding="utf-8")
    try:
        res = _run(probe, "--window-size=1280,900", "--virtual-time-budget=3000", "--dump-dom")
    finally:
        probe.unlink()
    m = re.search(r'data-probe="([^"]*)"', res.stdout)
    assert m, f"probe did not report: {res.stderr[-500:]}"
    return json.loads(htmlmod.unescape(m.group(1)))


def test_summary_in_browser(batch_out):
    """Headless Chromium: the plots draw bars, every anchor has its section, a click on a count
    opens its tickets, report links open a report, nothing breaks the CSP, and the markup in a
    ticket name stays text (also with the CSP removed: escaping alone must hold)."""
    from test_report_browser import ARTIFACTS, CHROMIUM, _run

    if CHROMIUM is None:
        pytest.skip("chromium not installed (apt-get install chromium; .ci/run installs it)")
    assert _browser_probe(batch_out, keep_csp=True)["csp"] == []
    out = _browser_probe(batch_out, keep_csp=False)
    assert out["errors"] == [] and out["resources"] == [], out
    assert out["plots"] == 2 and out["segments"] >= 4 and out["drawn"] == out["segments"], out
    assert out["links"] > 20 and out["broken"] == [], out
    assert out["target"] == out["clicked"][1:] and out["targetRows"] >= 1, out
    assert out["dialogs"] == 0 and out["pwned"] is None and out["images"] == 0
    assert out["hostileText"], "the ticket name should be shown as text"
    assert out["reports"] and all(u.startswith("file://") for u in out["reports"])
    first = Path(unquote(out["reports"][0][len("file://") :]))
    assert first.is_file() and first.parent == batch_out / "reports"
    opened = _run(first, "--virtual-time-budget=2000", "--dump-dom")
    assert 'id="verdict"' in opened.stdout
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "batch-summary.png"
    _run(batch_out / "summary.html", "--window-size=1280,2400", f"--screenshot={shot}")
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_a_copy_of_a_copy_points_at_the_analysed_bundle():
    """B holds A's files re-packed (found by content after analysis); C is B byte for byte
    (skipped before analysis, pointing at B): both end up copies of A, with A's verdict."""
    from analyzer.batch.run import BUNDLE_SCHEMA, _content_duplicates, _fill_duplicates, _frame

    rows = [
        {"id": "A", "digest": "d1", "content_digest": "c", "category": "rbac-patch-forbidden"},
        {"id": "B", "digest": "d2", "content_digest": "c", "category": "rbac-patch-forbidden"},
        {"id": "C", "digest": "d2", "duplicate_of": "B"},
        {"id": "D", "digest": "d3", "content_digest": "other", "category": "healthy"},
        {"id": "E", "digest": "d4", "error": "corrupt gzip archive"},
    ]
    frame = _fill_duplicates(_content_duplicates(_frame(rows, BUNDLE_SCHEMA)))
    got = {r["id"]: (r["duplicate_of"], r["category"]) for r in frame.to_dicts()}
    assert got == {
        "A": (None, "rbac-patch-forbidden"),
        "B": ("A", "rbac-patch-forbidden"),
        "C": ("A", "rbac-patch-forbidden"),
        "D": (None, "healthy"),
        "E": (None, None),
    }


def test_resume_over_parts_of_an_older_version(tmp_path):
    """Parts written before the new columns existed are read with those columns empty."""
    root = tmp_path / "t"
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", root / "T-100")
    out = tmp_path / "o"
    assert runner.invoke(app, ["batch", str(root), "--out", str(out), "--jobs", "1"]).exit_code == 0
    new = ["ticket", "content_digest", "undated_reason", "unversioned_reason", "report"]
    (part,) = (out / "parts").glob("bundles-*.parquet")
    pl.read_parquet(part).drop(new).write_parquet(part)
    shutil.copytree(SAMPLES / "rbac-patch-forbidden" / "bundle", root / "T-101")
    res = runner.invoke(app, ["batch", str(root), "--out", str(out), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    b = {Path(r["id"]).name: r for r in pl.read_parquet(out / "bundles.parquet").to_dicts()}
    assert b["T-100"]["ticket"] is None and b["T-100"]["category"] == "healthy"
    assert b["T-101"]["ticket"] == "T-101" and b["T-101"]["content_digest"]


def test_trend_says_which_months_had_no_bundles():
    """May against August, nothing dated in between: the comparison names the empty months."""
    rows = [("a", "rbac", "2026-05"), ("b", "nvml", "2026-08"), ("c", "nvml", "2026-08")]
    g = grids.build_grid(_pairs(rows), "k", "t", "category", ["2026-05", "2026-08"], 3)
    t = trends.trends(g)
    assert (t.before, t.after, t.empty) == ("2026-05", "2026-08", ("2026-06", "2026-07"))
    assert grids.missing_months(["2026-05", "2026-08", "undated"]) == ["2026-06", "2026-07"]


def test_version_columns_are_hami_releases():
    """Thirteen overlapping ranges become one column per release line, each bundle in exactly
    one (the oldest release its clues allow), in release order, 'unknown' last."""
    versions = [">=v2.5.0,<v2.8.0", "v2.8.1", ">=v2.8.0", ">=v2.9.0", "v2.10.0", ">=v2.10.0"]
    versions += ["<v2.8.0", "unknown", ">=v2.4.0", "v2.4.1", ">=v2.5.0", "v2.9.2", ">=v2.10.1"]
    tickets = pl.DataFrame(
        {"id": [f"b{i}" for i in range(len(versions))], "category": ["x"] * len(versions)}
    ).with_columns(pl.Series("release", [grids.release_of(v) for v in versions], dtype=pl.String))
    g = grids.category_grid(tickets, "release", "cv", "t")
    assert g.columns == ("before v2.8", "v2.4", "v2.5", "v2.8", "v2.9", "v2.10", "unknown")
    assert g.total.count == len(versions) == sum(c.count for c in g.totals)


def test_summary_has_contents_and_release_columns(batch_out):
    html, page = _page(batch_out)
    toc = html[html.index('<nav class="toc"') : html.index("</nav>")]
    targets = [h[1:] for h in re.findall(r'href="(#[^"]+)"', toc)]
    assert len(targets) >= 12 and all(t in page.ids for t in targets), targets
    releases = page.grid_headers["cv"][1:-2]  # between the row name and unknown, all
    assert releases and all(re.fullmatch(r"v\d+\.\d+", r) for r in releases), releases
    assert releases == grids.release_order(releases)[:-1]
    assert "Faults by collection month" in html


def test_ticket_metadata_gives_a_per_customer_view(batch_out, tmp_path):
    """`--tickets CSV` joins customer and opened-at to the bundles by ticket name: a customer
    table whose counts open their tickets; a CSV without a ticket column is a usage error."""
    for name in ("bundles", "findings", "unexplained"):
        shutil.copy(batch_out / f"{name}.parquet", tmp_path / f"{name}.parquet")
    csv = tmp_path / "tickets.csv"
    csv.write_text(
        "Ticket,Customer,Opened At,Priority\n"
        "T-100,Acme,2026-08-01,P3\nT-101,Acme,2026-08-03,P1\nT-105,Globex,2026-07-30,P2\n"
        "T-999,Initech,2026-08-09,P2\n"
    )
    res = runner.invoke(app, ["batch", "--summary-only", str(tmp_path), "--tickets", str(csv)])
    assert res.exit_code == 0, res.output
    html, page = _page(tmp_path)
    table = html[
        html.index('id="customer-table"') : html.index(
            "</table>", html.index('id="customer-table"')
        )
    ]
    rows = re.findall(r"<tr><td>([^<]+)</td><td class=\"n\"><a href=\"#([^\"]+)\">(\d+)</a>", table)
    counts = {name: int(n) for name, _a, n in rows}
    assert counts == {"Acme": 2, "Globex": 1, "(no ticket metadata)": 1}, counts
    assert all(a in page.ids for _n, a, _c in rows)
    assert "2026-08-01 – 2026-08-03" in table
    assert "3 tickets of the CSV matched a bundle, 1 did not" in " ".join(html.split())
    # --summary-only again without --tickets keeps the metadata (stored beside the tables)
    assert runner.invoke(app, ["batch", "--summary-only", str(tmp_path)]).exit_code == 0
    assert 'id="customer-table"' in (tmp_path / "summary.html").read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text("customer,opened\nAcme,2026-08-01\n")
    res = runner.invoke(app, ["batch", "--summary-only", str(tmp_path), "--tickets", str(bad)])
    assert res.exit_code == 2 and "no ticket column" in res.output


@pytest.mark.parametrize("width", [390, 1280])
def test_summary_layout_in_browser(batch_out, tmp_path, width):
    """At a phone's and a desktop's width nothing sticks out of the page (wide grids scroll in
    their own box) and no checked boxes overlap, the table of contents and the customer table
    included; the screenshots are in test-artifacts/."""
    from test_report_browser import ARTIFACTS, CHROMIUM, _assert_layout, _probe

    if CHROMIUM is None:
        pytest.skip("chromium not installed (apt-get install chromium; .ci/run installs it)")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("bundles", "findings", "unexplained"):
        shutil.copy(batch_out / f"{name}.parquet", out / f"{name}.parquet")
    csv = tmp_path / "tickets.csv"
    csv.write_text("ticket,customer,opened_at\nT-100,Acme,2026-08-01\nT-101,Globex,2026-08-02\n")
    res = runner.invoke(app, ["batch", "--summary-only", str(out), "--tickets", str(csv)])
    assert res.exit_code == 0, res.output
    page = (out / "summary.html").read_text(encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"batch-summary-{width}.png"
    probe = _probe(tmp_path, page, width=width, shot=shot)
    assert probe["errors"] == [] and probe["csp"] == [], probe
    _assert_layout(probe["layout"], f"{width} px")
    assert shot.is_file()


def _never_fired(html: str) -> set[str]:
    section = html.split('<h2 id="never">', 1)[1].split("</p>", 1)[0]
    return set(re.findall(r"<code>([^<]+)</code>", section))


def test_the_rules_that_never_fired_are_every_rule_but_those_that_did(batch_out, ruleset):
    """The rules' ids come from a thread the run starts while its workers analyse."""
    fired = set(pl.read_parquet(batch_out / "findings.parquet")["rule_id"].drop_nulls())
    never = _never_fired((batch_out / "summary.html").read_text())
    assert fired and never
    assert never == set(ruleset.rules) - fired


def test_a_summary_whose_preparation_failed_is_made_all_the_same(batch_out, tmp_path, monkeypatch):
    from analyzer.batch import run as batch_run
    from analyzer.render import summary as summary_mod

    def broken() -> None:
        raise OSError("no cache folder today")

    monkeypatch.setattr(summary_mod, "prepare", broken)
    assert batch_run._prepared_summary()() is None
    out = tmp_path / "again"
    shutil.copytree(batch_out, out)
    (out / "summary.html").unlink()
    batch_run.write_summary(out, None)
    assert (out / "summary.html").read_text() == (batch_out / "summary.html").read_text()


def test_the_summary_lists_the_rules_it_is_given(batch_out, tmp_path):
    from analyzer.batch import run as batch_run

    out = tmp_path / "given"
    shutil.copytree(batch_out, out)
    html = batch_run.write_summary(out, ["a-rule-no-bundle-fired"]).read_text()
    assert _never_fired(html) == {"a-rule-no-bundle-fired"}


def test_the_rules_ids_wait_for_a_slow_preparation(ruleset, monkeypatch):
    import time

    from analyzer.batch import run as batch_run
    from analyzer.render import summary as summary_mod

    real = summary_mod.prepare

    def slow() -> None:
        time.sleep(0.3)
        real()

    monkeypatch.setattr(summary_mod, "prepare", slow)
    assert batch_run._prepared_summary()() == sorted(ruleset.rules)
