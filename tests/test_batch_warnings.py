"""Batch tables carry every input warning: warnings.parquet (one row per warning, keyed by
bundle), `n_warnings` in bundles.parquet, the CSV export and a summary section. An
unattributable log of a two-node bundle is the case the tables used to lose."""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from analyzer.batch.run import WARNING_SCHEMA, write_summary
from analyzer.cli import app
from conftest import SAMPLES

runner = CliRunner()
TWO_NODES = SAMPLES / "two-nodes-one-plugin-crash" / "bundle"
HEALTHY = SAMPLES / "healthy-single-gpu" / "bundle"
UNATTRIBUTED = (
    "device-plugin.log: a device-plugin-log of none of the bundle's 2 nodes "
    "(gpu-node-1, gpu-node-2): nothing in its name, folder, pod or lines names one of them; "
    "not used as evidence for any node"
)


def _copy(src: Path, dst: Path, rename: dict[str, str] | None = None) -> None:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (dst / (rename or {}).get(f.name, f.name)).write_bytes(f.read_bytes())


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tickets")
    # n1's plugin log under a name that says no node: it belongs to no node of the two
    _copy(TWO_NODES, root / "t1-unattributed")
    (root / "t1-unattributed" / "device-plugin-gpu-node-2.log").unlink()
    (root / "t1-unattributed" / "device-plugin-gpu-node-1.log").rename(
        root / "t1-unattributed" / "device-plugin.log"
    )
    (root / "t1-unattributed" / "notes.txt").write_text("we restarted it twice\n")
    _copy(HEALTHY, root / "t2-clean")
    # an archive holding a log cut short in transit and a Node object with a YAML error
    whole = gzip.compress((HEALTHY / "scheduler.log").read_bytes())
    members = {
        "device-plugin.log": (HEALTHY / "device-plugin.log").read_bytes(),
        "extra.log.gz": whole[: len(whole) // 2],
        "node.yaml": b"kind: Node\nmetadata:\n  name: n1\n  labels: {gpu: on\n  bad: [\n",
    }
    with tarfile.open(root / "t3-damaged.tgz", "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (root / "t4-junk.tgz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 50)
    out = tmp_path_factory.mktemp("out")
    res = runner.invoke(app, ["batch", str(root), "--out", str(out), "--jobs", "0", "--csv"])
    assert res.exit_code == 0, res.output
    assert re.search(r"4 bundles, \d+ findings, 4 input warnings -> ", res.output)
    return out


def _by_ticket(frame: pl.DataFrame, column: str = "id") -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    for r in frame.to_dicts():
        rows.setdefault(Path(r[column]).name, []).append(r)
    return rows


def test_every_input_warning_is_a_row_keyed_by_bundle(out):
    w = pl.read_parquet(out / "warnings.parquet")
    assert dict(w.schema) == WARNING_SCHEMA
    got = {
        ticket: sorted((r["source"], r["file"], r["message"]) for r in rows)
        for ticket, rows in _by_ticket(w, "bundle_id").items()
    }
    # t2-clean: every file recognised, every log its one node's; t4: failed, it has no report
    assert {t: [(s, f) for s, f, _ in rows] for t, rows in got.items()} == {
        "t1-unattributed": [("attribution", "device-plugin.log"), ("unrecognised", "notes.txt")],
        "t3-damaged.tgz": [
            ("parse", "t3-damaged.tgz!node.yaml"),
            ("read", "t3-damaged.tgz!extra.log.gz"),
        ],
    }
    messages = [m for rows in got.values() for _, _, m in rows]
    starts = [
        UNATTRIBUTED,
        "notes.txt: no kind recognised (no Kubernetes object, config or known log markers "
        "found); only scanned for known log lines",
        "t3-damaged.tgz!node.yaml: YAML error at line 5",
        "t3-damaged.tgz!extra.log.gz: truncated or corrupt gzip archive",
    ]
    assert [m.startswith(s) for m, s in zip(messages, starts, strict=True)] == [True] * 4
    attributed = w.filter(pl.col("source") == "attribution")["message"].to_list()
    assert [m.startswith(UNATTRIBUTED) for m in attributed] == [True]


def test_bundles_table_counts_them_and_a_failed_bundle_has_none(out):
    b = _by_ticket(pl.read_parquet(out / "bundles.parquet"))
    counts = {t: rows[0]["n_warnings"] for t, rows in b.items()}
    assert counts == {
        "t1-unattributed": 2,
        "t2-clean": 0,
        "t3-damaged.tgz": 2,
        "t4-junk.tgz": None,
    }
    assert b["t4-junk.tgz"][0]["error"]


def test_the_report_and_the_table_say_the_same(out, ruleset):
    """The table's messages are the report's input warnings, word for word."""
    from analyzer.analyze import AnalyzeOptions, analyze

    ids = pl.read_parquet(out / "bundles.parquet")["id"].to_list()
    bundle = next(i for i in ids if i.endswith("t1-unattributed"))
    report = analyze([str(bundle)], AnalyzeOptions(ruleset=ruleset)).report
    w = pl.read_parquet(out / "warnings.parquet").filter(
        (pl.col("bundle_id") == str(bundle)) & (pl.col("source") != "unrecognised")
    )
    assert w["message"].to_list() == list(report.warnings)


def test_csv_export_holds_the_warnings(out):
    csv = pl.read_csv(out / "warnings.csv")
    assert csv.height == 4
    assert set(csv["source"]) == {"attribution", "unrecognised", "parse", "read"}
    assert "n_warnings" in pl.read_csv(out / "bundles.csv").columns


def test_summary_lists_bundles_by_warning_source(out):
    html = (out / "summary.html").read_text()
    assert re.search(r'<a href="#warnings">2</a></div>with input warnings \(67%\)', html)
    section = html[html.index('<h2 id="warnings">') : html.index('<h2 id="unexplained">')]
    rows = re.findall(
        r'<tr><td><code>(\w+)</code></td><td>[^<]*</td><td class="n"><a href="#(iw-\d)">(\d+)</a>',
        section,
    )
    assert [(s, n) for s, _, n in rows] == [
        ("attribution", "1"),
        ("read", "1"),
        ("parse", "1"),
        ("unrecognised", "1"),
    ]
    # each count opens the tickets behind it
    anchor = rows[0][1]

    def drill(anchor: str) -> str:
        start = html.index(f'id="{anchor}"')
        return html[start : html.index("</table>", start)]

    assert "t1-unattributed" in drill(anchor) and "t3-damaged" not in drill(anchor)
    assert "t3-damaged" in drill(rows[1][1]) and "t1-unattributed" not in drill(rows[1][1])


def test_summary_of_tables_written_before_warnings_existed(out, tmp_path):
    """An output folder of an older version (no warnings.parquet, no n_warnings) still gets
    its summary, with no warnings section rows."""
    old = tmp_path / "old"
    old.mkdir()
    pl.read_parquet(out / "bundles.parquet").drop("n_warnings").write_parquet(
        old / "bundles.parquet"
    )
    for name in ("findings", "unexplained"):
        (old / f"{name}.parquet").write_bytes((out / f"{name}.parquet").read_bytes())
    html = write_summary(old).read_text()
    assert "no analysed bundle has an input warning" in html
