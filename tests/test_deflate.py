"""gzip through ISA-L or through the standard library (analyzer/deflate.py): each reads and writes
the same streams, and a corrupt stream is the same input error either way."""

from __future__ import annotations

import gzip
import io
import sys

import pytest

from analyzer import deflate
from analyzer.bundle.reader import open_bundle
from analyzer.errors import BundleError
from conftest import write_tar

LOG = b"I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-2\n" * 4000
# a gzip member whose first deflate block has the reserved type (BTYPE 11): not a truncation, not
# a checksum (zlib says "invalid block type", ISA-L raises its own error, which is no OSError)
BAD_BLOCK = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\x07" + bytes(64)


@pytest.fixture(params=["isal", "stdlib"])
def backend(request, monkeypatch):
    """Each test runs with python-isal and as where it has no wheel (its import refused)."""
    if request.param == "isal":
        pytest.importorskip("isal")
    else:
        monkeypatch.setitem(sys.modules, "isal", None)
    return request.param


def test_every_member_of_a_stream_is_read(backend):
    """`cat a.gz b.gz` is one gzip stream of two members (RFC 1952), as the redacted archive is."""
    stream = gzip.compress(LOG) + deflate.compressed(b"tail\n") + gzip.compress(b"")
    with deflate.inflating(io.BytesIO(stream)) as src:
        assert src.read() == LOG + b"tail\n"


def test_the_compressor_writes_one_member_standard_gzip_reads(backend):
    z = deflate.compressor()
    parts = [z.compress(LOG[:1000]), z.compress(LOG[1000:]), z.flush()]
    member = b"".join(parts)
    assert gzip.decompress(member) == LOG
    assert len(member) < len(LOG) // 10  # a log's repeated lines shrink
    assert deflate.compressed(LOG) == deflate.compressed(LOG)  # the same bytes every run


def test_a_tgz_is_read_whole(backend, tmp_path):
    write_tar(tmp_path / "b.tgz", {"dp.log": LOG, "node.yaml": b"kind: Node\n"})
    with open_bundle([str(tmp_path / "b.tgz")]) as r:
        got = {f.name: f.path.read_bytes() for f in r.inventory.files}
    assert got == {"b.tgz!dp.log": LOG, "b.tgz!node.yaml": b"kind: Node\n"}


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda good: BAD_BLOCK, id="reserved-block-type"),
        pytest.param(lambda good: good[: len(good) // 2], id="cut-short"),
        pytest.param(lambda good: good[:-8] + bytes(8), id="checksum"),
    ],
)
def test_a_corrupt_bundle_is_one_input_error(backend, tmp_path, damage):
    good = write_tar(tmp_path / "good.tgz", {"dp.log": LOG}).read_bytes()
    (tmp_path / "bad.tgz").write_bytes(damage(good))
    with pytest.raises(BundleError, match="truncated or corrupt gzip archive"):
        with open_bundle([str(tmp_path / "bad.tgz")]):
            pass


def test_a_corrupt_archive_inside_the_bundle_is_a_warning(backend, tmp_path):
    outer = write_tar(tmp_path / "b.tar", {"dp.log": LOG, "inner.tgz": BAD_BLOCK}, mode="w")
    with open_bundle([str(outer)]) as r:
        assert [f.name for f in r.inventory.files] == ["b.tar!dp.log"]
        assert any("inner.tgz: truncated or corrupt gzip" in w.text for w in r.inventory.warnings)
