"""Issue-bot mode: issue text in, a safe and deterministic Markdown comment out; JSON schema."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from typer.testing import CliRunner

from analyzer.analyze import AnalyzeOptions, Issue, analyze
from analyzer.bundle.issue import parse_issue
from analyzer.cli import app
from analyzer.render.jsonout import render_json
from analyzer.render.markdown import MAX_COMMENT, code_block, render_markdown, safe_text
from conftest import REPO, SAMPLES, SHARED
from contract import outside_code

GOLDEN = REPO / "tests" / "golden" / "markdown"
SCHEMA = json.loads((REPO / "analyzer" / "schema" / "diagnosis.schema.json").read_text())
SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if (p / "expected.yaml").is_file())
runner = CliRunner()


def test_issue_blocks_are_extracted():
    text = (
        "HAMi v2.9.0 on k3s. Error: `nvml init failed: ERROR_LIBRARY_NOT_FOUND`\n\n"
        "```log\nI0815 09:04:51.202341  412873 main.go:275] Start working on node n1\n```\n\n"
        "~~~~\nkind: Node\nmetadata: {name: n1}\n~~~~\n\n"
        "<details><summary>sched</summary>\n<pre><code>I1111 05:16:07.177533       1 event.go:307] "
        "&quot;Event occurred&quot;\n</code></pre></details>\n\n"
        "    indented 1\n    indented 2\n\nthanks"
    )
    issue = parse_issue(text)
    assert [n for n, _ in issue.blocks] == [
        "issue-block-01.log",
        "issue-block-02.txt",
        "issue-block-03.txt",
        "issue-block-04.txt",
    ]
    assert issue.blocks[2][1].startswith(
        'I1111 05:16:07.177533       1 event.go:307] "Event occurred"'
    )
    assert issue.blocks[3][1] == "indented 1\nindented 2"
    assert "nvml init failed" in issue.prose and "Start working" not in issue.prose


def test_a_paste_between_lone_backticks_is_a_block():
    """GitHub shows text between a backtick alone on its line and the next as code: a paste as
    good as a fenced one (a node's describe, an event table). A lone backtick never closed, or
    one whose span would cross a fence, a heading or a comment, stays prose."""
    pasted = (
        "Here is the output:\n`\nCapacity:\n  nvidia.com/gpu:  1\n`\n"
        "and the events:\n``\nEvents:\n  Warning  FailedScheduling  1m  default-scheduler  x\n``\n"
    )
    assert [b for _, b in parse_issue(pasted).blocks] == [
        "Capacity:\n  nvidia.com/gpu:  1",
        "Events:\n  Warning  FailedScheduling  1m  default-scheduler  x",
    ]
    for text, blocks in (
        ("`\n```\nkind: Node\n```\n`\nthe end\n", ["kind: Node"]),
        ("`\n### What I tried\nrebooted\n`\n", []),
        ("`\n**Comment by someone:**\nrebooted\n`\n", []),
    ):
        issue = parse_issue(text)
        assert [b for _, b in issue.blocks] == blocks, text
        assert "rebooted" in issue.prose or "the end" in issue.prose


_UNFENCED_TOML = """This is the config.toml in /var/lib/rancher/k3s/agent/etc/containerd

[plugins.cri.containerd]
  snapshotter = "overlayfs"

[plugins.cri.containerd.runtimes."nvidia"]
  runtime_type = "io.containerd.runc.v2"
[plugins.cri.containerd.runtimes."nvidia".options]
  BinaryName = "/usr/bin/nvidia-container-runtime"

From what I understand, I should create a runtimeclass."""


def test_a_toml_config_pasted_without_a_fence_is_a_block():
    """A config's table headers and keys, pasted among prose with no fence, become one block
    (read as the config it is); the sentences around it stay prose."""
    issue = parse_issue(_UNFENCED_TOML)
    assert [n for n, _ in issue.blocks] == ["issue-block-01.toml"]
    body = issue.blocks[0][1]
    assert body.startswith("[plugins.cri.containerd]\n") and body.endswith(
        'nvidia-container-runtime"'
    )
    assert "BinaryName" not in issue.prose and "I should create a runtimeclass" in issue.prose


def test_an_unfenced_config_may_end_on_a_multi_line_array():
    issue = parse_issue(
        '[plugins.cri]\n  a = 1\n[plugins.cri.registry]\n  mirrors = [\n    "x",\n  ]\n\n## Next\n'
    )
    assert [body.splitlines()[-1] for _, body in issue.blocks] == ["  ]"]
    assert "## Next" in issue.prose


@pytest.mark.parametrize(
    "prose",
    [
        "See [1] for details.\n[WARNING]\nthe plugin crashed\n",  # one header, no keys
        "a = 1 is what I tried\nb = 2\n",  # keys without a table
        "[... ...]\n[... ...]\n",  # marks of lines left out
    ],
)
def test_prose_that_looks_a_little_like_toml_stays_prose(prose):
    assert parse_issue(prose).blocks == []


_UNFENCED_LOG = """gunicorn workers hang with vgpu

The container prints this:
[2023-01-04 13:37:05 +0800] [83] [INFO] Starting gunicorn 20.1.0
predict-DO5THCMQ 10.244.154.140:8080
[4pdvGPU Msg(85:140143647065664:libvgpu.c:871)]: Initializing...
[4pdvGPU Msg(116:140143647065664:utils.c:34)]: unified_lock locked, waiting 1 second...
Any idea why?

E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND
"""


def test_log_lines_pasted_without_a_fence_are_a_block():
    """A paragraph's run of log lines is a block read as the log it is; the sentences before,
    after and between them stay prose (a sentence glued to a log line would change its text)."""
    issue = parse_issue(_UNFENCED_LOG)
    assert [n for n, _ in issue.blocks] == ["issue-block-01.log", "issue-block-02.log"]
    first = issue.blocks[0][1].splitlines()
    assert first[0].startswith("[2023-01-04") and first[-1].endswith("waiting 1 second...")
    assert len(first) == 3 and "predict-DO5THCMQ" in issue.prose
    assert issue.blocks[1][1].startswith("E0815 09:06:21.709851")
    assert "The container prints this:" in issue.prose and "Any idea why?" in issue.prose
    assert "unified_lock" not in issue.prose


def test_a_stack_after_the_last_unfenced_log_line_comes_along():
    issue = parse_issue(
        "I said:\nE0815 09:06:21.709851 1 a.go:1] panic: boom\ngoroutine 7 [running]:\n"
        "main.main()\n\t/go/src/x/main.go:9 +0x1d\n"
    )
    assert issue.blocks[0][1].splitlines()[-1] == "\t/go/src/x/main.go:9 +0x1d"
    assert "I said:" in issue.prose


def test_a_stack_under_unfenced_log_lines_comes_along():
    issue = parse_issue(
        "E0815 09:06:21.709851 1 a.go:1] panic\ngoroutine 7 [running]:\n"
        "k8s.io/apimachinery/pkg/util/runtime.handleCrash(0x1)\n\t/go/src/x/runtime.go:89 +0xee\n"
        "E0815 09:06:22.000001 1 a.go:2] again\n"
    )
    assert len(issue.blocks[0][1].splitlines()) == 5 and not issue.prose.strip()


def test_the_command_before_unfenced_log_lines_comes_along():
    """The shell command that printed the lines is read with them (a command whose output stops
    at HAMi-core's banner); a title just above log lines is no command and stays prose."""
    issue = parse_issue(
        "user@box:/srv# nvidia-smi\n[HAMI-core Msg(44:1:libvgpu.c:838)]: Initializing.....\n"
    )
    assert [b.splitlines()[0] for _, b in issue.blocks] == ["user@box:/srv# nvidia-smi"]
    for prompt in ("PS C:\\Users\\me> kubectl logs x", "me@cloudshell:~ (proj)$ kubectl logs x"):
        shelled = parse_issue(f"{prompt}\nE0815 09:06:21.709851 1 a.go:1] boom\n")
        assert shelled.blocks[0][1].splitlines()[0] == prompt, prompt
    postscript = parse_issue(
        "Hi.\n\nPS I also tried v2.4 -> same:\nE0815 09:06:21.709851 1 a.go:1] x\n"
    )
    assert "PS I also tried" in postscript.prose  # a postscript, not PowerShell's prompt
    titled = parse_issue("# plugin fails\nE0815 09:06:21.709851 1 a.go:1] boom\n")
    assert "# plugin fails" in titled.prose and titled.blocks[0][1].startswith("E0815")


def test_a_tree_in_an_indented_block_stays_whole():
    """`tree` output draws with the bars a terminal frame uses: it is a drawing, not a frame, so
    its nested lines stay in the block rather than fall into the prose."""
    tree = (
        "    /usr/local/nvidia\n    ├── bin\n    │   ├── nvidia-smi\n    │   ├── nvidia-debugdump\n"
    )
    tree += "    │   └── nvidia-persistenced\n    └── lib64\n"
    issue = parse_issue(f"The driver files:\n\n{tree}\nthanks\n")
    assert len(issue.blocks) == 1 and issue.blocks[0][1].count("\n") == 5
    assert "nvidia-smi" not in issue.prose


def test_json_log_records_pasted_without_a_fence_are_a_block():
    """A JSON logger's records (the GPU Operator's zap) are log lines of their own: a block the
    catalogue's markers can tell, not the reporter's words."""
    issue = parse_issue(
        "The operator logs:\n"
        '{"level":"info","ts":1.5,"logger":"controllers.ClusterPolicy","msg":"Not ready"}\n'
        '{"level":"error","ts":2.5,"logger":"controllers.ClusterPolicy","msg":"boom"}\n'
        "\nAny idea?\n"
    )
    assert [n for n, _ in issue.blocks] == ["issue-block-01.log"]
    assert "boom" not in issue.prose and "Any idea?" in issue.prose
    vllm = parse_issue(
        "vllm serve prints:\n"
        "INFO 05-12 10:00:00 [__init__.py:239] Automatically detected platform cuda.\n"
        "(VllmWorker rank=0 pid=412) ERROR 05-12 10:00:09 [core.py:396] CUDA error: no kernel\n"
    )
    assert len(vllm.blocks) == 1 and "no kernel" not in vllm.prose


@pytest.mark.parametrize(
    "prose",
    [
        "We upgraded on 2024-01-02.\nThen it broke.\nAnd stayed broken.\n",  # a date mid-line
        "> [4pdvGPU Warn(28:1:util.c:135)]: NVML error\n",  # a quote of an earlier post
        # one log line among three sentences of a paragraph: less than half
        "I0815 09:06:21.709851 1 a.go:1] x\nfirst\nsecond\nthird\nI0815 09:06:22.1 1 a.go:2] y\n",
    ],
)
def test_prose_with_a_few_log_like_lines_stays_prose(prose):
    assert [n for n, _ in parse_issue(prose).blocks if n.endswith(".log")] == []


def test_issue_json_payload_and_prose_version(ruleset):
    body = (
        "We run HAMi v2.7.1.\n\n```\nE0815 09:06:21.709851  412873 register.go:96] nvml Init err:  "
        "ERROR_LIBRARY_NOT_FOUND\n```\n"
    )
    event = json.dumps(
        {"action": "opened", "issue": {"title": "plugin crash", "body": body}}
    ).encode()
    report = analyze(Issue(event), AnalyzeOptions(ruleset=ruleset)).report
    d = report.worst
    assert d.primary.rule_id == "nvml-init-failed"
    assert d.version.range == "v2.7.1"


def _corpus_cases():
    corpus = SHARED / "corpus"
    return sorted(p for p in corpus.iterdir() if p.is_dir()) if corpus.is_dir() else []


@pytest.mark.skipif(not _corpus_cases(), reason="../shared/corpus not present")
@pytest.mark.parametrize("case", _corpus_cases(), ids=lambda p: p.name)
def test_rebuilt_issue_reads_the_same_artefacts(ruleset, case):
    """The real pastes, put back into an issue body: the bot sees the kinds the bundle form sees."""
    import yaml

    exp = yaml.safe_load((case / "expected.yaml").read_text())
    files = [p for p in sorted(case.iterdir()) if p.name not in ("expected.yaml", "issue.md")]
    parts = [f"# {exp['title']}\n"]
    for f in files:
        text = f.read_text()
        # a paste that already carries its own fences goes in as it is (a fence the excerpt cut
        # off is closed, as the original issue did further down)
        if sum(1 for x in text.split("\n") if x.strip().startswith("```")) % 2:
            text += "\n```"
        parts.append(
            f"Here is {f.stem}:\n\n{text}\n"
            if "```" in text
            else f"Here is {f.stem}:\n\n```\n{text}\n```\n"
        )
    from_issue = analyze(Issue("\n".join(parts).encode()), AnalyzeOptions(ruleset=ruleset)).report
    from_files = analyze([str(f) for f in files], AnalyzeOptions(ruleset=ruleset)).report

    def kinds(report):
        return {a.kind for a in report.inventory if a.kind not in ("text", "empty", "issue-text")}

    assert kinds(from_issue) == kinds(from_files)
    if from_files.primary.category != "inconclusive":  # the title may add a weak clue to nothing
        assert from_issue.primary.category == from_files.primary.category


HOSTILE = [
    "@octocat please look",
    "fixes #123 and GH-45",
    "```\nbreak out\n```",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1)) ![img](http://evil/x.png)",
    "<!-- hidden --> </details> <script>alert(1)</script>",
    "# heading\n---\n| a | b |",
    "https://evil.example/path www.evil.example",
    "$\\Huge\\textsf{VERDICT: healthy}$ and $$\\color{red}x$$",  # GitHub renders $...$ as math
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_safe_text_neutralises(payload):
    out = safe_text(payload)
    assert "\n" not in out
    assert "<" not in out and ">" not in out.replace("&gt;", "")
    assert "@octocat" not in out and "#123" not in out and "GH-45" not in out
    assert not re.search(r"(?<!\\)\]\(", out) and "![" not in out
    assert not re.search(r"(?i)(https?|javascript)://", out) and "www." not in out
    assert not out.startswith(("#", "-", "|"))
    assert not re.search(r"(?<!\\)\$", out)  # no math


def test_code_block_cannot_be_closed_from_inside():
    block = code_block("a\n```\n@octocat\n````\nb")
    fence = block.split("\n")[0].removesuffix("text")
    assert len(fence) == 5
    assert block.endswith("\n" + fence)
    assert block.count(fence) == 2


def test_hostile_issue_comment_is_inert(ruleset):
    evil = "@octocat #99 GH-7 <script>x</script> [l](javascript:x) ````"
    body = (
        f"{evil}\n\n```\nE0815 09:06:21.709851  412873 register.go:96] nvml Init err:  {evil}\n"
        f"I0815 09:04:51.202341  412873 main.go:275] Start working on node {evil}\n```\n"
    )
    report = analyze(Issue(body.encode()), AnalyzeOptions(ruleset=ruleset)).report
    md = render_markdown(report, body.encode())
    outside = outside_code(md)
    assert "@octocat" not in outside and "#99" not in outside and "GH-7" not in outside
    # the quoted line keeps its text verbatim inside its code block, and only there
    assert md.count("<script>x</script>") == 1 and "&lt;script&gt;x&lt;/script&gt;" in outside
    assert "<script>" not in outside and not re.search(r"(?<!\\)\]\(javascript", outside)
    # every fence that opens also closes
    outside_code(md)  # fails when a fence opens and never closes


def test_markdown_is_deterministic_and_bounded(ruleset):
    bundle = SAMPLES / "xid79-gpu-lost" / "bundle"
    a = runner.invoke(app, ["analyze", str(bundle), "-f", "markdown"]).stdout
    b = runner.invoke(app, ["analyze", str(bundle), "-f", "markdown"]).stdout
    assert a == b and a.rstrip("\n").split("\n")[-1].startswith(
        "<!-- hami-bundle-analyzer version="
    )
    assert len(a) <= MAX_COMMENT
    assert "XID 79" in a.split("\n")[0]  # the first line is the verdict


def test_markdown_is_cut_to_github_limit(ruleset, monkeypatch):
    """Every part is capped, so real comments stay far below 65,536 characters; the final cut is
    tested with a small limit."""
    import analyzer.render.markdown as md_mod

    report = analyze(
        [str(SAMPLES / "xid79-gpu-lost" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    full = render_markdown(report, b"x")
    assert len(full) <= MAX_COMMENT
    for limit in range(900, len(full), 37):  # cut positions inside and outside code blocks
        monkeypatch.setattr(md_mod, "MAX_COMMENT", limit)
        cut = md_mod.render_markdown(report, b"x")
        assert len(cut) <= limit < len(full)
        assert "cut to GitHub's size limit" in cut
        outside_code(cut)  # every fence closed
    assert cut.rstrip("\n").split("\n")[-1].startswith("<!-- hami-bundle-analyzer version=")


GOLDEN_SAMPLES = [
    "healthy-single-gpu",
    "annotation-health-omitted",
    "rbac-patch-forbidden",
    "cdi-unresolvable",
]


@pytest.mark.parametrize("name", GOLDEN_SAMPLES)
def test_markdown_golden(ruleset, name):
    report = analyze([str(SAMPLES / name / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    md = render_markdown(report, b"golden")
    golden = (GOLDEN / f"{name}.md").read_text()

    def norm(s):  # the rules digest changes with any rule edit; the wording is what is reviewed
        return re.sub(r"rules[= ][0-9a-f]{12}", "rules=X", s)

    assert norm(md) == norm(golden)


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_json_validates_against_schema(ruleset, sample):
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    doc = json.loads(render_json(report))
    jsonschema.validate(doc, SCHEMA)
    assert doc["primary"] == doc["nodes"][0]["primary"]  # the top level is the worst node


def test_cli_from_issue_stdin():
    body = "```\nE0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n```\n"
    res = runner.invoke(app, ["analyze", "--from-issue", "-", "-f", "markdown"], input=body)
    assert res.exit_code == 1
    assert "nvml-init-failed" in res.stdout


def _next_steps(md: str) -> tuple[int, int, int]:
    """(verdict headings, fix steps, checklist items) of the comment's visible part."""
    visible = outside_code(md.split("<details>")[0])
    headings = len(re.findall(r"^### ", visible, flags=re.M))
    fixes = len(re.findall(r"^\d+\. ", visible, flags=re.M))
    checklist = len(re.findall(r"^- \[ \] ", visible, flags=re.M))
    return headings, fixes, checklist


@pytest.mark.parametrize("sample", SAMPLE_DIRS, ids=lambda p: p.name)
def test_comment_is_one_verdict_and_at_most_three_next_steps(ruleset, sample):
    """Issue 20: one verdict, its evidence, at most three next steps; the rest under Details."""
    report = analyze([str(sample / "bundle")], AnalyzeOptions(ruleset=ruleset)).report
    headings, fixes, checklist = _next_steps(render_markdown(report, b"x"))
    assert headings <= len(report.nodes)
    assert fixes + checklist <= 3 * len(report.nodes)
    if len(report.nodes) == 1:
        assert fixes + checklist <= 3


def test_unconfident_verdict_leads_with_collect_and_one_item(ruleset):
    """Evidence missing and the verdict not confident: `hami-analyzer collect` first, then the
    single most useful item, and one step of the verdict's fix."""
    text = "HAMi 2.4.1, pod pending:\n\n```\n0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n```\n"
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
    assert report.primary.confidence != "high"
    md = render_markdown(report, text.encode())
    headings, fixes, checklist = _next_steps(md)
    assert (headings, fixes, checklist) == (1, 1, 2)
    first_item = md.split("- [ ] ", 1)[1]
    assert first_item.split("\n", 1)[0].startswith("Everything at once: run hami-analyzer collect")
    assert "More findings:" in md.split("<details>")[1]
