"""mypy with a baseline that can only shrink: `python tools/mypy_baseline.py` (run by `make test`).

The baseline (tools/mypy-baseline.txt) lists the errors mypy reported when it was adopted, one
`path: message  [code]` per line, without line numbers, so that edits elsewhere in a file do not
move them. The check fails on any error not in the baseline (a new one), and on any baseline line
mypy no longer reports (a fixed one: run with `--update` so that it cannot come back).
`analyzer/facts/`, `analyzer/rules/` and `analyzer/report/` have none and may have none: the
check fails on any baseline line in them (`CLEAN`), so an error there is fixed, not accepted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "tools" / "mypy-baseline.txt"
CLEAN = ("analyzer/facts/", "analyzer/rules/", "analyzer/report/")  # no baseline line may name them
_ERROR = re.compile(r"^(?P<path>[^:]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def current() -> Counter[str]:
    """mypy's errors on the package, as baseline lines."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "analyzer"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if proc.returncode > 1 or (proc.returncode == 1 and "error: " not in proc.stdout):
        sys.exit(f"mypy failed to run: {(proc.stderr or proc.stdout).strip()[-500:]}")
    found: Counter[str] = Counter()
    for line in proc.stdout.splitlines():
        m = _ERROR.match(line)
        if m:
            message = re.sub(r"\bline \d+", "line N", m["message"])  # "defined on line 42"
            found[f"{m['path']}: {message}"] += 1
    return found


def read_baseline() -> Counter[str]:
    lines = BASELINE.read_text(encoding="utf-8").splitlines() if BASELINE.is_file() else []
    return Counter(line for line in lines if line and not line.startswith("#"))


def write_baseline(found: Counter[str]) -> None:
    header = "# mypy errors accepted when mypy joined `make test`; it may only shrink.\n"
    BASELINE.write_text(header + "".join(f"{e}\n" for e in sorted(found.elements())), "utf-8")


def main(argv: list[str]) -> int:
    found = current()
    if "--update" in argv:
        base = read_baseline()
        if BASELINE.is_file() and found - base:
            print("refusing to add errors to the baseline; fix these first:", file=sys.stderr)
            for e in sorted((found - base).elements()):
                print(f"  {e}", file=sys.stderr)
            return 1
        write_baseline(found)
        print(f"mypy baseline: {sum(found.values())} errors")
        return 0
    base = read_baseline()
    unclean = sorted(e for e in base if e.startswith(CLEAN))
    for e in unclean:
        print(f"baseline line in a package that must stay clean: {e}", file=sys.stderr)
    new, fixed = found - base, base - found
    for e in sorted(new.elements()):
        print(f"new mypy error: {e}", file=sys.stderr)
    if fixed:
        print(
            f"{sum(fixed.values())} baseline error(s) fixed: run `python tools/mypy_baseline.py"
            " --update` to shrink the baseline",
            file=sys.stderr,
        )
    print(f"mypy: {sum(found.values())} errors, baseline {sum(base.values())}")
    return 1 if new or fixed or unclean else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
