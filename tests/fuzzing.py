"""Hypothesis strategies that mutate the sample bundles and issue texts along the lines of the
failure classes of issues 13 and 23: wrong value types and out-of-range values at any path of the
Node and Pod objects (YAML 1.1 base-60 numbers and long indents included), alias bombs, times
outside Python's range in logs, broken and odd archives (member times, names, compression methods,
truncation, raw tar headers: pax/GNU extended headers of any size and number, base-256 and
negative sizes), files of many documents (the same node again and again, long Lists), terminal
control sequences in every field that reaches a terminal (log lines, object names and values,
file and member names), special files (FIFOs, /dev/zero, sockets) among bundle and batch inputs,
compressed logs, and issue Markdown storms (`<pre>`, fences) and hostile event JSON. A drawn
`FuzzCase` writes its input under a folder and names the command line that feeds it to
`hami-analyzer`."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import socket
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import yaml
from hypothesis import strategies as st

from conftest import SAMPLES

SAMPLE_DIRS = sorted(p / "bundle" for p in SAMPLES.iterdir() if (p / "bundle").is_dir())
# (the command and its options, --format, the output check of contract.py)
RUNS = [(("analyze",), f, f) for f in ("json", "html", "markdown", "terminal")] + [
    (("analyze", "--redact"), "markdown", "markdown"),
    (("analyze", "--redact"), "json", "json"),
    (("timeline",), "csv", "csv"),
    (("inspect",), "json", "inspect-json"),
]

# values of the wrong type or out of range, as YAML text (so .nan and 1e309 reach the parser)
HOSTILE_SCALARS = [
    ".nan",
    ".inf",
    "1e309",
    "-1e309",
    "9" * 5000,
    "true",
    "null",
    "[a, b]",
    "{a: {b: [1, 2]}}",
    "''",
    "'0000-01-01T00:00:00Z'",
    "'0001-01-01T00:00:00+14:00'",
    "'9999-12-31T23:59:59-14:00'",
    "'<script>alert(1)</script> @octocat #12'",
    '\'[{"id":"GPU-1","count":NaN,"devmem":Infinity,"devcore":1e309,"health":true}]\'',
    "'GPU-1,10,99999999999999999999999999,100,NVIDIA,0,true:'",
    "[" * 200 + "]" * 200,
    # YAML 1.1 base-60 numbers (quadratic to convert) and a tag that insists on one
    ":".join(["1"] * 20_000),
    ":".join(["1"] * 2_000) + ".5",
    "!!int 1:2:3",
    "!!float 1:30.5",
    # what a terminal acts on, in names and values that reach it (YAML escapes: YAML refuses the
    # raw characters, which is hostile input too: the byte mutations bring those)
    r'"\e]52;c;aGVsbG8=\e\\ node"',
    r'"\e]8;;https://x.invalid/\e\\link\e]8;;\e\\"',
    r'"\x9b31m\ec\b\b\r\u202e"',
]
# terminal control sequences: OSC 52 and 8 ended by ST, BEL-ended OSC, RIS, C1 CSI, CSI,
# backspaces and a carriage return
TERMINAL_SEQUENCES = [
    "\x1b]52;c;aGVsbG8=\x1b\\",
    "\x1b]8;;https://x.invalid/\x1b\\link\x1b]8;;\x1b\\",
    "\x1b]0;title\x07",
    "\x1bc",
    "\x9b31m",
    "\x1b[2J\x1b[H",
    "ok\x08\x08\r",
    "\u202e",
]
HOSTILE_LOG_LINES = [
    "0000-08-15T09:04:51.000000000Z I0815 09:04:51.202341       1 main.go:275] start",
    "9999-12-31T23:59:59.999999999Z E0815 09:06:21.709851       1 register.go:96] nvml Init err",
    "I1345 99:99:99.999999       1 x.go:1] month 13",
    "E0230 25:61:61.000000       1 x.go:1] 30 February",
    "\x00\x01\x02 binary \xff",
    "x" * 200_000,
    'I0815 09:04:51.202341       1 util.go:1] "Event occurred" message="' + "{" * 500,
    # long lines that send a signature regex into backtracking
    "E0815 09:06:21.709851  412873 x.go:96] Failed to initialize NVML: " + " " * 30_000 + "x",
    "I0815 09:06:38.531066 1 event.go:377] FilteringFailed " + " " * 30_000 + "x",
    *(
        f"E0815 09:06:21.709851  412873 register.go:96] nvml Init err {seq} after"
        for seq in TERMINAL_SEQUENCES
    ),
]


@dataclass(frozen=True)
class FuzzCase:
    """What to write and how to call the CLI on it: `options` after the inputs, and a `command`
    with its output `check` (contract.CHECKS) when the case needs its own (`batch`); `{out}` in
    the options is a fresh output folder."""

    label: str
    write: Callable[[Path], list[Path]]  # writes the input under a folder, returns its paths
    options: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    check: str = ""


def _sample_with(source: Path, data: bytes, root: Path) -> list[Path]:
    """A copy of `source`'s sample bundle under root, with `source` replaced by data."""
    bundle = root / "bundle"
    bundle.mkdir(parents=True)
    for f in source.parent.iterdir():
        (bundle / f.name).write_bytes(data if f == source else f.read_bytes())
    return [bundle]


# ---- structured mutations -------------------------------------------------------------------
def key_paths(doc, prefix=()) -> list[tuple]:
    """Every key path and list index in a loaded document."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += key_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += key_paths(v, (*prefix, i))
    return out


_PLACEHOLDER = "__HAMI_FUZZ_VALUE__"


def with_value(doc, path: tuple, yaml_value: str) -> str:
    """The document with the value at path replaced by raw YAML text (dumped, then substituted,
    since .nan, 1e309 or a 5,000-digit integer cannot all round-trip through a dump)."""
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = _PLACEHOLDER
    text = yaml.safe_dump(doc, sort_keys=False, width=1 << 20)
    return text.replace(_PLACEHOLDER, yaml_value.replace("\n", " "))


def _structured_files() -> list[Path]:
    out = []
    for d in SAMPLE_DIRS:
        for f in sorted(d.iterdir()):
            if f.suffix in (".yaml", ".yml", ".json") and "kind:" in f.read_text()[:4000]:
                out.append(f)
    return out


STRUCTURED = _structured_files()


@st.composite
def mutated_object(draw) -> FuzzCase:
    """One value of a sample's Node/Pod/config object replaced by a hostile one."""
    source = draw(st.sampled_from(STRUCTURED))
    doc = yaml.safe_load(source.read_text())
    paths = key_paths(doc)
    path = draw(st.sampled_from(paths)) if paths else ()
    value = draw(st.sampled_from(HOSTILE_SCALARS))
    text = with_value(doc, path, value) if path else value

    label = f"{source.parent.parent.name}/{source.name} {path} = {value[:40]}"
    return FuzzCase(label, partial(_sample_with, source, text.encode()))


@st.composite
def alias_bomb(draw) -> FuzzCase:
    levels, width = draw(st.integers(3, 9)), draw(st.integers(2, 9))
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    where = draw(st.sampled_from(["labels", "annotations", "capacity"]))
    section = {"capacity": "status"}.get(where, "metadata")
    node = (
        "\n".join(lines)
        + f"\napiVersion: v1\nkind: Node\n{section}:\n  name: gpu-1\n  {where}: *a{levels}\n"
    )

    def write(root: Path) -> list[Path]:
        root.mkdir(parents=True)
        (root / "node.yaml").write_text(node)
        return [root / "node.yaml"]

    return FuzzCase(f"alias bomb {width}^{levels} in {where}", write)


# ---- logs -----------------------------------------------------------------------------------
LOGS = [f for d in SAMPLE_DIRS for f in sorted(d.iterdir()) if f.suffix == ".log"]


@st.composite
def mutated_log(draw) -> FuzzCase:
    """Hostile lines spliced into a sample log, which may also be cut at any byte."""
    source = draw(st.sampled_from(LOGS))
    lines = source.read_bytes().split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.sampled_from(HOSTILE_LOG_LINES)).encode("utf-8", "surrogatepass"))
    data = b"\n".join(lines)
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    data = data if cut is None else data[:cut]

    label = f"{source.parent.parent.name}/{source.name} spliced, cut at {cut}"
    return FuzzCase(label, partial(_sample_with, source, data))


@st.composite
def byte_mutated(draw) -> FuzzCase:
    """Any sample file with bytes flipped, inserted, deleted or a slice repeated, as a classic
    mutation fuzzer does: reaches the recognisers and parsers with near-valid input."""
    source = draw(st.sampled_from([f for d in SAMPLE_DIRS for f in sorted(d.iterdir())]))
    data = bytearray(source.read_bytes())
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "insert", "delete", "repeat"]))
        if op == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 256))] * draw(st.integers(2, 50))
    label = f"{source.parent.parent.name}/{source.name} byte-mutated"
    return FuzzCase(label, partial(_sample_with, source, bytes(data)))


# ---- archives -------------------------------------------------------------------------------
@st.composite
def odd_archive(draw) -> FuzzCase:
    """A sample packed as tar, tar.gz or zip with odd member times and names, a member marked
    with an unsupported compression method, or the archive cut short."""
    sample = draw(st.sampled_from(SAMPLE_DIRS))
    kind = draw(st.sampled_from(["tar", "tar.gz", "zip"]))
    mtime = draw(st.sampled_from([0, -1, 10**12, 2**33, 1_755_000_000]))
    odd_name = draw(
        st.sampled_from(["", "\udcf6", "\x1b[31m", "\u202e", "../", *TERMINAL_SEQUENCES])
    )
    cut = draw(st.one_of(st.none(), st.floats(0.05, 0.95)))
    deflate64 = kind == "zip" and draw(st.booleans())
    files = {f.name: f.read_bytes() for f in sorted(sample.iterdir())}

    def pack() -> bytes:
        buf = io.BytesIO()
        if kind == "zip":
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, data in files.items():
                    zf.writestr(odd_name.replace("\udcf6", "x").replace("../", "") + name, data)
            raw = bytearray(buf.getvalue())
            if deflate64:  # method 9 in the first local header and its central entry
                raw[8:10] = (9).to_bytes(2, "little")
                central = raw.find(b"PK\x01\x02")
                raw[central + 10 : central + 12] = (9).to_bytes(2, "little")
            return bytes(raw)
        with tarfile.open(fileobj=buf, mode="w:gz" if kind == "tar.gz" else "w") as tf:
            for name, data in files.items():
                info = tarfile.TarInfo(odd_name + name)
                info.size, info.mtime = len(data), mtime
                tf.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def write(root: Path) -> list[Path]:
        root.mkdir(parents=True)
        raw = pack()
        raw = raw if cut is None else raw[: int(len(raw) * cut)]
        target = root / f"bundle.{kind}"
        target.write_bytes(raw)
        return [target]

    label = f"{sample.parent.name} as {kind}, mtime {mtime}, name {odd_name!r}, cut {cut}"
    return FuzzCase(label + (", deflate64" if deflate64 else ""), write)


# ---- issues ---------------------------------------------------------------------------------
def _issue_blocks(sample: Path) -> list[str]:
    return [f.read_text(errors="replace")[:6000] for f in sorted(sample.iterdir())]


@st.composite
def hostile_issue(draw) -> FuzzCase:
    """A sample pasted into an issue (fenced, in <pre>, indented), with storms and hostile
    markup around it, as Markdown or as a GitHub event JSON (maybe deeply nested or with
    an integer Python will not convert)."""
    sample = draw(st.sampled_from(SAMPLE_DIRS))
    parts = []
    for text in _issue_blocks(sample):
        wrap = draw(st.sampled_from(["fence", "pre", "indent", "bare"]))
        if wrap == "fence":
            parts.append(f"```\n{text}\n```")
        elif wrap == "pre":
            parts.append(f"<pre><code>{text.replace('<', '&lt;')}</code></pre>")
        elif wrap == "indent":
            parts.append("\n".join("    " + line for line in text.split("\n")))
        else:
            parts.append(text)
    storm = draw(st.sampled_from(["", "<pre>", "```\nx\n```\n", "<details>", "@octocat #1 "]))
    parts.append(storm * draw(st.integers(0, 6000)))
    parts.append("<script>alert(1)</script> [x](javascript:alert(1)) GH-1 @someone")
    body = "\n\n".join(parts)[:65_535]
    form = draw(st.sampled_from(["markdown", "event", "nested event", "huge number"]))
    if form == "markdown":
        name, data = "issue.md", body
    elif form == "event":
        name, data = "event.json", json.dumps({"issue": {"title": "GPU", "body": body}})
    elif form == "nested event":
        depth = draw(st.integers(1000, 200_000))
        name, data = (
            "event.json",
            '{"issue": {"body": "x", "n": ' + "[" * depth + "]" * depth + "}}",
        )
    else:
        name = "event.json"
        data = '{"issue": {"number": ' + "7" * 5000 + ", " + json.dumps({"body": body})[1:] + "}"

    def write(root: Path) -> list[Path]:
        root.mkdir(parents=True)
        (root / name).write_text(data)
        return [root / name]

    return FuzzCase(
        f"{sample.parent.name} issue ({form}, storm {storm[:10]!r})", write, ("--from-issue",)
    )


# ---- issue 23: raw tar headers ---------------------------------------------------------------
def _tar_header(name: bytes, size_field: bytes, kind: bytes) -> bytes:
    """A raw ustar header with any size field (tarfile writes only sound ones)."""
    block = bytearray(512)
    block[0 : len(name[:100])] = name[:100]
    block[100:108] = b"0000644\0"
    block[124:136] = size_field.ljust(12, b"\0")[:12]
    block[136:148] = b"14572306400\0"
    block[156:157] = kind
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def _octal(n: int) -> bytes:
    return f"{n:011o}".encode() + b"\0"


def _pax_record(n: int) -> bytes:
    """One well-formed pax record (`LEN path=VALUE\\n`) of about n bytes."""
    body = f" path={'p' * max(1, n - 20)}\n"
    length = next(len(body) + d for d in range(1, 9) if len(str(len(body) + d)) == d)
    return f"{length}{body}".encode()


EXTENDED_PAYLOADS = {
    "digits": lambda n: b"0" * n,
    "far =": lambda n: (b"3 x" * (n // 3 + 1))[:n],
    "pax record": _pax_record,
    "name": lambda n: b"n" * n,
}


@st.composite
def raw_tar_headers(draw) -> FuzzCase:
    """A sample as a tar written header by header, with pax (`x`, `g`, Solaris `X`) and GNU long
    name (`L`, `K`) headers of any size and number before its members, sizes in octal, base-256
    or negative, and the whole maybe gzip/xz/bzip2-compressed and cut."""
    sample = draw(st.sampled_from(SAMPLE_DIRS))
    files = {f.name: f.read_bytes() for f in sorted(sample.iterdir())}
    kinds = st.sampled_from([b"x", b"g", b"X", b"L", b"K"])
    sizes = st.sampled_from([0, 1, 100, 4096, 16 << 10, (16 << 10) + 1, 100_000, 400_000])
    payloads = st.sampled_from(sorted(EXTENDED_PAYLOADS))
    headers = draw(st.lists(st.tuples(kinds, sizes, payloads), min_size=1, max_size=12))
    encoding = draw(st.sampled_from(["octal", "base-256", "negative", "garbage"]))
    chain_length = draw(st.sampled_from([1, 1, 1, 20, 3000]))
    compression = draw(st.sampled_from(["none", "gzip", "xz", "bz2"]))
    cut = draw(st.one_of(st.none(), st.floats(0.05, 0.95)))

    def size_field(n: int) -> bytes:
        if encoding == "base-256" and n > 100:
            return b"\x80" + n.to_bytes(11, "big")
        if encoding == "negative" and n > 100:
            return b"\xff" * 12
        if encoding == "garbage" and n > 100:
            return b"12x4\0"
        return _octal(n)

    def pack() -> bytes:
        out = bytearray()
        for kind, n, payload in headers:
            data = EXTENDED_PAYLOADS[payload](n)
            one = _tar_header(b"././@LongLink", size_field(len(data)), kind)
            one += data + b"\0" * (-len(data) % 512)
            out += one * (chain_length if kind == b"x" and n < 100 else 1)
        for name, data in files.items():
            out += _tar_header(name.encode(), _octal(len(data)), b"0")
            out += data + b"\0" * (-len(data) % 512)
        raw = bytes(out + b"\0" * 1024)
        return {
            "none": lambda b: b,
            "gzip": gzip.compress,
            "xz": lzma.compress,
            "bz2": bz2.compress,
        }[compression](raw)

    def write(root: Path) -> list[Path]:
        root.mkdir(parents=True)
        raw = pack()
        raw = raw if cut is None else raw[: int(len(raw) * cut)]
        target = root / "bundle.tar"
        target.write_bytes(raw)
        return [target]

    shown = ", ".join(f"{k.decode()}:{n}:{p}" for k, n, p in headers)
    label = f"{sample.parent.name} tar with [{shown}] x{chain_length}, {encoding}, {compression}"
    return FuzzCase(label + f", cut {cut}", write)


# ---- issue 23: files of many documents, long indents ----------------------------------------
@st.composite
def many_documents(draw) -> FuzzCase:
    """A sample's node.yaml as many documents (the same node again and again, or each renamed),
    or as a `kind: List` of many items, maybe with a line of thousands of spaces then `- x`, in
    the bundle or pasted in an issue."""
    sample = draw(st.sampled_from([d for d in SAMPLE_DIRS if (d / "node.yaml").exists()]))
    node = (sample / "node.yaml").read_text()
    n = draw(st.sampled_from([2, 50, 51, 300, 1000]))
    same = draw(st.booleans())
    form = draw(st.sampled_from(["documents", "list"]))
    indent = draw(st.sampled_from([0, 0, 3000, 10_000]))
    where = draw(st.sampled_from(["bundle", "issue"]))
    name = yaml.safe_load(node)["metadata"]["name"]
    docs = [
        node if same else node.replace(f"name: {name}", f"name: {name}-{i}", 1) for i in range(n)
    ]
    if form == "documents":
        text = "---\n".join(docs)
    else:
        items = "".join("- " + "\n  ".join(d.rstrip("\n").split("\n")) + "\n" for d in docs)
        text = f"apiVersion: v1\nitems:\n{items}kind: List\n"
    text += (" " * indent + "- x\n") if indent else ""
    label = f"{sample.parent.name} node.yaml as {n} {form} ({'same' if same else 'renamed'}), indent {indent}, in {where}"
    node_file = sample / "node.yaml"
    if where == "bundle":
        return FuzzCase(label, partial(_sample_with, node_file, text.encode()))

    def write(root: Path) -> list[Path]:
        root.mkdir(parents=True)
        (root / "issue.md").write_text(f"```yaml\n{text[:60_000]}\n```\n")
        return [root / "issue.md"]

    return FuzzCase(label, write, ("--from-issue",))


# ---- issue 23: special files, compressed logs, names with terminal sequences -----------------
def _special(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    else:  # a symbolic link to a FIFO
        os.mkfifo(path.with_name(path.name + ".target"))
        path.symlink_to(path.name + ".target")


SPECIAL_KINDS = ["fifo", "dev-zero", "socket", "link-to-fifo"]


@st.composite
def special_inputs(draw) -> FuzzCase:
    """A sample bundle beside special files (a FIFO, a symlink to /dev/zero, a socket, a link to
    a FIFO), a log of it compressed with gzip/bzip2/xz/zstd (maybe cut), a file name holding a
    terminal sequence; analysed as a folder, or as tickets of a `batch` run where the special
    files are tickets themselves."""
    sample = draw(st.sampled_from(SAMPLE_DIRS))
    specials = draw(st.lists(st.sampled_from(SPECIAL_KINDS), min_size=1, max_size=3, unique=True))
    logs = sorted(f for f in sample.iterdir() if f.suffix == ".log")
    compress = draw(st.sampled_from(["none", "gz", "bz2", "xz", "zst"])) if logs else "none"
    cut = draw(st.one_of(st.none(), st.floats(0.1, 0.9)))
    sequence = draw(st.sampled_from(["", *TERMINAL_SEQUENCES]))
    batch = draw(st.integers(0, 3)) == 0

    def packed(data: bytes) -> bytes:
        if compress == "zst":
            import zstandard

            out = zstandard.ZstdCompressor().compress(data)
        else:
            out = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[compress](data)
        return out if cut is None else out[: max(1, int(len(out) * cut))]

    def write(root: Path) -> list[Path]:
        bundle = root / "tickets" / "bundle" if batch else root / "bundle"
        bundle.mkdir(parents=True)
        for f in sorted(sample.iterdir()):
            name = f.name.replace(".", sequence.replace("/", "|") + ".", 1) if sequence else f.name
            if compress != "none" and f == logs[0]:
                (bundle / f"{name}.{compress}").write_bytes(packed(f.read_bytes()))
            else:
                (bundle / name).write_bytes(f.read_bytes())
        for kind in specials:
            _special(kind, (bundle.parent if batch else bundle) / f"special-{kind}")
        return [root / "tickets"] if batch else [bundle]

    label = f"{sample.parent.name} beside {specials}, log {compress} cut {cut}, name {sequence!r}"
    if batch:
        options = ("--out", "{out}", "-j", "1", "--bundle-timeout", "60")
        return FuzzCase(label + " (batch)", write, options, ("batch",), "batch")
    return FuzzCase(label, write)


fuzz_cases = st.one_of(
    mutated_object(),
    alias_bomb(),
    mutated_log(),
    byte_mutated(),
    odd_archive(),
    hostile_issue(),
    raw_tar_headers(),
    many_documents(),
    special_inputs(),
)


# ---- planted secrets (issue 23, redaction leaks) ----------------------------------------------
# Not a FuzzCase: a sample bundle with identifiers and secrets planted in every form a redaction
# leak was found in; the redaction tests check that none of them survives, in any file or name.

NODE_NAME = st.from_regex(r"[a-z][a-z0-9]{2,6}-[a-z0-9]{1,4}(?:-[0-9]{1,3})?", fullmatch=True)
SECRET = st.from_regex(r"[A-Za-z0-9]{6}[A-Za-z0-9+/]{6,18}", fullmatch=True)
ACCOUNT = st.integers(10**11, 10**12 - 1).map(str)
GUID = st.uuids().map(str)


@st.composite
def planted_secrets(draw) -> tuple[dict[str, bytes], list[str]]:
    """(files of a bundle, the planted values): a sample with a node renamed to a drawn name that
    is then joined to words by -, in file names, an FQDN, a journal's host column, the device
    plugin's flags and env, an RBAC error; a Secret's data (YAML or JSON) and a base64 PEM key;
    Azure and GCP identities, AWS accounts (key=value, ECR); helm registry credentials."""
    import base64
    import re

    from hypothesis import assume

    sample = draw(st.sampled_from(SAMPLE_DIRS))
    files = {f.name: f.read_bytes() for f in sorted(sample.iterdir())}
    node, domain = draw(NODE_NAME), draw(st.sampled_from(["", ".dc1.acme.example"]))
    name = node + domain
    everything = b"".join(files.values())
    assume(node.encode() not in everything)
    named = re.search(rb"(?m)^  name: ([\w.-]+)", files.get("node.yaml", b""))
    if named:  # the sample's node renamed, wherever it is named
        word = re.compile(rb"(?<![A-Za-z0-9])" + re.escape(named.group(1)) + rb"(?![A-Za-z0-9])")
        files = {k: word.sub(name.encode(), v) for k, v in files.items()}
    else:
        files["nodes.txt"] = f"{name}   Ready   <none>   41d   v1.30.4\n".encode()
    planted = [name]
    forms = draw(
        st.lists(
            st.sampled_from(["joined", "journal", "plugin", "secret", "cloud", "helm"]),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    if "joined" in forms:
        files[f"device-plugin-{name}.log"] = (
            f"kube-apiserver-{name} 1/1 Running\n{name}-x\n".encode()
        )
    if "journal" in forms:
        host = draw(NODE_NAME.filter(lambda h: h != node))
        files["kubelet.log"] = (
            f"Aug 15 09:04:51 {host} kubelet[2071]: I0815 09:04:51.2 2071 "
            f"kubelet_node_status.go:76] Successfully registered node {host}\n"
        ).encode()
        planted.append(host)
    if "plugin" in forms:
        alone = draw(NODE_NAME.filter(lambda h: h != node))
        form = draw(
            st.sampled_from(
                [
                    f'I0815 09:04:51.2 1 flags.go:36] FLAG: --node-name="{alone}"',
                    f"NODE_NAME={alone}",
                    f'E0815 09:04:51.5 1 register.go:307] patch node error  nodes "{alone}" is forbidden',
                ]
            )
        )
        files["plugin-alone.log"] = f"{form}\nI0815 09:05:00.1 1 x.go:1] {alone} ok\n".encode()
        planted.append(alone)
    if "secret" in forms:
        value, pem_body = draw(SECRET), draw(SECRET)
        pem = f"-----BEGIN PRIVATE KEY-----\nMIIE{pem_body}\n-----END PRIVATE KEY-----\n"
        key64 = base64.b64encode(pem.encode()).decode()
        if draw(st.booleans()):
            files["secret.yaml"] = (
                f"apiVersion: v1\ndata:\n  token: {value}\n  tls.key: {key64}\nkind: Secret\n"
            ).encode()
        else:
            doc = {"apiVersion": "v1", "data": {"a.b": value, "tls.key": key64}, "kind": "Secret"}
            files["secret.json"] = json.dumps(doc, indent=draw(st.sampled_from([2, 4]))).encode()
        files["values.yaml"] = f"webhook:\n  caBundleKey: {key64}\n".encode()
        planted += [value, key64, pem_body]
    if "cloud" in forms:
        tenant, client, account, ecr = draw(GUID), draw(GUID), draw(ACCOUNT), draw(ACCOUNT)
        project = draw(NODE_NAME)
        files["azure.json"] = json.dumps({"tenantId": tenant, "aadClientId": client}).encode()
        files["sa.json"] = json.dumps({"project_id": project, "client_id": account}).encode()
        files["pod.txt"] = (
            f"image: {ecr}.dkr.ecr.us-east-1.amazonaws.com/hami:v2.10.0\naccount={account}\n"
        ).encode()
        planted += [tenant, client, account, ecr, project]
    if "helm" in forms:
        user, password = draw(SECRET), draw(SECRET)
        files["helm-values.yaml"] = (
            "imagePullSecrets:\n  - registry: harbor.acme.example\n"
            f"    username: {user}\n    password: {password}\n"
        ).encode()
        planted += [user, password, "harbor.acme.example"]
    return files, planted
