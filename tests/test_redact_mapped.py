"""The first pass's mapped pieces (analyzer/redact/mapped.py): a map read as the piece's bytes
would be, the worker processes' use of it, and a file cut short under a map."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analyzer.redact.discover as discover
import analyzer.redact.lines as lines_module
import analyzer.redact.mapped as mapped
from analyzer.redact.mapped import MappedPiece
from analyzer.redact.redactors import load_redactors

LINE = st.text(st.sampled_from("ab\n\r-é:ř"), max_size=40).map(lambda t: t.encode())


@settings(max_examples=200, deadline=None)
@given(before=st.binary(max_size=9000).map(lambda b: b.replace(b"\n", b"x") + b"\n"), body=LINE)
def test_property_a_mapped_piece_reads_as_its_bytes(tmp_path_factory, before, body):
    """Whatever the piece's offset in its first page, its length, slices, searches, ASCII check
    and text are those of its bytes."""
    body += b"\n"
    path = tmp_path_factory.mktemp("m") / "log"
    path.write_bytes(before + body)
    piece = MappedPiece.of(str(path), len(before), len(before) + len(body))
    assert piece is not None
    try:
        assert len(piece) == len(body) and piece[:] == body and piece[3:-2] == body[3:-2]
        for sub in (b"\n", b"\r", b"a", b"-:"):
            assert (sub in piece) == (sub in body)
            assert piece.find(sub) == body.find(sub)
            assert piece.find(sub, 2, 9) == body.find(sub, 2, 9)
            assert piece.rfind(sub, 1, len(body) - 1) == body.rfind(sub, 1, len(body) - 1)
        assert piece.endswith(b"\n") and piece.endswith(body[-3:]) == body.endswith(body[-3:])
        assert piece.isascii() == body.isascii()
        assert piece.decode("utf-8", "surrogateescape") == body.decode("utf-8", "surrogateescape")
        assert bytes(mapped.buffer_of(piece)) == body
    finally:
        piece.close()


def test_what_a_mapped_piece_does_not_answer_it_refuses(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"one\ntwo\n")
    piece = MappedPiece.of(str(path), 4, 8)
    assert piece is not None
    try:
        assert piece[:] == b"two\n"
        for key in (slice(None, None, -1), slice(0, 4, 2), 0):
            with pytest.raises(TypeError):
                piece[key]  # type: ignore[index]
    finally:
        piece.close()


def test_a_range_that_does_not_end_a_line_is_not_mapped(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"one\ntwo")
    assert MappedPiece.of(str(path), 0, 7) is None  # the last line has no newline
    assert MappedPiece.of(str(path), 1, 4) is None  # starts inside a line


def _big_log(tmp_path):
    log = tmp_path / "device-plugin.log"
    log.write_bytes(
        b"".join(
            b"I0815 09:04:51.2 2071 util.go:76] Start working on node gpu-%d 10.1.%d.9\n"
            % (i % 7, i % 250)
            for i in range(4000)
        )
    )
    return [discover.SourceFile(log.name, log)], log


def _small_pieces(monkeypatch):
    monkeypatch.setattr(discover, "CHUNK", 1 << 13)
    monkeypatch.setattr(discover, "HYPERSCAN_MIN", 1 << 12)
    monkeypatch.setattr(lines_module, "HYPERSCAN_MIN", 1 << 12)


@pytest.mark.skipif(sys.platform != "linux", reason="worker processes are forked on Linux only")
def test_worker_processes_map_their_pieces_and_learn_what_threads_learn(tmp_path, monkeypatch):
    _small_pieces(monkeypatch)
    sources, _log = _big_log(tmp_path)
    monkeypatch.setattr(discover, "FORK_MIN", 1 << 40)
    expected = discover.discover(sources, load_redactors())
    parent, real = os.getpid(), mapped.mapped_range
    marks = tmp_path / "mapped-in"
    marks.mkdir()

    def remembered(path, start, end):
        (marks / f"{os.getpid()}-{start}").touch()
        return real(path, start, end)

    monkeypatch.setattr(mapped, "mapped_range", remembered)
    monkeypatch.setattr(discover, "FORK_MIN", 0)
    assert discover.discover(sources, load_redactors()) == expected
    pids = {int(p.name.split("-")[0]) for p in marks.iterdir()}
    assert pids and parent not in pids  # the workers mapped, the command never did


@pytest.mark.skipif(sys.platform != "linux", reason="worker processes are forked on Linux only")
def test_a_log_cut_short_under_a_workers_map_ends_the_pass_without_an_error(tmp_path, monkeypatch):
    """The worker that reads the lost pages dies (SIGBUS); the command reads what is left."""
    _small_pieces(monkeypatch)
    sources, log = _big_log(tmp_path)
    parent, real = os.getpid(), mapped.mapped_range
    size = log.stat().st_size

    def cut_after_mapping(path, start, end):
        got = real(path, start, end)
        if os.getpid() != parent and got is not None and start > size // 2:
            os.truncate(path, start - got[1])  # the map's pages gone, the earlier ones kept
        return got

    monkeypatch.setattr(mapped, "mapped_range", cut_after_mapping)
    monkeypatch.setattr(discover, "FORK_MIN", 0)
    found = discover.discover(sources, load_redactors())
    assert 0 < log.stat().st_size < size
    assert "gpu-3" in found.names  # learnt from the pieces before the cut


def test_without_numpy_the_workers_leave_their_pieces_to_the_command(tmp_path, monkeypatch):
    """numpy is optional beside Hyperscan: without it no piece is mapped or studied by Hyperscan,
    and the first pass learns what it learns in threads."""
    import analyzer.parse.bytescan as bytescan
    import analyzer.redact.hyper as hyper

    _small_pieces(monkeypatch)
    sources, _log = _big_log(tmp_path)
    for module in (mapped, hyper, bytescan, lines_module):
        monkeypatch.setattr(module, "np", None)
    hyper.line_filter.cache_clear()
    try:
        monkeypatch.setattr(discover, "FORK_MIN", 1 << 40)
        expected = discover.discover(sources, load_redactors())
        monkeypatch.setattr(discover, "FORK_MIN", 0)
        assert discover.discover(sources, load_redactors()) == expected
    finally:
        hyper.line_filter.cache_clear()
