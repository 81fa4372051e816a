"""Redaction's figures for `make bench` (not part of the test suite): `redact` of a bundle to a
.tar.gz and to a folder against `analyze` of the same bundle, in the same run, median of `runs`."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# (command) -> (wall seconds, peak RSS in KiB, the finished process): analyzer.dev.bench's _peak_of
Timed = Callable[[list[str]], tuple[float, int, subprocess.CompletedProcess]]


@dataclass(frozen=True)
class RedactionFigures:
    mb: float  # bytes of the bundle's files / 1e6
    analyze_s: float
    archive_s: float  # redact -o x.tar.gz
    folder_s: float  # redact -o folder
    archive_peak_mib: float
    folder_peak_mib: float

    def lines(self) -> list[str]:
        gb = self.mb / 1000
        return [
            f"redaction of {self.mb:,.0f} MB, against analyze ({self.analyze_s:.2f} s):",
            f"  redact -o x.tar.gz  {self.archive_s:7.2f} s  {self.archive_s / gb:6.1f} s/GB  "
            f"{self.archive_s / self.analyze_s:.2f}x analyze  peak RSS {self.archive_peak_mib:.0f} MiB",
            f"  redact -o folder    {self.folder_s:7.2f} s  {self.folder_s / gb:6.1f} s/GB  "
            f"{self.folder_s / self.analyze_s:.2f}x analyze  peak RSS {self.folder_peak_mib:.0f} MiB",
            "  target: at most 2x analyze, memory flat",
        ]


def bench_redaction(
    cli: list[str], bundle: Path, work: Path, runs: int = 3, timed: Timed | None = None
) -> RedactionFigures:
    """Time `cli redact BUNDLE -o work/...` (archive and folder) and `cli analyze BUNDLE -f json`,
    alternating, `runs` times each; outputs are removed after each run."""
    if timed is None:
        from analyzer.dev.bench import _peak_of as timed
    work.mkdir(parents=True, exist_ok=True)
    archive, folder = work / "redacted.tar.gz", work / "redacted"
    rows: dict[str, list[tuple[float, int]]] = {"analyze": [], "archive": [], "folder": []}
    for _ in range(runs):
        for key, cmd in (
            ("analyze", [*cli, "analyze", str(bundle), "--format", "json"]),
            ("archive", [*cli, "redact", str(bundle), "-o", str(archive)]),
            ("folder", [*cli, "redact", str(bundle), "-o", str(folder)]),
        ):
            wall, peak, proc = timed(cmd)
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr[-500:]}")
            rows[key].append((wall, peak))
            archive.unlink(missing_ok=True)
            shutil.rmtree(folder, ignore_errors=True)
    mb = sum(p.stat().st_size for p in Path(bundle).rglob("*") if p.is_file()) / 1e6

    def median(key: str) -> float:
        return statistics.median(w for w, _ in rows[key])

    def peak(key: str) -> float:
        return max(p for _, p in rows[key]) / 1024

    return RedactionFigures(
        mb, median("analyze"), median("archive"), median("folder"), peak("archive"), peak("folder")
    )
