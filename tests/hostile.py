"""Minimal hostile inputs, one per class of failure the fuzz run of issue 13 found.

Each builder writes its input under a folder and returns the command-line arguments that feed it
to `hami-analyzer`; the tests run every case through the real console script and hold it to the
contract (an exit status the README documents, one line on stderr, no traceback, no hang)."""

from __future__ import annotations

import datetime as dt
import io
import json
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

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
