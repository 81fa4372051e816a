"""Redaction (`redact`, `analyze --redact`, `redact_tree`): nothing planted or found survives, the
diagnosis does not change, the map goes only where asked, hostile redactors fail cleanly."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import time
from pathlib import Path

import pytest
import regex
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.analyze import analyze
from analyzer.errors import AnalyzerError
from analyzer.redact import redact_tree
from analyzer.redact.bundle import analyze_redacted
from analyzer.redact.engine import Redaction
from analyzer.redact.redactors import example_failure, load_redactors
from analyzer.redact.tokens import TokenMap
from conftest import SAMPLES, run_cli

SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "expected.yaml").is_file())
XID = SAMPLES / "xid79-gpu-lost" / "bundle"

# values a user would not want in a public issue, planted into copies of every sample
PLANTED = {
    "env.txt": (
        "DB_PASSWORD=Planted-Pa55word!\n"
        "export API_TOKEN=plantedtoken0123456789\n"
        "owner: ops.lead@acme-gpu.example\n"
        "uplink 0c:42:a1:9e:7b:10 via fe80::1c2d:3eff:fe4f:5a6b and 172.16.40.7\n"
        "resolv: db01.prod.acme-gpu.internal\n"
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.plantedpayload.plantedsig'\n"
        "providerID: aws:///us-east-1a/i-0abc123def4567890\n"
        "    server: https://api.gpu-prod.acme-gpu.example:6443\n"
    ),
    "values-private.yaml": (
        "global:\n"
        "  imageRegistry: harbor.acme-gpu.example:5000\n"
        "registry:\n"
        "  password: 'pl4nted secret phrase'\n"
        "scheduler:\n"
        "  kubeScheduler:\n"
        "    image: harbor.acme-gpu.example:5000/kube-scheduler:v1.30.4\n"
    ),
}
SECRETS = [
    "Planted-Pa55word!",
    "plantedtoken0123456789",
    "ops.lead@acme-gpu.example",
    "0c:42:a1:9e:7b:10",
    "fe80::1c2d:3eff:fe4f:5a6b",
    "172.16.40.7",
    "db01.prod.acme-gpu.internal",
    "plantedpayload",
    "i-0abc123def4567890",
    "harbor.acme-gpu.example",
    "pl4nted secret phrase",
    "api.gpu-prod.acme-gpu.example",
]


def texts(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def whole_word(value: str) -> regex.Pattern:
    return regex.compile(rf"(?<![\w.-]){regex.escape(value)}(?![\w-])")


def xid_with(tmp: Path, name: str, data: str | bytes) -> Path:
    """A copy of the XID sample with one more file."""
    src = tmp / "in"
    shutil.copytree(XID, src)
    (src / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return src


def redactor_file(tmp: Path, rid: str, token: str, pattern: str, examples: str) -> Path:
    path = tmp / f"{rid}.yaml"
    path.write_text(
        f"redactors:\n  - id: {rid}\n    description: a user's own\n    token: {token}\n"
        f"    pattern: '{pattern}'\n    examples: {examples}\n"
    )
    return path


def planted_copy(sample: Path, tmp: Path) -> Path:
    dst = tmp / "in"
    shutil.copytree(sample / "bundle", dst)
    for name, text in PLANTED.items():
        (dst / name).write_text(text)
    return dst


@pytest.mark.parametrize("redactor", load_redactors(), ids=lambda r: r.id)
def test_redactor_examples(redactor):
    assert example_failure(redactor) is None


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_sample_redacted_keeps_diagnosis_and_leaks_nothing(ruleset, sample, tmp_path):
    src = planted_copy(sample, tmp_path)
    before = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()))
    _, original = analyze([str(src)], ruleset)
    result = redact_tree(src, tmp_path / "out", map_file=tmp_path / "map.json")
    out = texts(tmp_path / "out")
    _, redacted = analyze([str(tmp_path / "out")], ruleset)

    nodes = {n.node for n in original.nodes if n.node}
    for value in SECRETS:
        assert not any(value in t for t in out.values()), value
    for name in nodes:
        assert not any(whole_word(name).search(t) for t in out.values()), name
        assert not any(name in f for f in out), name
    assert len(redacted.nodes) == len(original.nodes)
    want = (original.worst.primary.category, original.worst.primary.rule_id)
    assert (redacted.worst.primary.category, redacted.worst.primary.rule_id) == want
    assert want[0] == yaml.safe_load((sample / "expected.yaml").read_text())["primary_category"]
    # what identifies the hardware stays: every GPU UUID of the original is still there
    for uuid in set(regex.findall(r"GPU-[0-9a-f-]{36}", "".join(texts(src).values()))):
        assert any(uuid in t for t in out.values()), uuid
    assert set(json.loads((tmp_path / "map.json").read_text())) == set(result.tokens.mapping())
    after = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()))
    assert before.digest() == after.digest()  # inputs are only read


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_analyze_redact_same_verdict(ruleset, sample):
    """`analyze --redact` analyses the redacted copy: same verdict, no node name in the report."""
    _, original = analyze([str(sample / "bundle")], ruleset)
    _, redacted = analyze_redacted([str(sample / "bundle")], ruleset, None, None, [], None)
    assert [(n.primary.category, n.primary.rule_id) for n in redacted.nodes] == [
        (n.primary.category, n.primary.rule_id) for n in original.nodes
    ]
    assert {n.node for n in redacted.nodes if n.node} <= {
        f"node-{i}" for i in range(1, len(original.nodes) + 1)
    }


def test_map_only_where_asked(tmp_path):
    out, map_file = tmp_path / "shared.tar.gz", tmp_path / "private" / "map.json"
    map_file.parent.mkdir()
    proc = run_cli("redact", str(XID), "-o", str(out), "--map", str(map_file))
    assert proc.returncode == 0, proc.stderr
    mapping = json.loads(map_file.read_text())
    assert mapping["node-1"] == "gpu-node-2" and mapping["node-2"] == "gpu-node-1"
    assert map_file.stat().st_mode & 0o077 == 0  # it undoes the redaction: owner only
    with tarfile.open(out) as tf:
        names = tf.getnames()
        blob = b"".join(tf.extractfile(m).read() for m in tf.getmembers() if m.isfile())
    assert sorted(names) == ["device-plugin.log", "node.yaml", "scheduler.log"]
    for token, value in mapping.items():
        assert value.encode() not in blob, value
        assert token.encode() in blob, token
    # the redacted archive is a bundle like any other, with the same verdict
    a = json.loads(run_cli("analyze", str(XID), "-f", "json").stdout)
    b = json.loads(run_cli("analyze", str(out), "-f", "json").stdout)
    assert (b["primary"]["category"], b["primary"]["rule_id"]) == (
        a["primary"]["category"],
        a["primary"]["rule_id"],
    )
    assert b["node"] == "node-1"


def test_no_map_without_asking(tmp_path):
    proc = run_cli("redact", str(XID), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert "(map:" not in proc.stdout


def test_map_inside_output_is_refused(tmp_path):
    proc = run_cli(
        "redact", str(XID), "-o", str(tmp_path / "out"), "--map", str(tmp_path / "out" / "m.json")
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "inside the redacted output" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_output_inside_input_is_refused(tmp_path):
    src = tmp_path / "bundle"
    shutil.copytree(XID, src)
    proc = run_cli("redact", str(src), "-o", str(src / "redacted"))
    assert proc.returncode == 2 and "inputs are never modified" in proc.stderr
    assert sorted(p.name for p in src.iterdir()) == sorted(p.name for p in XID.iterdir())


def test_analyze_redact_outputs_hold_no_real_value(tmp_path):
    src = planted_copy(SAMPLES / "xid79-gpu-lost", tmp_path)
    for fmt in ("terminal", "json", "markdown", "html"):
        proc = run_cli("analyze", str(src), "--redact", "-f", fmt)
        assert proc.returncode == 1, proc.stderr  # the sample's fault
        for value in [*SECRETS, "gpu-node-2", "gpu-node-1"]:
            assert value not in proc.stdout, (fmt, value)
        assert "node-1" in proc.stdout
    md = run_cli("analyze", str(src), "--redact", "-f", "markdown", "--node", "gpu-node-2")
    assert md.returncode == 1 and "node `node-1`" in md.stdout, md.stderr


def test_analyze_redact_issue_text(tmp_path):
    issue = tmp_path / "issue.md"
    node = (XID / "node.yaml").read_text()
    issue.write_text(
        "# GPU lost on gpu-node-2\n\nMail me at ops.lead@acme-gpu.example.\n\n"
        f"```yaml\n{node}```\n\n```\n{(XID / 'device-plugin.log').read_text()}```\n"
    )
    plain = run_cli("analyze", str(issue), "-f", "markdown")
    red = run_cli("analyze", str(issue), "-f", "markdown", "--redact")
    assert red.returncode == plain.returncode == 1
    assert "gpu-node-2" in plain.stdout and "gpu-node-2" not in red.stdout
    assert "ops.lead@acme-gpu.example" not in red.stdout
    first = plain.stdout.splitlines()[0].replace("gpu-node-2", "node-1")
    assert red.stdout.splitlines()[0] == first


def test_map_and_redactors_need_redact(tmp_path):
    proc = run_cli("analyze", str(XID), "--map", str(tmp_path / "m.json"))
    assert proc.returncode == 2 and "need --redact" in proc.stderr


def test_archive_input_and_stdin(tmp_path):
    archive = tmp_path / "ticket.tgz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(XID, arcname="support")
    proc = run_cli("redact", str(archive), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(texts(tmp_path / "out")) == [
        "ticket/support/device-plugin.log",
        "ticket/support/node.yaml",
        "ticket/support/scheduler.log",
    ]
    proc = run_cli("redact", "-", "-o", str(tmp_path / "s"), stdin=(XID / "node.yaml").read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert "gpu-node-2" not in "".join(texts(tmp_path / "s").values())


def test_node_names_in_file_names_and_token_collisions(ruleset, tmp_path):
    """A node really named node-1 does not collide with a token: two nodes stay two."""
    src = tmp_path / "in"
    src.mkdir()
    node = (XID / "node.yaml").read_text()
    (src / "node-1.yaml").write_text(node.replace("gpu-node-2", "node-1"))
    (src / "gpu-a7.yaml").write_text(node.replace("gpu-node-2", "gpu-a7"))
    result = redact_tree(src, tmp_path / "out")
    # node-1 is taken by the original, so it is never issued; files are redacted in name order
    assert result.tokens.mapping() == {"ip-1": "10.244.3.0", "node-2": "gpu-a7", "node-3": "node-1"}
    assert sorted(texts(tmp_path / "out")) == ["node-2.yaml", "node-3.yaml"]
    _, report = analyze([str(tmp_path / "out")], ruleset)
    assert sorted(n.node for n in report.nodes) == ["node-2", "node-3"]


def test_binary_files_are_left_out(tmp_path):
    src = xid_with(tmp_path, "core.bin", b"\x00\x01gpu-node-2\x00" * 100)
    result = redact_tree(src, tmp_path / "out")
    assert not (tmp_path / "out" / "core.bin").exists()
    assert result.skipped == ["core.bin: binary, left out"]


def test_hostile_redactor_times_out(tmp_path):
    hostile = redactor_file(tmp_path, "hostile", "bad", "(?:x+x+)+y", "{redact: [xxy]}")
    src = xid_with(tmp_path, "x.txt", "x" * 5000 + "\n")
    start = time.monotonic()
    proc = run_cli("redact", str(src), "-o", str(tmp_path / "out.tgz"), "--redactors", str(hostile))
    assert time.monotonic() - start < 60
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "redactor hostile timed out on x.txt" in proc.stderr
    assert not (tmp_path / "out.tgz").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("redactors: [\n", "YAML error"),
        ("rules: []\n", "expected a mapping with a 'redactors:' list"),
        (
            "redactors:\n  - {id: x, description: d, token: t, pattern: '(', examples: {redact: [a]}}\n",
            "redactor x: bad regex",
        ),
        (
            "redactors:\n  - {id: x, description: d, token: t, pattern: 'zz', examples: {redact: [a]}}\n",
            "redactor x: did not redact its example 'a'",
        ),
        (
            "redactors:\n  - {id: x, description: d, token: T-, pattern: a, examples: {redact: [a]}}\n",
            "'token' must be lower-case",
        ),
        (
            "redactors:\n  - {id: x, description: d, token: t, regex: a}\n",
            "unknown key 'regex'",
        ),
        (
            "redactors:\n  - {id: x, description: d, token: t, pattern: a, keys: b}\n",
            "exactly one of",
        ),
    ],
)
def test_bad_redactors_file_is_one_line_exit_2(tmp_path, content, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    proc = run_cli("redact", str(XID), "-o", str(tmp_path / "o"), "--redactors", str(bad))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_user_redactors_extend_the_builtins(tmp_path):
    examples = "{redact: ['see TCK-12345'], keep: ['TCK-1']}"
    extra = redactor_file(tmp_path, "ticket-id", "ticket", r"TCK-\d{5}", examples)
    src = xid_with(tmp_path, "notes.txt", "case TCK-40417 on gpu-node-2 (172.16.40.7)\n")
    redact_tree(src, tmp_path / "out", redactors=[extra])
    # ip-1 is node.yaml's podCIDR, redacted first (files go in name order)
    assert (tmp_path / "out" / "notes.txt").read_text() == "case ticket-1 on node-1 (ip-2)\n"


IPV4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
IPV6 = st.ip_addresses(v=6).map(str)
WORD = st.from_regex(r"[a-z][a-z0-9]{2,8}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(IPV4, IPV6), min_size=1, max_size=4),
    st.lists(st.tuples(WORD, WORD), min_size=1, max_size=3),
)
def test_property_addresses_and_emails_never_survive(addresses, mails):
    """Whatever addresses and e-mails sit in a klog line, none survives (except the ones that
    name no host), the same value gets the same token in two files, and the line's wording,
    its time and the GPU UUID stay."""
    emails = [f"{a}@{b}.example" for a, b in mails]
    keep = {"0.0.0.0", "::", "::1", "255.255.255.255"}
    secret = [a for a in addresses if a not in keep and not a.startswith("127.")]
    uuid = "GPU-5f0b6a19-e2c4-4d83-b7a5-91c3d6e0f272"
    line = (
        "I0815 09:04:51.201497  412873 register.go:204] dial "
        + " ".join(f"{a} <{e}>" for a, e in zip(addresses, emails * 4, strict=False))
        + f" for {uuid}\n"
    )
    run = Redaction(load_redactors(), {}, TokenMap())
    one, two = run.text(line, "a"), run.text(line, "b")
    assert one == two
    for value in [*secret, *emails]:
        assert not whole_word(value).search(one), (value, one)
    assert one.startswith("I0815 09:04:51.201497  412873 register.go:204] dial ")
    assert one.endswith(f" for {uuid}\n")


def test_links_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("DB_PASSWORD=never-copied-anywhere\n")
    src = xid_with(tmp_path, "notes.txt", "nothing here\n")
    (src / "linked-dir").symlink_to(outside, target_is_directory=True)
    (src / "linked.txt").symlink_to(outside / "secret.txt")
    redact_tree(src, tmp_path / "out")
    assert sorted(texts(tmp_path / "out")) == [
        "device-plugin.log",
        "node.yaml",
        "notes.txt",
        "scheduler.log",
    ]


def test_a_timeout_while_writing_leaves_no_half_redacted_copy(tmp_path):
    """The hostile text is only in the second file: the first was written when the timeout came."""
    hostile = redactor_file(tmp_path, "hostile", "bad", "(?:x+x+)+y", "{redact: [xxy]}")
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("harmless\n")
    (src / "b.txt").write_text("x" * 5000 + "\n")
    dst = tmp_path / "out"
    dst.mkdir()
    with pytest.raises(AnalyzerError, match="redactor hostile timed out"):
        redact_tree(src, dst, redactors=[hostile])
    assert list(dst.iterdir()) == []


SECRET_VALUE = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_+/.!@%^-]{5,30}", fullmatch=True)
KEY_NAME = st.tuples(
    st.sampled_from(["", "db_", "DB_", "registry.", "admin-", "client"]),
    st.sampled_from(
        ["password", "PASSWORD", "token", "Token", "apiKey", "secret", "client-key-data"]
    ),
).map("".join)
SYNTAX = st.sampled_from(
    ["  {k}: {v}", "  {k}: '{v}'", "{k}={v}", 'export {k}="{v}"', '{{"{k}": "{v}"}}', "--{k}={v}"]
)


@settings(max_examples=80, deadline=None)
@given(KEY_NAME, SECRET_VALUE, SYNTAX)
def test_property_secret_values_never_survive(key, value, syntax):
    """A secret under a key named like one, in YAML, env, JSON or flag syntax, is replaced, and
    the key stays (the value's shape is not what gives it away: its key is)."""
    line = syntax.format(k=key, v=value)
    out = Redaction(load_redactors(), {}, TokenMap()).text(f"{line}\nnext line\n", "a")
    assert value not in out, (line, out)
    assert key in out and out.endswith("\nnext line\n")
