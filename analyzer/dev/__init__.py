"""Developer tools, shipped in the wheel but needed by no user command except `dev score` and
`rules test`.

- `score`: the corpus scorer behind `hami-analyzer dev score CORPUS`;
- `selftest`: every rule's own cases and every signature's examples, behind `hami-analyzer
  rules test` (each case is a whole analysis, so it sits above `analyze`, with the commands);
- `synth`: synthetic ticket folders for batch tests and the batch benchmark;
- `bench`: the benchmark (`python -m analyzer.dev.bench`, `make bench`);
- `samples`: tiny in-memory inputs for the facts producers' docstring examples, which load the
  rules and scan, so they sit above the stages they illustrate;

`synth` and `bench` build on the checkout's `sample_bundles/`, which a wheel does not carry:
`sample_bundles()` finds them or says so in one line.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.errors import AnalyzerError

CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root when run from a checkout


def sample_bundles(path: Path | None = None) -> Path:
    """The sample bundles folder: `path` if given, else the checkout's `sample_bundles/`."""
    where = path if path is not None else CHECKOUT / "sample_bundles"
    if not where.is_dir():
        raise AnalyzerError(
            f"no sample bundles at {where}: run from a checkout of hami-bundle-analyzer"
            " or pass the sample_bundles folder"
        )
    return where
