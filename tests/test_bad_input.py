"""Hostile and broken input: clear messages or findings, never tracebacks or hangs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from analyzer.errors import RuleLoadError
from analyzer.rules.loader import load_ruleset
from conftest import diagnose_texts, fired, parse_texts


def test_malformed_yaml_node_is_a_warning(ruleset):
    b = parse_texts(
        ruleset, {"node.yaml": "kind: Node\nmetadata:\n  name: n1\n  labels: {gpu: on\n  bad: [\n"}
    )
    assert any("YAML error" in w for w in b.warnings)
    assert b.nodes and b.nodes[0].name == "n1"  # the part before the error was kept


def test_yaml_alias_bomb_is_refused(ruleset):
    bomb = "kind: Node\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(12)
    )
    start = time.monotonic()
    b = parse_texts(ruleset, {"node.yaml": bomb})
    assert time.monotonic() - start < 5
    assert any("alias" in w for w in b.warnings)


def test_truncated_and_wrongly_typed_annotation(ruleset):
    node = 'kind: Node\nmetadata:\n  name: n1\n  annotations:\n    hami.io/node-nvidia-register: \'[{"id":"GPU-1","count":10,"health":"yes"}]\'\n'
    d = diagnose_texts(ruleset, {"node.yaml": node}).worst
    assert d.register.status == "invalid" and "health" in d.register.error
    assert "register-annotation-invalid" in fired([d])


def test_binary_junk_and_empty_files(ruleset):
    from analyzer.analyze import check_analysable
    from analyzer.errors import BundleError

    parsed = parse_texts(
        ruleset, {"junk.bin": bytes(range(256)) * 100, "empty.log": b"", "blank.txt": b"\n\n  \n"}
    )
    kinds = {a.file.name: a.kind for a in parsed.artefacts}
    assert kinds == {"junk.bin": "binary", "empty.log": "empty", "blank.txt": "empty"}
    with pytest.raises(BundleError, match="nothing to analyse: 3 file"):
        check_analysable(parsed)


def test_single_huge_line(ruleset):
    start = time.monotonic()
    report = diagnose_texts(
        ruleset,
        {"big.log": "I0815 09:04:51.202341  412873 main.go:275] " + "A" * (50 << 20) + "\n"},
    )
    assert time.monotonic() - start < 60
    assert report.log_stats and report.log_stats[0].lines == 1


def test_crlf_ansi_bom_log(ruleset):
    text = "\ufeff\x1b[32mI0815 09:04:51.202341  412873 main.go:275] Start working on node n\x1b[0m\r\nE0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\r\n"
    d = diagnose_texts(ruleset, {"dp.log": text.encode()}).worst
    assert "nvml-init-failed" in fired([d])


def _evil_rules(tmp_path: Path, pattern: str):
    (tmp_path / "evil.yaml").write_text(
        "signatures:\n"
        "  - id: evil\n"
        "    source: text\n"
        "    meaning: catastrophic backtracking\n"
        "    examples: {match: [aaaa]}\n"
        f"    regex: '{pattern}'\n"
        "rules:\n"
        "  - id: evil-rule\n"
        "    title: evil\n"
        "    severity: info\n"
        "    kind: fault\n"
        "    category: runtime-other\n"
        "    when: {signature: evil}\n"
        "    explanation: x\n"
        "    tests: {fires: [{files: {x.txt: aaaa}}]}\n"
    )
    return load_ruleset([tmp_path])


def test_catastrophic_custom_regex_only_sees_the_lines_it_matches(tmp_path: Path):
    """Rust's linear-time scanner picks the lines: the line Python would backtrack on is never
    handed to Python, the matching one is cited."""
    rs = _evil_rules(tmp_path, "^(a+)+$")
    start = time.monotonic()
    d = diagnose_texts(rs, {"x.txt": "a" * 40 + "!\n" + "a" * 30 + "\n"}).worst
    assert time.monotonic() - start < 20
    evil = [f for f in d.all_findings() if f.rule_id == "evil-rule"]
    assert [(e.file, e.line) for f in evil for e in f.evidence] == [("x.txt", 2)]
    assert d.rule_errors == ()


def test_catastrophic_custom_regex_is_a_rule_error(tmp_path: Path):
    """A line both engines take, on which Python's capture pass backtracks past its time limit:
    the time-out is reported naming the line, the line is read as no match."""
    rs = _evil_rules(tmp_path, "^(a|aa)+$|!x")
    start = time.monotonic()
    d = diagnose_texts(rs, {"x.txt": "a" * 40 + "!x\n"}).worst
    assert time.monotonic() - start < 20
    assert "evil-rule" not in fired([d])
    assert [e for e in d.rule_errors if "timed out" in e] == [
        "signature evil: regex timed out on x.txt:1; read as no match"
    ]


def test_rule_load_errors_name_file_and_line(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text(
        "rules:\n"
        "  - id: bad-rule\n"
        "    title: t\n"
        "    severity: fatal\n"
        "    kind: fault\n"
        "    category: healthy\n"
        "    colour: red\n"
        "    explanation: '{{ oops'\n"
        "    when:\n"
        "      all:\n"
        "        - fact: node.nonsense\n"
        "          eq: 1\n"
        "        - signature: no-such-sig\n"
        "signatures:\n"
        "  - id: badre\n"
        "    regex: '(unclosed'\n"
    )
    try:
        load_ruleset([tmp_path])
    except RuleLoadError as exc:
        text = "\n".join(exc.problems)
    else:
        raise AssertionError("expected RuleLoadError")
    assert f"{tmp_path}/bad.yaml:2: rule 'bad-rule': unknown key 'colour'" in text
    assert "severity 'fatal' not one of" in text
    assert "bad template" in text
    assert f"{tmp_path}/bad.yaml:11: rule bad-rule: unknown fact path 'node.nonsense'" in text
    assert "unknown signature id 'no-such-sig'" in text
    assert "signature badre: bad regex" in text


def test_invalid_utf8_deep_in_a_streamed_log_leaves_the_input_alone(ruleset, tmp_path, monkeypatch):
    """polars refuses invalid UTF-8 mid-stream: a repaired copy is streamed from a private folder,
    never written next to the user's file."""
    from analyzer.analyze import matcher_for
    from analyzer.bundle import recognise as recognise_mod
    from analyzer.pipeline import parse_bundle

    line = b"I0815 09:04:51.202341  412873 register.go:204] Registered device id=0, memory=24564MB, type=NVIDIA L40S, numa=0, health=true\n"
    bundle = tmp_path / "ticket"
    bundle.mkdir()
    log = bundle / "device-plugin.log"
    log.write_bytes(
        b"I0815 09:04:51.000000  412873 main.go:275] Start working on node n1\n"
        + line * 2000
        + "E0815 09:05:00.000000  412873 x.go:1] caf\u00e9 ".encode()  # valid UTF-8 stays
        + b"\xff\xfe bad bytes\n"
        + line * 100
    )
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in bundle.iterdir()}
    monkeypatch.setattr(recognise_mod, "SMALL_FILE", 1000)
    parsed = parse_bundle([str(bundle)], ruleset.catalogue, matcher_for(ruleset))
    after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in bundle.iterdir()}
    assert after == before
    stats = parsed.logs[0].stats
    assert stats.lines == 2102 and stats.severities == {"E": 1, "I": 2101}
    bad = parsed.logs[0].frame.filter(parsed.logs[0].frame["sev"] == "E")
    assert bad["text"].to_list() == [
        "E0815 09:05:00.000000  412873 x.go:1] caf\u00e9 \ufffd\ufffd bad bytes"
    ]
