"""Reading inputs: directories, archives, stdin, and hostile archives."""

from __future__ import annotations

import gzip
import hashlib
import tarfile
import zipfile

import pytest

from analyzer.bundle.reader import Limits, open_bundle
from analyzer.errors import BundleError
from conftest import write_tar

LOG = b"I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-2\n"


def _names(reader):
    return sorted(f.name for f in reader.inventory.files)


def test_directory_and_loose_files(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "dp.log").write_bytes(LOG)
    (tmp_path / "node.yaml").write_text("kind: Node\n")
    with open_bundle([str(tmp_path)]) as r:
        assert _names(r) == ["logs/dp.log", "node.yaml"]


def test_tgz_zip_and_gz_members(tmp_path):
    write_tar(
        tmp_path / "b.tgz", {"a/dp.log.gz": gzip.compress(LOG), "a/node.yaml": b"kind: Node\n"}
    )
    with zipfile.ZipFile(tmp_path / "b.zip", "w") as zf:
        zf.writestr("sched.log", LOG)
    with open_bundle([str(tmp_path / "b.tgz"), str(tmp_path / "b.zip")]) as r:
        names = _names(r)
        assert (
            "b.tgz!a/dp.log" in names
            and "b.tgz!a/node.yaml" in names
            and "b.zip!sched.log" in names
        )
        dp = next(f for f in r.inventory.files if f.name == "b.tgz!a/dp.log")
        assert dp.path.read_bytes() == LOG
        assert dp.mtime == 1786000000


def test_inputs_are_not_modified(tmp_path):
    write_tar(tmp_path / "b.tar.gz", {"dp.log": LOG})
    before = hashlib.sha256((tmp_path / "b.tar.gz").read_bytes()).hexdigest()
    with open_bundle([str(tmp_path)]):
        pass
    assert hashlib.sha256((tmp_path / "b.tar.gz").read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz"]


def test_path_traversal_member_is_refused(tmp_path):
    write_tar(tmp_path / "evil.tgz", {"../../etc/passwd": b"x"})
    with pytest.raises(BundleError, match=r"unsafe archive member name '\.\./\.\./etc/passwd'"):
        with open_bundle([str(tmp_path / "evil.tgz")]):
            pass


def test_absolute_zip_member_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as zf:
        zf.writestr("/abs/file.log", LOG)
    with pytest.raises(BundleError, match="unsafe archive member"):
        with open_bundle([str(tmp_path / "evil.zip")]):
            pass


def test_links_and_devices_are_not_followed(tmp_path):
    with tarfile.open(tmp_path / "l.tar", "w") as tf:
        sym = tarfile.TarInfo("link")
        sym.type = tarfile.SYMTYPE
        sym.linkname = "/etc/shadow"
        tf.addfile(sym)
        hard = tarfile.TarInfo("hard")
        hard.type = tarfile.LNKTYPE
        hard.linkname = "link"
        tf.addfile(hard)
        dev = tarfile.TarInfo("dev")
        dev.type = tarfile.CHRTYPE
        tf.addfile(dev)
    with open_bundle([str(tmp_path / "l.tar")]) as r:
        assert r.inventory.files == []
        assert len([w for w in r.inventory.warnings if "not followed" in w.text]) == 3


def test_member_count_limit(tmp_path):
    write_tar(tmp_path / "many.tgz", {f"f{i}.log": b"x" for i in range(30)})
    with pytest.raises(BundleError, match="more than 10 files"):
        with open_bundle([str(tmp_path / "many.tgz")], Limits(max_members=10)):
            pass


def test_gzip_bomb_hits_size_limit(tmp_path):
    (tmp_path / "bomb.log.gz").write_bytes(gzip.compress(b"\0" * (8 << 20)))
    with pytest.raises(BundleError, match="uncompressed size exceeds 1 MiB"):
        with open_bundle([str(tmp_path / "bomb.log.gz")], Limits(max_total_bytes=1 << 20)):
            pass


def test_tar_gz_counts_its_bytes_once(tmp_path):
    """700 KiB of members in a .tar.gz fit a 1 MiB cap (they were counted as the decompressed
    tar and again as members), and a tar.gz bomb still hits it."""
    write_tar(tmp_path / "b.tgz", {"dp.log": LOG * 9000})  # ~700 KiB
    with open_bundle([str(tmp_path / "b.tgz")], Limits(max_total_bytes=1 << 20)) as r:
        assert _names(r) == ["b.tgz!dp.log"]
    write_tar(tmp_path / "bomb.tgz", {"zeros": b"\0" * (8 << 20)})
    with pytest.raises(BundleError, match="uncompressed size exceeds 1 MiB"):
        with open_bundle([str(tmp_path / "bomb.tgz")], Limits(max_total_bytes=1 << 20)):
            pass


def test_nested_archive_depth(tmp_path):
    inner = tmp_path / "inner.tgz"
    write_tar(inner, {"dp.log": LOG})
    write_tar(tmp_path / "outer.tgz", {"inner.tgz": inner.read_bytes()})
    with open_bundle([str(tmp_path / "outer.tgz")]) as r:
        assert _names(r) == ["outer.tgz!inner.tgz!dp.log"]
    with open_bundle([str(tmp_path / "outer.tgz")], Limits(max_depth=1)) as r:
        assert any("nested too deep" in w.text for w in r.inventory.warnings)


def test_corrupt_bundle_archive_is_an_input_error(tmp_path):
    """The bundle itself cut short: analysing the part that survived would mislead."""
    (tmp_path / "bad.tgz").write_bytes(gzip.compress(bytes(range(256)) * 64)[:300])
    with pytest.raises(BundleError, match="truncated or corrupt gzip archive"):
        with open_bundle([str(tmp_path / "bad.tgz")]):
            pass


def test_corrupt_archive_inside_the_bundle_is_a_warning(tmp_path):
    (tmp_path / "bad.tgz").write_bytes(gzip.compress(bytes(range(256)) * 64)[:300])
    write_tar(tmp_path / "b.tar", {"dp.log": LOG}, mode="w")
    with tarfile.open(tmp_path / "b.tar", "a") as tf:
        tf.add(tmp_path / "bad.tgz", arcname="inner.tgz")
    with open_bundle([str(tmp_path / "b.tar")]) as r:
        assert any("inner.tgz: truncated or corrupt gzip" in w.text for w in r.inventory.warnings)
        assert [f.name for f in r.inventory.files] == ["b.tar!dp.log"]


def test_missing_path_is_one_line_error(tmp_path):
    with pytest.raises(BundleError, match="no such file or directory"):
        with open_bundle([str(tmp_path / "nope")]):
            pass


def test_temp_folder_removed(tmp_path):
    write_tar(tmp_path / "b.tgz", {"dp.log": LOG})
    with open_bundle([str(tmp_path / "b.tgz")]) as r:
        tmp = r.tmp
        assert tmp.exists()
    assert not tmp.exists()


def test_a_folder_of_plain_files_needs_no_temp_folder(tmp_path, monkeypatch):
    """Only what is extracted or cut is written: a folder of plain files is read where TMPDIR
    cannot be written, and an archive there is refused with one line that names TMPDIR."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "dp.log").write_bytes(LOG)
    write_tar(tmp_path / "b.tgz", {"dp.log": LOG})
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "missing"))
    with open_bundle([str(tmp_path / "in")]) as r:
        assert _names(r) == ["dp.log"]
        assert r._tmp is None
    with pytest.raises(BundleError, match=r"cannot create a temporary folder .*TMPDIR"):
        with open_bundle([str(tmp_path / "b.tgz")]):
            pass
