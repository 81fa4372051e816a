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

from conftest import REPO
from fake_github import FakeGitHub

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


def run_action(gh: FakeGitHub, tmp_path: Path, title: str, body: str, **inputs: str):
    """The bot step on an `issues` event for issue NUMBER; its outputs as a dict."""
    gh.repo.issues.setdefault(NUMBER, {"title": title, "body": body, "labels": set()})
    gh.repo.issues[NUMBER].update(title=title, body=body)
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "action": "edited",
                "issue": {"number": NUMBER, "title": title, "body": body, "labels": []},
                "repository": {"full_name": FULL_NAME},
            }
        )
    )
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
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_REPOSITORY": FULL_NAME,
        **{k: _resolve(v, inputs) for k, v in step["env"].items()},
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

        body = "HAMi vGPU: pods requesting nvidia.com/gpu stay Pending on our node, no logs yet."
        gh.repo.requests.clear()
        _, outputs = run_action(gh, tmp_path, "pods pending", body, labels=LABELS)
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
        assert [m for m, _, _ in gh.repo.requests] == ["GET"]  # the comments, nothing more
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
