"""Property-based fuzzing (hypothesis): whatever a user pastes, the analyzer either diagnoses it or
rejects it with an AnalyzerError (a one-line message); it never raises anything else.

The texts are built from fragments of what the real inputs contain (klog headers, YAML keys,
describe sections, HAMi annotation values, fences, prompts), so the search reaches the parsers
and not only the "unrecognised" path."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st

from analyzer.analyze import analyze_parsed
from analyzer.dev.samples import annotation_spec
from analyzer.errors import AnalyzerError
from conftest import parse_texts
from contract import assert_contract
from fuzzing import RUNS, fuzz_cases

FRAGMENTS = [
    "I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-1",
    "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND",
    'I0815 09:06:38.531066       1 event.go:377] "Event occurred" object="default/p" reason="FilteringFailed" message="1 nodes CardInsufficientMemory(gpu-1)"',
    "apiVersion: v1",
    "kind: Node",
    "kind: Pod",
    "metadata:",
    "  name: gpu-1",
    "  annotations:",
    "    hami.io/node-handshake: Requesting_2026-08-10 11:00:00",
    '    hami.io/node-nvidia-register: \'[{"id":"GPU-1","count":10,"devmem":24564,"health":true}]\'',
    "    hami.io/node-nvidia-register: GPU-1,10,40960,100,NVIDIA-NVIDIA A100,0,true:",
    "status:",
    "  allocatable:",
    '    nvidia.com/gpu: "10"',
    "Name:               gpu-1",
    "Namespace:          default",
    "Capacity:",
    "  nvidia.com/gpu:     8",
    "Allocatable:",
    "Allocated resources:",
    "  nvidia.com/gpu     1            1",
    "Events:",
    "  Warning  FailedScheduling  12s  default-scheduler  0/6 nodes are available: 6 Insufficient nvidia.com/gpu.",
    "```",
    "```yaml",
    "$ kubectl logs -n kube-system hami-device-plugin-x -c device-plugin",
    'Defaulted container "device-plugin" out of: device-plugin, vgpu-monitor',
    '[plugins."io.containerd.grpc.v1.cri".containerd]',
    '  default_runtime_name = "nvidia"',
    "{",
    "[{",
    "- name: x",
    "NAME   READY   STATUS   RESTARTS   AGE",
    "hami-device-plugin-x   1/2   CrashLoopBackOff   5   3m",
    "",
]

texts = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), min_size=0, max_size=40
).map("\n".join)
names = st.sampled_from(["node.yaml", "device-plugin.log", "paste.txt", "issue.md", "x"])
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(files=st.dictionaries(names, texts, min_size=1, max_size=3))
def test_any_paste_is_diagnosed_or_rejected_cleanly(ruleset, files):
    """Mixed fragments of real inputs never crash the pipeline."""
    try:
        report = analyze_parsed(parse_texts(ruleset, files), ruleset)
    except AnalyzerError as exc:
        assert "\n" not in str(exc).strip()
        return
    assert report.nodes
    for node in report.nodes:
        assert node.primary.category


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_are_diagnosed_or_rejected_cleanly(ruleset, data):
    """Binary junk gets a finding or a one-line error, never an exception."""
    try:
        analyze_parsed(parse_texts(ruleset, {"node.yaml": data}), ruleset)
    except AnalyzerError as exc:
        assert "\n" not in str(exc).strip()


@settings(max_examples=400, deadline=None)
@given(value=st.one_of(st.text(max_size=200), st.sampled_from(FRAGMENTS)))
def test_register_and_handshake_decoding_never_raise(value):
    """Any annotation value decodes to a status (ok, invalid, empty...), never an exception."""
    spec = annotation_spec()
    reg = spec.decode_register("hami.io/node-nvidia-register", value)
    assert reg.status
    hs = spec.decode_handshake("hami.io/node-handshake", value)
    assert hs.state


# `make test` runs a seeded minute at most; `make fuzz SEED=n EXAMPLES=n` the same for longer
FUZZ_SEED = int(os.environ.get("HAMI_FUZZ_SEED", "13"))
FUZZ_EXAMPLES = int(os.environ.get("HAMI_FUZZ_EXAMPLES", "200"))


@seed(FUZZ_SEED)
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(case=fuzz_cases, run=st.sampled_from(RUNS))
def test_mutated_bundles_and_issues_keep_the_contract(case, run):
    """Mutated samples and issue texts along the failure classes of issues 13 and 23, through
    `analyze` (every format, and redacted), `timeline`, `inspect` and `batch`: exit 0/1/2/4, no
    traceback, one-line errors, bounded time and memory, inputs untouched, no character a
    terminal acts on, and valid, inert JSON/HTML/Markdown."""
    command, fmt, check = RUNS[0] if case.options and run[0][0] != "analyze" else run
    note(case.label)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = case.write(Path(tmp) / "in")
        options = [o.replace("{out}", str(Path(tmp) / "out")) for o in case.options]
        if case.command:  # a case with its own command line (batch)
            args = [*case.command, *map(str, inputs), *options]
            assert_contract(args, inputs, case.check)
            return
        args = [*command, *map(str, inputs), *options, "--format", fmt]
        assert_contract(args, inputs, check)
