"""Redaction of files saved with CRLF line ends (Windows editors, GitHub issue bodies): every value
found in the LF form is found in the CRLF form, the map holds no `\\r`, and each line keeps its own
line end."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import PLANTED

from analyzer.redact import redact_tree
from analyzer.redact.lineends import join_ends, split_ends
from conftest import SAMPLES

SECRET = (
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n"
    "  password: c3VwZXJzZWNyZXRwYXNzd29yZA==\n  username: YWRtaW5pc3RyYXRvcg==\n"
    "stringData:\n  token: plaintoken1234567\ntype: Opaque\n"
)
SECRET_JSON = (
    '{\n  "apiVersion": "v1",\n  "kind": "Secret",\n  "data": {\n'
    '    "foo": "YmFyYmF6cXV4cXV1eA=="\n  },\n  "type": "Opaque"\n}\n'
)
SECRET_VALUES = ("c3VwZXJzZWNyZXRwYXNzd29yZA==", "YWRtaW5pc3RyYXRvcg==", "plaintoken1234567")
NODES = (
    "Name:               worker-a800-1\nRoles:              <none>\n"
    "Labels:             kubernetes.io/hostname=worker-a800-1\n"
)
POD = "Name:         vllm-0\nNamespace:    default\nNode:         worker-a800-3/10.0.3.7\n"
LOG = (
    "I0416 07:31:41.251339       1 scheduler.go:152] node worker-a800-1 device NVIDIA:"
    "&{worker-a800-3 []} leave, <nil> remaining devices:[]\n"
    "password seen again: c3VwZXJzZWNyZXRwYXNzd29yZA== and YmFyYmF6cXV4cXV1eA==\n"
)


@given(st.text(alphabet="a\r\n: ", max_size=60))
@settings(max_examples=400, deadline=None)
def test_split_then_join_gives_back_every_byte(text):
    for data in (text, text.encode()):
        stripped, ends = split_ends(data)
        cr, crlf = ("\r", "\r\n") if isinstance(data, str) else (b"\r", b"\r\n")
        assert crlf not in stripped and not stripped.endswith(cr)
        assert join_ends(stripped, ends) == data


def _redacted(tmp_path, name: str, files: dict[str, bytes]) -> tuple[dict[str, bytes], dict]:
    src, out, map_file = tmp_path / name, tmp_path / f"{name}-out", tmp_path / f"{name}.json"
    src.mkdir()
    for rel, data in files.items():
        (src / rel).write_bytes(data)
    redact_tree(src, out, map_file=map_file)
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    return written, json.loads(map_file.read_text())


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def test_a_crlf_bundle_is_redacted_as_its_lf_form(tmp_path):
    """Every sample's files with planted values, a Secret (YAML and JSON), a node and a pod
    described and a scheduler log, saved with CRLF: the output is the LF form's with CRLF, the
    map the same. (Before: the node names of `describe` and of the scheduler's log stayed, and
    the Secret's values were read with their `\\r` and left in clear in the log.)"""
    files = {"secret.yaml": SECRET, "secret.json": SECRET_JSON, "node.txt": NODES}
    files |= {"pod.txt": POD, "scheduler.log": LOG} | PLANTED
    lf = {k: v.encode() for k, v in files.items()}
    for sample in sorted(p for p in SAMPLES.iterdir() if (p / "bundle").is_dir()):
        for f in sorted((sample / "bundle").rglob("*")):
            data = f.read_bytes() if f.is_file() else b""
            if f.is_file() and b"\r" not in data and b"\0" not in data:
                lf[f"{sample.name}-{f.name}"] = data
    lf_out, lf_map = _redacted(tmp_path, "lf", lf)
    cr_out, cr_map = _redacted(tmp_path, "cr", {k: _crlf(v) for k, v in lf.items()})
    assert cr_map == lf_map
    assert not any("\r" in v for v in cr_map.values())
    assert {k: _crlf(v) for k, v in lf_out.items()} == cr_out
    for value in (*SECRET_VALUES, "worker-a800-1", "worker-a800-3", "YmFyYmF6cXV4cXV1eA=="):
        assert not any(value.encode() in v for v in cr_out.values()), value


def test_mixed_line_ends_keep_their_own_after_redaction(tmp_path):
    """A CRLF Secret pasted into an LF file (and a line of its own with a lone `\\r`): the values
    go, and every line keeps the line end it had."""
    lines = ["note: before\n", *(line + "\r\n" for line in SECRET.splitlines())]
    lines += ["progress\r50%\n", *LOG.splitlines(keepends=True)]
    out, _ = _redacted(tmp_path, "mixed", {"mixed.txt": "".join(lines).encode()})
    got = [line + "\n" for line in out["mixed.txt"].decode().split("\n")[:-1]]
    for before, after in zip(lines, got, strict=True):
        assert before.endswith("\r\n") == after.endswith("\r\n"), (before, after)
        if before.startswith("progress") or before.startswith("note"):
            assert after == before
    assert not any(v in "".join(got) for v in SECRET_VALUES)


def test_a_key_replaced_across_lines_leaves_every_other_lines_end_as_it_was(tmp_path):
    """A PEM key in CRLF inside a file of mixed line ends: its lines become one token, so the
    lines written are fewer than those read; each other line still keeps its own end (they are
    paired by content), and the token's line ends as the key's last line did."""
    key = "-----BEGIN RSA PRIVATE KEY-----\r\nMIIEpAIBAAKCAQEAplantedkeymaterial\r\n"
    key += "-----END RSA PRIVATE KEY-----\r\n"
    lines = [f"line {n}" + ("\r\n" if n % 3 == 0 else "\n") for n in range(30)]
    text = "".join(lines[:12]) + key + "".join(lines[12:])
    out, _ = _redacted(tmp_path, "pem", {"k.txt": text.encode()})
    got = out["k.txt"].decode()
    assert "planted" not in got
    assert got == "".join(lines[:12]) + "key-1\r\n" + "".join(lines[12:])


@pytest.mark.parametrize("ending", ["\r\r\n", "\r\n", "\n"])
def test_a_file_saved_twice_through_a_windows_writer_is_redacted_as_lf(tmp_path, ending):
    """`\r\r\n` (a CRLF file written again in text mode): every `\r` before the newline is a
    line end's, not the value's (the value was learnt with its `\r` and left in clear in the
    other files)."""
    files = {"secret.yaml": SECRET.replace("\n", ending).encode(), "app.log": LOG.encode()}
    out, mapping = _redacted(tmp_path, "twice", files)
    assert not any("\r" in v for v in mapping.values())
    assert not any(v.encode() in data for v in SECRET_VALUES for data in out.values())
    assert out["secret.yaml"].count(ending.encode()) == SECRET.count("\n")


def _wrapped_key() -> str:
    """A PEM key as base64 wrapped over 76-character lines (26 of them, the last shorter)."""
    import base64

    body = "".join(f"MIIEpAIBAAKCAQEA{n:04d}PLANTEDkeymaterialPLANTEDkeymat\n" for n in range(20))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\n"
    return base64.encodebytes(pem.encode()).decode()


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("shift", [None, 300, 900, 1500, 2100])
def test_a_wrapped_base64_key_is_redacted_to_its_last_line(tmp_path, monkeypatch, crlf, shift):
    """Whole (shift None) or with a 4 KiB piece boundary inside it, LF or CRLF: no line of the
    blob stays, its shorter last line included. (The cut did not see a CRLF blob's lines, which
    end in `\r`: 24 of 26 lines stayed; the pattern never took the last line.)"""
    import analyzer.redact.discover as discover

    blob = _wrapped_key()
    filler = "".join(f"note line {n}\n" for n in range(1000))
    pad = filler[: filler.rfind("\n", 0, 4096 - (shift or 0)) + 1] if shift else "note\n"
    text = f"{pad}key material:\n{blob}after: 1\n{filler}"
    text = text.replace("\n", "\r\n") if crlf else text
    monkeypatch.setattr(discover, "CHUNK", 4096 if shift else 1 << 20)
    out, _ = _redacted(tmp_path, "b64", {"notes.txt": text.encode()})
    assert [x for x in blob.splitlines() if x.encode() in out["notes.txt"]] == []


@pytest.mark.parametrize("shift", range(0, 400, 37))
def test_a_crlf_secret_cut_by_a_piece_boundary_is_redacted_whole(tmp_path, monkeypatch, shift):
    """The CRLF form of a Secret List, in 4 KiB pieces with the boundary moving through the
    item: as redacted in one piece, and no value left."""
    import analyzer.redact.discover as discover

    item = "- " + SECRET.replace("\n", "\n  ").rstrip(" ")
    filler = "".join(f"- note: line {n}\n" for n in range(400))
    pad = filler[: filler.rfind("\n", 0, 4096 - shift) + 1]
    text = _crlf(f"apiVersion: v1\nitems:\n{pad}{item}{filler}".encode())
    src, whole, cut = tmp_path / "in", tmp_path / "whole", tmp_path / "cut"
    src.mkdir()
    (src / "list.yaml").write_bytes(text)
    monkeypatch.setattr(discover, "CHUNK", 1 << 20)
    redact_tree(src, whole)
    monkeypatch.setattr(discover, "CHUNK", 4096)
    redact_tree(src, cut)
    got = (cut / "list.yaml").read_bytes()
    assert got == (whole / "list.yaml").read_bytes()
    assert got.count(b"\r\n") == text.count(b"\r\n")
    assert not any(v.encode() in got for v in SECRET_VALUES)
    shutil.rmtree(tmp_path / "whole")
