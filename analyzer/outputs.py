"""Inputs are never overwritten: every path a command writes (`-o`, `--out`, `--map`, ...) is
checked against the paths it reads before anything is written. An output that resolves to an
input (through `./`, `..` or a symlink; a hard link counts too), into an input folder, or below
an input file (an archive's own path) is refused with one line."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from analyzer.bundle.text import printable
from analyzer.errors import AnalyzerError


class OutputOnInputError(AnalyzerError):
    """An output path would replace or land inside an input."""


def _local(spec: str | os.PathLike[str] | None) -> Path | None:
    """A local path, or None for stdin (`-`), a URL (fsspec) or an option not given."""
    if spec is None:
        return None
    text = os.fspath(spec)
    if not text or text == "-" or "://" in text:
        return None
    return Path(text)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def clash(output: Path, source: Path) -> str | None:
    """How writing `output` would touch `source`, or None when it would not.

    >>> clash(Path("t/./b.tgz"), Path("t/b.tgz")), clash(Path("t/r.html"), Path("t"))
    ('is', 'is inside')
    >>> clash(Path("b.tgz/x"), Path("./b.tgz")), clash(Path("t/r.html"), Path("t/b.tgz"))
    ('is inside', None)
    """
    out, src = output.resolve(), source.resolve()
    if out == src or _same_file(output, source):
        return "is"
    if src in out.parents:
        return "is inside"
    return None


def check_outputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Iterable[str | os.PathLike[str] | None],
) -> None:
    """Refuse an output (option name -> path) that is, or is inside, one of `inputs`, or that
    is another output of the same run (stdin, URLs and options not given are left out).

    >>> check_outputs({"-o": "r.html", "--map": None}, ["in.log", "-", "s3://b/t"])
    >>> check_outputs({"-o": "in.log"}, ["./in.log"])
    Traceback (most recent call last):
    analyzer.outputs.OutputOnInputError: -o in.log is the input in.log: inputs are never modified
    """
    given = [(name, p) for name, spec in outputs.items() if (p := _local(spec)) is not None]
    sources = [p for spec in inputs if (p := _local(spec)) is not None]
    for name, out in given:
        for src in sources:
            if how := clash(out, src):
                what = "input folder" if src.is_dir() and how == "is inside" else "input"
                raise OutputOnInputError(
                    printable(f"{name} {out} {how} the {what} {src}: inputs are never modified")
                )
    for i, (name, out) in enumerate(given):
        for other, path in given[i + 1 :]:
            if clash(out, path) == "is" or clash(path, out) == "is":
                raise OutputOnInputError(
                    printable(f"{name} {out} and {other} {path} are the same file")
                )
