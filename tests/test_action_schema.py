"""action.yml and every workflow the docs show, validated against GitHub's schemas by
`action-validator` (npm @action-validator/cli, offline; .ci/run installs it), and action.yml kept
in step with the bot: every input reaches the bot step, every output is one the bot writes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from analyzer.bot.decide import Decision
from analyzer.bot.run import Outcome
from conftest import REPO

VALIDATOR = shutil.which("action-validator")
needs_validator = pytest.mark.skipif(
    VALIDATOR is None,
    reason="action-validator is not installed (.ci/run: npm install -g @action-validator/cli)",
)
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
_YAML_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.M | re.S)


def doc_workflows() -> list[tuple[str, str]]:
    """(doc:n, text) of every YAML block in docs/*.md and README.md that is a workflow."""
    out = []
    for md in sorted([*REPO.glob("docs/*.md"), REPO / "README.md"]):
        for i, m in enumerate(_YAML_BLOCK.finditer(md.read_text(encoding="utf-8")), 1):
            doc = yaml.safe_load(m[1])
            if isinstance(doc, dict) and "jobs" in doc:
                out.append((f"{md.name}:{i}", m[1]))
    return out


def _validate(path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [VALIDATOR, str(path)], capture_output=True, text=True, timeout=60, cwd=path.parent
    )


@needs_validator
def test_action_yml_is_valid():
    res = _validate(REPO / "action.yml")
    assert res.returncode == 0, res.stdout + res.stderr


@needs_validator
@pytest.mark.parametrize(("where", "text"), doc_workflows(), ids=[w for w, _ in doc_workflows()])
def test_doc_workflows_are_valid(tmp_path, where, text):
    path = tmp_path / "workflow.yml"
    path.write_text(text)
    res = _validate(path)
    assert res.returncode == 0, f"{where}: {res.stdout}{res.stderr}"


@needs_validator
def test_validator_rejects_a_broken_workflow(tmp_path):
    """The check can fail: a misspelt step key is reported."""
    path = tmp_path / "workflow.yml"
    path.write_text(
        "on: issues\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n        wiht: {fetch-depth: 1}\n"
    )
    assert _validate(path).returncode != 0


def test_docs_show_workflows_that_use_the_action():
    uses = [t for _, t in doc_workflows() if "hami-bundle-analyzer@v1" in t]
    assert len(uses) >= 2  # a public repository and a private support repository


def test_every_input_reaches_the_bot_step():
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "bot"]
    used = set(re.findall(r"inputs\.([\w-]+)", yaml.safe_dump(ACTION["runs"])))
    assert set(ACTION["inputs"]) == used
    env_names = {k for k in step["env"] if k.startswith("INPUT_")}
    bot_inputs = {
        "rules",
        "min-confidence",
        "comment-when",
        "labels",
        "comment-authors",
        "bot-login",
        "max-bytes",
        "redact",
        "dry-run",
    }
    assert {f"INPUT_{n.upper().replace('-', '_')}" for n in bot_inputs} == env_names
    # each is an environment variable the `bot` command reads (rules comes as --rules)
    cli = (REPO / "analyzer" / "cli.py").read_text()
    read = set(re.findall(r'envvar="(INPUT_\w+)"', cli))
    assert env_names - {"INPUT_RULES"} <= read


def test_outputs_are_the_bots():
    decision = Decision("healthy", "", "high", "healthy", True, False, frozenset(), "")
    written = Outcome(decision, "en", "silent", "").outputs()
    assert set(ACTION["outputs"]) == set(written)
    for name, spec in ACTION["outputs"].items():
        assert spec["value"] == f"${{{{ steps.bot.outputs.{name} }}}}"


def _rule_cache_key(action_path, workspace, rules: str) -> dict[str, str]:
    """The outputs of action.yml's rule-cache key step, run by bash as a runner would."""
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "rule-cache"]
    out = workspace / "github_output"
    out.write_text("")
    env = dict(
        os.environ,
        GITHUB_ACTION_PATH=str(action_path),
        GITHUB_WORKSPACE=str(workspace),
        GITHUB_OUTPUT=str(out),
        INPUT_RULES=rules,
        PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
    )
    res = subprocess.run(["bash", "-c", step["run"]], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return dict(line.split("=", 1) for line in out.read_text().splitlines())


def test_the_rule_cache_follows_the_installed_analyzer_and_the_custom_rules(tmp_path):
    """The cached rule sets are kept under a key that changes with the analyzer's code or rules
    and with the custom rules' folder, and with nothing else."""
    action = tmp_path / "action"
    for part in ("analyzer/catalogue", "rules/signatures"):
        (action / part).mkdir(parents=True)
    (action / "pyproject.toml").write_text('version = "0.1.0"\n')
    (action / "analyzer/catalogue/kinds.py").write_text("KINDS = 1\n")
    (action / "rules/signatures/a.yaml").write_text("signatures: []\n")
    workspace = tmp_path / "ws"
    (workspace / "my-rules").mkdir(parents=True)
    (workspace / "my-rules/mine.yaml").write_text("rules: []\n")
    first = _rule_cache_key(action, workspace, "")
    assert first["dir"].endswith("/hami-bundle-analyzer")
    assert _rule_cache_key(action, workspace, "") == first
    (action / "analyzer/catalogue/__pycache__").mkdir()
    (action / "analyzer/catalogue/__pycache__/kinds.pyc").write_bytes(b"\0")
    assert _rule_cache_key(action, workspace, "") == first  # bytecode is no change
    custom = _rule_cache_key(action, workspace, "my-rules")
    assert custom["key"] != first["key"]
    (workspace / "my-rules/mine.yaml").write_text("rules: [] # edited\n")
    assert _rule_cache_key(action, workspace, "my-rules")["key"] != custom["key"]
    (action / "rules/signatures/a.yaml").write_text("signatures: [] # a new release\n")
    assert _rule_cache_key(action, workspace, "")["key"] != first["key"]
    cache = [s for s in ACTION["runs"]["steps"] if s.get("uses", "").startswith("actions/cache")]
    assert any("steps.rule-cache.outputs.key" in s["with"]["key"] for s in cache)
    assert any(s["with"]["path"] == "${{ steps.rule-cache.outputs.dir }}" for s in cache)
