"""The big-log scan: frequent (hot) signatures flagged by their own regex, case-insensitive
literals, the progress line; rule texts without jinja2; the rules cache; the benchmark's doubled
catalogue."""

from __future__ import annotations

import copy
import functools
import io
import os
import subprocess
import sys

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer import progress as progress_mod
from analyzer.bundle import recognise as recognise_mod
from analyzer.parse import bigscan, scanplan
from analyzer.parse import logs as logs_mod
from analyzer.parse import matcher as matcher_mod
from analyzer.parse.literals import ignores_case, required_literals
from analyzer.rules.templates import is_plain, render, template
from conftest import REPO, parse_texts


def _mixed_log() -> str:
    """Periodic lines (two hot signatures, one of them verified by its regex), rare ones, lines
    holding both a hot and another signature's literal, case-insensitive matches, and error
    lines that hold a hot literal yet match nothing."""
    lines = []
    for i in range(4000):
        clock = f"{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        lines.append(
            f'E0815 {clock}.000001  412873 register.go:168] "failed to get numa information from sysfs" idx={i}'
        )
        if i % 4 == 0:
            lines.append(
                f"I0815 {clock}.000002  412873 register.go:302] Updating node annotations with {i % 8 + 1} device(s)"
            )
        if i % 50 == 0:
            lines.append(
                f"E0815 {clock}.000003  412873 register.go:302] Updating node annotations with no device(s)"
            )
        if i % 300 == 0:  # a hot literal and another signature's literal on one line
            lines.append(
                f"E0815 {clock}.000004  412873 register.go:96] Updating node annotations with 2 device(s); nvml Init err:  ERROR_LIBRARY_NOT_FOUND"
            )
        if i in (17, 2222):  # found by case-insensitive literals
            lines.append(f"I0815 {clock}.000005  1 notes.go:1] running HAMI V2.7.1 on this node")
            lines.append(f"I0815 {clock}.000006  1 notes.go:2] NVIDIA DRIVER Version: 535.104.05")
            # a reporter's phrasing (a symptom searched in prose only): no match in a log
            lines.append(f"I0815 {clock}.000007  1 notes.go:3] the Device Plugin keeps RESTARTING")
        if i % 97 == 0:
            lines.append(f"E0815 {clock}.000007  412873 other.go:1] unmatched error {i}")
    return "\n".join(lines) + "\n"


def test_hot_and_case_insensitive_signatures_stream_like_the_small_path(ruleset, monkeypatch):
    text = _mixed_log()
    small = parse_texts(ruleset, {"dp.log": text}).logs[0]
    monkeypatch.setattr(recognise_mod, "SMALL_FILE", 1000)
    monkeypatch.setattr(logs_mod, "BATCH_ROWS", 900)
    monkeypatch.setattr(logs_mod, "POOL_BYTES", 20_000)
    monkeypatch.setattr(bigscan, "CHUNK_BYTES", 64 << 10)
    from analyzer.analyze import matcher_for

    lines = text.split("\n")[:-1]
    hot = scanplan.hot_signatures(matcher_for(ruleset).adapted(lines), lines)
    assert {"dp-numa-sysfs-benign", "dp-annotation-updated"} <= set(hot)  # the path under test
    big = parse_texts(ruleset, {"dp.log": text}).logs[0]
    assert big.artefact.text is None
    assert big.stats.sig_counts == small.stats.sig_counts
    assert big.stats.severities == small.stats.severities
    counts = big.stats.sig_counts
    assert counts["dp-annotation-updated"] == 1000 + 14  # the "no device(s)" lines do not count
    assert counts["dp-nvml-init-error"] == counts["nvml-library-not-found"] == 14
    assert counts["txt-hami-version"] == 2 and counts["txt-nvidia-driver-version"] == 2
    assert "sym-plugin-restarts" not in counts
    # each kept line carries every signature it matches, hot or not
    both = big.frame.filter(pl.col("text").str.contains("ERROR_LIBRARY_NOT_FOUND"))
    assert both.height >= 2
    assert all({"dp-annotation-updated", "dp-nvml-init-error"} <= set(s) for s in both["sigs"])
    # errors holding a hot literal that matched nothing are unmatched errors, in order
    unmatched = big.frame.filter(
        pl.col("msg").str.starts_with("unmatched error")
        | pl.col("msg").str.starts_with("Updating node annotations with no")
    )
    assert unmatched["line"].to_list() == sorted(unmatched["line"].to_list())
    assert unmatched.height == 42 + 80


def test_a_prefixed_log_streams_like_the_small_path(ruleset, monkeypatch):
    """`kubectl logs --prefix --timestamps` lines: the streamed scan strips the prefixes for the
    signatures and keeps each kept line's raw text and container, as the small path does."""
    prefix = "[pod/hami-device-plugin-x7k2p/device-plugin] 2024-08-15T10:00:00.000000000Z "
    text = "".join(prefix + line + "\n" for line in _mixed_log().splitlines())
    small = parse_texts(ruleset, {"dp.log": text}).logs[0]
    monkeypatch.setattr(recognise_mod, "SMALL_FILE", 1000)
    monkeypatch.setattr(logs_mod, "BATCH_ROWS", 900)
    monkeypatch.setattr(logs_mod, "POOL_BYTES", 20_000)
    big = parse_texts(ruleset, {"dp.log": text}).logs[0]
    assert big.artefact.text is None
    assert big.stats.sig_counts == small.stats.sig_counts
    assert big.stats.severities == small.stats.severities and big.stats.lines == small.stats.lines
    assert big.stats.sig_counts["dp-nvml-init-error"] == 14
    kept = big.frame.filter(pl.col("sigs").list.contains("dp-nvml-init-error"))
    assert kept["raw"].str.starts_with(prefix).all() and not kept["text"].str.contains(r"^\[").any()
    assert kept["container"].unique().to_list() == ["device-plugin"]
    assert big.stats.pods == small.stats.pods == ["hami-device-plugin-x7k2p"]


def test_a_signature_is_searched_only_in_the_kinds_it_is_scanned_in(ruleset):
    """A symptom (`scanned_in: [issue-text, text]`) matches the reporter's words, not a log line
    with the same words; a signature without `scanned_in` is searched everywhere."""
    sig = ruleset.signatures["sym-plugin-restarts"]
    assert (
        set(sig.scanned_in) == {"issue-text", "text"}
        and not ruleset.signatures["dp-nvml-init-error"].scanned_in
    )
    said = "the device plugin keeps restarting"
    klog = f"I0815 10:00:00.000001  1 notes.go:2] {said}; nvml Init err: ERROR_LIBRARY_NOT_FOUND"
    log = parse_texts(ruleset, {"dp.log": "\n".join([klog] * 3) + "\n"}).logs[0]
    prose = parse_texts(ruleset, {"notes.txt": f"{said} since the upgrade\n"}).logs[0]
    assert log.artefact.kind == "device-plugin-log" and prose.artefact.kind == "text"
    assert log.stats.sig_counts == {"dp-nvml-init-error": 3, "nvml-library-not-found": 3}
    assert prose.stats.sig_counts == {"sym-plugin-restarts": 1}


def test_a_plain_pattern_with_a_wider_declared_prefilter_is_checked_by_its_pattern():
    """A signature whose pattern is plain text needs no regex after its literal, unless its
    declared prefilter is another, wider literal: the lines holding only that literal are not
    its lines."""
    from analyzer.parse.matcher import Matcher

    sigs = [("narrow", "umount: /x: not mounted"), ("own", "umount: /x: not mounted")]
    m = Matcher(sigs, prefilters={"narrow": ["/x"]})
    assert "narrow" not in m.pure and "own" in m.pure
    frame = pl.DataFrame(
        {"line": [1, 2], "text": ["cp /x/params /tmp", "umount: /x: not mounted."]}
    )
    hits = m.attribute(frame, timeouts=[])
    assert sorted(hits.select("line", "sig").rows()) == [(2, "narrow"), (2, "own")]


def test_scanned_in_names_scanned_kinds_that_hold_the_sources(ruleset):
    from analyzer.catalogue.fields import Context
    from analyzer.rules.schema import _scanned_in

    problems: list[str] = []
    ctx = Context("x.yaml:1", problems, "x.yaml", 1, catalogue=ruleset.catalogue)
    ctx.values["sources"] = ("issue-text",)
    assert _scanned_in(["issue-text", "text"], ctx) == ("issue-text", "text") and not problems
    _scanned_in(["node", "no-such-kind", "text"], ctx)
    assert len(problems) == 3, problems  # node is not scanned; unknown kind; issue-text missing


def test_a_symptom_must_say_where_it_is_searched(tmp_path):
    """A reporter's words left unscoped would be searched in every log line (a pods table's
    CrashLoopBackOff row read as the reporter saying the plugin crashes): lint refuses it."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    sig = tmp_path / "signatures"
    sig.mkdir()
    body = (
        "signatures:\n  - id: sym-test-unscoped\n    component: issue\n    origin: test\n"
        "    source: [issue-text]\n    symptom: true\n{scope}    regex: 'the plugin keeps dying'\n"
        "    meaning: test\n    examples:\n      match: ['the plugin keeps dying']\n"
    )
    (sig / "x.yaml").write_text(body.format(scope=""))
    unscoped = CliRunner().invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert unscoped.exit_code == 2
    assert "x.yaml:2: signature sym-test-unscoped: a symptom needs scanned_in" in unscoped.output
    (sig / "x.yaml").write_text(body.format(scope="    scanned_in: [issue-text, text]\n"))
    scoped = CliRunner().invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert "sym-test-unscoped" not in scoped.output, scoped.output


def test_case_insensitive_patterns_keep_their_literals():
    assert ignores_case(r"(?i)\bhami\b") and not ignores_case(r"hami(?i:x)")
    assert required_literals(r"(?i)nvidia-smi failed") == ["nvidia-smi failed"]


def test_the_prefilter_finds_case_insensitive_literals_in_any_case(ruleset):
    from analyzer.analyze import matcher_for

    lines = ["the device plugin keeps ReStArTiNg", "ｒｅｓｔａｒｔ", "nothing here", "重启了"]
    frame = pl.DataFrame({"line": [1, 2, 3, 4], "text": lines})
    cand = matcher_for(ruleset).candidates(frame)
    assert cand["line"].to_list() == [1, 4]
    assert "restart" in cand["held_folded"][0]  # a literal of sym-plugin-restarts, any case


def test_the_scan_reports_progress_only_when_asked(ruleset, monkeypatch, capsys):
    text = _mixed_log()
    monkeypatch.setattr(recognise_mod, "SMALL_FILE", 1000)
    monkeypatch.setattr(logs_mod, "BATCH_ROWS", 900)
    monkeypatch.setattr(bigscan, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(progress_mod, "QUIET_FOR", 0.0)
    monkeypatch.setattr(progress_mod, "FILE_EVERY", 0.0)
    parse_texts(ruleset, {"dp.log": text})
    assert capsys.readouterr().err == ""  # library use: silent
    with progress_mod.shown():
        parse_texts(ruleset, {"dp.log": text})
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 3 and all(x.startswith("scanning dp.log: ") for x in lines)
    size = len(text.encode())
    assert lines[-1].startswith(f"scanning dp.log: {size / 1024:.1f} KiB/{size / 1024:.1f} KiB")
    assert progress_mod.progress_for("x", 1) is None


def test_a_progress_line_on_a_terminal_is_redrawn_in_place(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress_mod, "QUIET_FOR", 0.0)
    out = Tty()
    with progress_mod.shown():
        p = progress_mod.progress_for("scanning x.log", 100, "bytes")
    p.stream = out
    p.advance(50)
    p.advance(50)
    assert out.getvalue().count("\r") == 2 and out.getvalue().endswith("\n")


def test_plain_rule_texts_render_as_jinja2_would(ruleset):
    texts = {
        t
        for rule in ruleset.rules.values()
        for lang in ("en", "zh")
        for t in (rule.texts(lang)[0], rule.texts(lang)[1], *(s.text for s in rule.texts(lang)[2]))
    }
    plain = [t for t in texts if is_plain(t)]
    assert len(plain) > 50  # most rule texts need no template engine
    for t in plain:
        assert render(t) == template(t).render().strip()
    assert render("{{ n }} GPU(s)", n=2) == "2 GPU(s)"


def test_a_plain_text_does_not_import_jinja2():
    code = (
        "import sys; from analyzer.rules.templates import render; "
        "assert render(' Restart the plugin. ') == 'Restart the plugin.'; "
        "print('jinja2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("sample", ["healthy-single-gpu", "annotation-health-omitted"])
def test_the_benchmarks_doubled_catalogue_loads_and_never_matches(ruleset, tmp_path, sample):
    from analyzer.analyze import AnalyzeOptions, analyze
    from analyzer.dev.bench import doubled_rules
    from analyzer.rules.loader import load_ruleset

    ids = doubled_rules(tmp_path / "rules")
    doubled = load_ruleset([tmp_path / "rules"], use_cache=False)
    assert len(ids) == len(ruleset.signatures)
    assert len(doubled.signatures) == 2 * len(ruleset.signatures)
    for sig in ruleset.signatures.values():  # searched where the real one is
        assert doubled.signatures[f"synthetic-{sig.id}"].scanned_in == sig.scanned_in
    sample_dir = str(REPO / "sample_bundles" / sample / "bundle")
    bundle = analyze([sample_dir], AnalyzeOptions(ruleset=doubled)).bundle
    assert not {sid for log in bundle.logs for sid in log.stats.sig_counts} & set(ids)


def test_the_benchmarks_packed_bundle_holds_the_bundle_and_is_made_once(tmp_path, monkeypatch):
    """`packed_bundle`: the bundle's files as `analyze` reads the .tar.gz, made again only when
    the log is newer than the archive."""
    from analyzer.bundle.reader import open_bundle
    from analyzer.dev import bench

    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: None)  # the page cache's `cat`
    bundle = tmp_path / "seed-7"
    bundle.mkdir()
    log = b"I0815 00:00:00.000464       1 server.go:148] Registered device plugin\n" * 1000
    (bundle / "device-plugin.log").write_bytes(log)
    (bundle / "node.yaml").write_text("kind: Node\n")
    packed = bench.packed_bundle(tmp_path, bundle)
    with open_bundle([str(packed)]) as r:
        got = {f.name: f.path.read_bytes() for f in r.inventory.files}
    assert got == {
        "seed-7.tar.gz!seed-7/device-plugin.log": log,
        "seed-7.tar.gz!seed-7/node.yaml": b"kind: Node\n",
    }
    old = packed.stat().st_mtime - 100
    os.utime(bundle / "device-plugin.log", (old - 50, old - 50))
    os.utime(packed, (old, old))
    assert bench.packed_bundle(tmp_path, bundle).stat().st_mtime == old  # newer than its log
    os.utime(bundle / "device-plugin.log", (old + 50, old + 50))
    assert bench.packed_bundle(tmp_path, bundle).stat().st_mtime > old  # the log changed since


def test_the_benchmarks_host_line_measures_the_cores_processes_get_at_once(monkeypatch):
    """`parallel_capacity`: as many processes as cores, each timing the same loop; a machine of
    real cores gives ~n, two vCPUs on one core ~1. Alone and side by side alternate, each read
    at its median round, so one slow moment of the host does not make the figure: here one
    process alone takes 1.0-1.5 s, side by side each 1.6-2.4 s."""
    from analyzer.dev import bench

    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    calls: list[list[str]] = []
    # per round: one alone, then two side by side
    seconds = iter(["1.5", "2.4", "2.4", "1.0", "1.6", "1.7", "1.2", "1.6", "1.6"])

    class Spin:
        def __init__(self, cmd, **_):
            calls.append(cmd)
            self.seconds = next(seconds)

        def communicate(self):
            return self.seconds + "\n", None

    monkeypatch.setattr(bench.subprocess, "Popen", Spin)
    n, cores = bench.parallel_capacity()
    assert n == 2 and cores == pytest.approx(2 * 1.2 / 1.65)
    assert len(calls) == 9 and all(cmd[-1] == bench.SPIN for cmd in calls)


def test_the_benchmarks_batch_section_alternates_its_rounds_and_reads_their_medians(
    monkeypatch, tmp_path, capsys
):
    """The warm single-process rate, one `analyze` process and the batch, round after round; each
    figure is the median of its rounds and the per-core ratio's range is printed beside it: here
    the warm rate is 12 ms a bundle (median of 12, 10, 17; their mean would read 13) and the
    batch of 6 bundles took 0.09, 0.03, 0.045 s on 2 cores, a median of 7.5 ms a bundle: 0.80 per
    core, 0.40-1.20 by round."""
    from analyzer.batch import run as batch
    from analyzer.dev import bench

    tickets = tmp_path / "tickets-6"
    for i in range(6):
        (tickets / f"t{i}").mkdir(parents=True)
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(batch, "load_rules", lambda: None)
    calls: list[str] = []
    warm = iter([0.012, 0.010, 0.017])
    walls = iter([0.09, 0.03, 0.045])

    def warm_per_bundle(sample):
        calls.append("warm")
        assert len(sample) == 6
        return next(warm)

    def timed(cmd, **_):
        which = "batch" if "batch" in cmd else "analyze"
        calls.append(which)
        wall = next(walls) if which == "batch" else 0.3
        return bench.Run(wall, wall, 1024, 0, "")

    monkeypatch.setattr(bench, "_warm_per_bundle", warm_per_bundle)
    monkeypatch.setattr(bench, "timed", timed)
    bench.bench_batch(6, tmp_path, [], runs=3)
    out = capsys.readouterr().out
    assert calls == ["warm", "analyze", "batch"] * 3
    assert "median of 3 alternated rounds" in out
    assert "warm single process                   12.0 ms/bundle" in out
    assert "batch (all cores)                      7.5 ms/bundle" in out
    assert "batch / (cores x warm): 0.80 (rounds 0.40-1.20; target >= 1.0)" in out
    assert "batch failed" not in out


def test_the_benchmarks_ratios_show_their_range_round_by_round():
    """A ratio's median hides how far the host moved it: each round's pair (timed back to back)
    gives its own, and the bench prints their range beside the median's."""
    from analyzer.dev.bench import Run, Series, by_round

    def series(*walls):
        return Series([Run(w, w, 0, 0, "") for w in walls])

    assert by_round(series(2.0, 4.0, 3.0), series(1.0, 1.0, 2.0)) == "rounds 1.50-4.00"
    assert by_round(series(), series()) == "no rounds"


def test_the_benchmarks_host_line_never_reads_more_cores_than_there_are(monkeypatch):
    """A process alone slowed by the host in every round (2 s) against a quick side-by-side
    round (1 s each) would read 4 cores' worth on two; the figure stops at the cores."""
    from analyzer.dev import bench

    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    seconds = iter(["2.0", "1.0", "1.0"] * bench.CAPACITY_ROUNDS)  # per round: alone, then two

    class Spin:
        def __init__(self, cmd, **_):
            self.seconds = next(seconds)

        def communicate(self):
            return self.seconds + "\n", None

    monkeypatch.setattr(bench.subprocess, "Popen", Spin)
    assert bench.parallel_capacity() == (2, 2)


def test_the_benchmarks_spin_loop_prints_its_own_time():
    from analyzer.dev.bench import SPIN

    out = subprocess.run([sys.executable, "-c", SPIN], capture_output=True, text=True, check=True)
    assert 0 < float(out.stdout) < 60


def test_the_rules_cache_keeps_only_the_newest_sets(tmp_path, monkeypatch):
    from analyzer.rules import loader

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "hami-bundle-analyzer"
    folder.mkdir()
    for i in range(loader.CACHED_RULE_SETS + 4):
        old = folder / f"rules-old{i:02d}.pickle"
        old.write_bytes(b"stale")
        os.utime(old, (1000 + i, 1000 + i))
    ruleset = loader.load_ruleset()  # validates, writes its set, prunes the oldest
    kept = sorted(p.name for p in folder.glob("rules-*.pickle"))
    assert len(kept) == loader.CACHED_RULE_SETS
    assert "rules-old00.pickle" not in kept and "rules-old19.pickle" in kept
    assert loader.load_ruleset().version == ruleset.version  # and reads it back


def test_the_rules_cache_keeps_the_signatures_compiled(tmp_path, monkeypatch):
    """A rule set read from the cache brings its signatures' patterns compiled (none is compiled
    again), and they match what the freshly validated ones match."""
    from analyzer.catalogue import signatures
    from analyzer.rules import loader

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fresh = loader.load_ruleset()  # validates and writes the cache
    cached = loader.load_ruleset()
    assert cached is not fresh and cached.signatures.keys() == fresh.signatures.keys()

    def no_compiling(*_a, **_k):
        raise AssertionError("a cached signature was compiled again")

    monkeypatch.setattr(signatures.regex, "compile", no_compiling)
    for sid, sig in cached.signatures.items():
        assert sig.compiled.pattern == fresh.signatures[sid].compiled.pattern
        assert sig.compiled.groupindex == fresh.signatures[sid].compiled.groupindex
        for ex in sig.examples_match:
            assert sig.compiled.search(ex) is not None, (sid, ex)
        for ex in sig.examples_no_match:
            assert sig.compiled.search(ex) is None, (sid, ex)


def test_a_cached_signature_whose_compiled_code_is_damaged_is_compiled_again(ruleset):
    import pickle

    sig = pickle.loads(pickle.dumps(ruleset.signatures["go-stack-frame"]))
    assert "_compiled" in sig.__dict__
    sig.__dict__["_compiled"] = b"not a pickle"
    assert sig.compiled.pattern == sig.pattern and sig.compiled.search("main.go:12") is None


def test_the_command_line_runs_no_collection_before_its_rules_are_loaded(tmp_path):
    """The real entry point: no pass of the cyclic collector over start-up's objects (imports,
    the cached rule set), which all live as long as the process; then they are frozen and the
    collector is on again, every WORKING allocations."""
    from analyzer.startup import WORKING

    code = (
        "import gc, os, runpy, sys\n"
        # from the entry point's first call on (before it: Python's own start, and compiling
        # startup.py when its .pyc is stale, which may push the young generation over the line)
        "def seen(phase, info):\n"
        "    if phase == 'start' and hasattr(sys.modules.get('analyzer.startup'), 'begin'):\n"
        "        os.write(2, f'pass frozen={gc.get_freeze_count()} t={gc.get_threshold()[0]}\\n'.encode())\n"
        "gc.callbacks.append(seen)\n"
        "exit = os._exit\n"  # main ends the process with os._exit
        "os._exit = lambda code: (os.write(2, f'end frozen={gc.get_freeze_count()} "
        "t={gc.get_threshold()[0]}\\n'.encode()), exit(code))\n"
        "sys.argv = ['hami-analyzer', 'analyze', sys.argv[1], '--format', 'json']\n"
        "runpy.run_module('analyzer', run_name='__main__')\n"
    )
    bundle = str(REPO / "sample_bundles" / "healthy-single-gpu" / "bundle")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    for run in ("validates the rules", "reads them from the cache"):
        proc = subprocess.run(
            [sys.executable, "-c", code, bundle], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, (run, proc.stderr)
        passes = [line for line in proc.stderr.splitlines() if line.startswith("pass ")]
        assert all(not line.startswith("pass frozen=0 ") for line in passes), (run, passes[:3])
        assert all(line.endswith(f"t={WORKING}") for line in passes), (run, passes[:3])
        (end,) = [line for line in proc.stderr.splitlines() if line.startswith("end ")]
        assert not end.startswith("end frozen=0 ") and end.endswith(f"t={WORKING}"), (run, end)


def test_case_insensitive_literals_join_the_first_pass_through_a_windows_case_variants(ruleset):
    """Given a sample of the log, every case-insensitive literal is found by the case variants
    of its rarest window, in the one literal pass; a line that matches ignoring case is still a
    candidate, through any ASCII case or the two characters that fold to ASCII letters."""
    from analyzer.analyze import matcher_for

    m = matcher_for(ruleset)
    sample = ["I0815 00:00:00.000001 1 x.go:1] restarting the restapi, crash course"] * 50
    assert len(m.prefilters(sample)) == len(m.prefilters()) - 1  # no (?i) pass left
    keep = m.keep_expr(sample)
    lines = [
        "the device plugin keeps ReStArTiNg",
        "the device plugin keeps re\u017fTARTing",  # LONG S folds to s
        "HAM\u0130 v2.7.1 here",  # Python regex: CAPITAL I WITH DOT matches i
        "hami-device CRASHED",
        "nothing to see",
        "GPUMEM not in allocatable",
    ]
    got = pl.DataFrame({"text": lines}).select(keep)["text"].to_list()
    assert got == [True, True, True, True, False, True]
    for line, kept in zip(lines, got, strict=True):  # the prefilter keeps every regex match
        assert kept or not any(
            m.regex(sid).search(line) for sid in ("sym-plugin-restarts", "txt-hami-version")
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_literal_choice_is_in_every_example_of_its_signature(ruleset, seed):
    """Whichever set of literals the scan picks for a log (here: by arbitrary commonness), every
    line the signature matches holds one of them: the examples of the whole catalogue."""
    import random

    from analyzer.parse.literals import ignores_case, literal_options

    rng = random.Random(seed)
    commonness: dict[str, int] = {}
    checked = 0
    for sig in ruleset.signatures.values():
        if literal_options(sig.pattern) is None:
            continue
        lits = required_literals(sig.pattern, lambda x: commonness.setdefault(x, rng.randrange(9)))
        fold = str.casefold if ignores_case(sig.pattern) else str
        for example in sig.examples_match:
            assert any(fold(x) in fold(example) for x in lits), (sig.id, example, lits)
            checked += 1
    assert checked > 300


def test_the_scan_picks_the_literals_a_log_holds_least(ruleset):
    from analyzer.analyze import matcher_for

    m = matcher_for(ruleset)
    sample = ["I0815 00:00:00.000001 1 plugin.go:1] device plugin daemonset healthy"] * 100
    adapted = m.adapted(sample)
    assert "device" in m.lits["sym-plugin-taint-toleration"]
    assert not {"device", "daemon"} & set(adapted.lits["sym-plugin-taint-toleration"])
    assert adapted.lits["sym-plugin-restarts"] == m.lits["sym-plugin-restarts"]  # named in YAML


# a piece of a line: the nth example line of the signatures (each holds its literals) or words
LINE_PIECES = st.one_of(
    st.integers(0, 10_000),
    st.text(
        st.sampled_from("abcdefghijklmnopqrstuvwxyz ABC:=.-_/\u212a\u017f\u0130重启"), max_size=30
    ),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=st.lists(st.lists(LINE_PIECES, max_size=3), min_size=1, max_size=40),
    upper=st.lists(st.booleans(), min_size=1, max_size=7),
)
def test_a_short_texts_candidates_are_those_of_every_literals_automaton(ruleset, lines, upper):
    """A short text is searched for each literal first, and only those it holds make the
    automaton: the rows, and the literals each holds as written or in any ASCII case, are the
    same as with the automaton of every literal. Signatures' lines, in some case (`upper` says
    which characters go upper case, in turn), and other words."""
    from analyzer.analyze import matcher_for

    examples = sorted({x for s in ruleset.signatures.values() for x in s.examples_match})
    texts = [
        " ".join(examples[p % len(examples)] if isinstance(p, int) else p for p in pieces)
        for pieces in lines
    ]
    texts = [
        "".join(c.upper() if upper[i % len(upper)] else c for i, c in enumerate(t)) for t in texts
    ]
    frame = pl.DataFrame({"line": list(range(1, len(texts) + 1)), "text": texts})
    m = matcher_for(ruleset).for_kind("device-plugin-log")

    def found(presence_chars: int) -> list[tuple]:
        matcher_mod.PRESENCE_CHARS = presence_chars
        cand = m.candidates(frame).select("line", "held", "held_folded", "odd")
        return [(n, sorted(held), sorted(folded), odd) for n, held, folded, odd in cand.iter_rows()]

    saved = matcher_mod.PRESENCE_CHARS
    try:
        assert sum(map(len, texts)) < saved  # short: searched for each literal
        assert found(saved) == found(-1)  # -1: no text is short enough
    finally:
        matcher_mod.PRESENCE_CHARS = saved


@pytest.mark.parametrize("bulk", [True, False])
def test_case_insensitive_signatures_are_attributed_like_their_regex_on_every_row(ruleset, bulk):
    """Pooled candidates of a big log (bulk: Rust regexes) and small frames or a big log's kept
    rows (Python regexes, only on the rows holding a literal in some case) find exactly what
    their regex finds on every row."""
    from analyzer.analyze import matcher_for

    m = matcher_for(ruleset)
    folded = [sid for sid in m.folded if m._ascii_folded(sid)]
    texts = [x for sid in folded for x in ruleset.signatures[sid].examples_match]
    texts += [x.upper() for x in texts] + [x.replace("s", "\u017f") for x in texts]
    texts += ["nothing of interest", "the device plugin is fine"]
    frame = pl.DataFrame({"line": list(range(1, len(texts) + 1)), "text": texts})
    got = m.attribute(frame, bulk=bulk).filter(pl.col("sig").is_in(folded))
    if bulk:
        want = {
            (line, sid)
            for sid in folded
            for line in frame.filter(pl.col("text").str.contains(m.pattern[sid]))["line"]
        }
    else:
        want = {
            (line, sid)
            for sid in folded
            for line, text in frame.iter_rows()
            if m.regex(sid).search(text)
        }
    assert set(got.select("line", "sig").iter_rows()) == want
    assert len(want) > len(folded)


@functools.cache
def _plugin_matcher() -> matcher_mod.Matcher:
    from analyzer.analyze import matcher_for
    from analyzer.rules.loader import load_ruleset

    return matcher_for(load_ruleset()).for_kind("device-plugin-log")


_LITERAL_PIECES = sorted(_plugin_matcher().literals)
_SAMPLE_LINES = st.lists(
    st.lists(
        st.one_of(
            st.sampled_from(_LITERAL_PIECES),
            st.text(st.sampled_from("abcdeGINPU :=/.-0123456789"), max_size=12),
        ),
        max_size=4,
    ).map("".join),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_SAMPLE_LINES)
def test_the_sample_counts_adapted_keeps_are_what_hot_signatures_would_count(lines):
    """`adapted` counts the lines holding each literal found as it is, the scan's own among
    them, in its one pass; `hot_signatures` reads those counts instead of searching the sample
    again: every count is the number of lines holding the literal, and the hot signatures are
    the ones it finds when it searches itself."""
    adapted = _plugin_matcher().adapted(lines)
    assert adapted.sample_counts is not None and adapted.sample_counts[0] is lines
    held = adapted.sample_counts[1]
    for literal in {*adapted.literals, *held}:
        assert held.get(literal, 0) == sum(literal in line for line in lines)
    searched = copy.copy(adapted)
    searched.sample_counts = None
    assert scanplan.hot_signatures(adapted, lines) == scanplan.hot_signatures(searched, lines)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab \\.^$*+?{}[]|()d-:/"), max_size=12))
def test_a_pattern_is_plain_when_its_plain_text_is_itself(pattern):
    """`_is_plain`, one search for a metacharacter, says what `plain_text` does: a regex that
    matches exactly its own text as written (an escaped punctuation mark is not that)."""
    assert matcher_mod._is_plain(pattern) == (matcher_mod.plain_text(pattern) == pattern)


def test_every_signatures_pattern_is_plain_as_its_plain_text_says(ruleset):
    for sig in ruleset.signatures.values():
        assert matcher_mod._is_plain(sig.pattern) == (
            matcher_mod.plain_text(sig.pattern) == sig.pattern
        )
