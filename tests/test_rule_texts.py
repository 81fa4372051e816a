"""What a rule says to do matches the command it gives: a fix whose text promises a change comes
with a command that makes it, and a command that only looks at something is introduced as such
(a reader who runs the command after "Set runtimeClassName..." expects the change to be made).
Titles and fix texts read as sentences in `rules list` and name the plugin whose log it is."""

from __future__ import annotations

import re
import shlex

import pytest

from analyzer.render.rulepage import preview
from analyzer.rules.loader import load_ruleset

RULES = load_ruleset()
STEPS = [
    (r.id, i, s)
    for r in sorted(RULES.rules.values(), key=lambda r: r.id)
    for i, s in enumerate(r.remediation)
]
# commands (and kubectl/helm/... subcommands) that only look
READERS = {
    "cat",
    "lsmod",
    "dmesg",
    "grep",
    "head",
    "jq",
    "journalctl",
    "ls",
    "lsof",  # lists open files, never changes them
    "uname",
    "ldd",
    "nvidia-smi",
    "ps",
    "ss",  # socket statistics: lists, never changes
    "findmnt",  # lists mounts, never changes them
    "tail",
    "tr",
    "awk",
    "sort",
    "kubectl get",
    "kubectl describe",
    "kubectl logs",
    "kubectl auth",
    "kubectl version",
    "kubectl top",
    "kubectl rollout status",
    "kubectl explain",  # prints an API field's documentation
    "containerd config",
    "nvidia-ctk cdi list",
    "oc get",
    "oc logs",
    "oc adm release info",  # prints a release's image pull specs
    "nvidia-container-cli",
    "az vm",
    "helm get",
    "helm list",
    "helm search",  # lists a repository's charts
    "npu-smi info",  # the Ascend driver's status, as nvidia-smi's
    "ausearch",  # searches the audit log
    "getsebool",  # prints an SELinux boolean
    "lspci",  # lists PCI devices
    "modinfo",  # prints a kernel module's fields
    "docker manifest inspect",  # prints an image's manifest list from its registry
    "docker info",  # prints the daemon's settings
}
READING_TEXT = re.compile(
    r"(?:^|: |^then )(?:on (?:the node|k3s or docker nodes), )?(?:check|read|see|find|list|compare"
    r"|confirm|look|inspect|which|is |who|watch|attach|collect|run the same check)|only reads",
    re.IGNORECASE,
)


def _programs(command: str) -> list[str]:
    """The program (with its subcommand for kubectl, helm, az, nvidia-ctk) of each part of a
    shell line (quotes respected: a `|` inside a grep pattern is no pipe)."""
    lexer = shlex.shlex(
        re.sub(r"\{[%{].*?[%}]\}", "X", command), posix=True, punctuation_chars=True
    )
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    for token in lexer:
        if token in {"|", "||", "&&", ";", "&"}:
            parts.append([])
        else:
            parts[-1].append(token)
    out = []
    for words in parts:
        words = [w for w in words if not w.startswith("-") and w not in (">", "<")]
        if not words:
            continue
        if words[:2] == ["docker", "exec"] and len(words) > 3:  # what runs in the container
            inner = words[3:]
            if inner[0] in ("sh", "bash") and len(inner) > 1:
                out += _programs(inner[1])
            else:
                out += _programs(" ".join(inner))
        elif (
            words[0]
            in ("kubectl", "helm", "az", "nvidia-ctk", "containerd", "npu-smi", "docker", "oc")
            and len(words) > 1
        ):
            n = 3 if words[1] in ("rollout", "cdi", "runtime", "system", "manifest") else 2
            n = 4 if words[1] == "adm" else n
            out.append(" ".join(words[:n]))
        else:
            out.append(words[0])
    return out


def _reads_only(command: str) -> bool:
    return all(
        p in READERS or any(p.startswith(r + " ") for r in READERS) for p in _programs(command)
    )


@pytest.mark.parametrize(("rule", "index", "step"), STEPS, ids=[f"{r}-{i}" for r, i, _ in STEPS])
def test_a_fix_does_what_it_says(rule, index, step):
    assert step.command, f"{rule}: step {index + 1} promises something but gives no command"
    text = preview(step.text)
    if _reads_only(step.command):
        assert READING_TEXT.search(text), (
            f"{rule}: step {index + 1} only reads ({step.command[:60]}...) but its text reads as "
            f"a change: {text!r} (say it checks, or give the command that makes the change)"
        )
    else:
        assert "only reads" not in text, f"{rule}: step {index + 1} changes something"


def test_read_only_detection():
    assert _reads_only("kubectl get runtimeclass nvidia")
    assert _reads_only("containerd config dump | grep -E 'default_runtime_name'")
    assert not _reads_only("kubectl get pod p -o yaml | kubectl replace --force -f -")
    assert not _reads_only("helm upgrade hami hami-charts/hami --reuse-values")
    assert not _reads_only("nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml")
    assert _reads_only("nvidia-ctk cdi list")
    assert _reads_only("docker manifest inspect nvcr.io/nvidia/k8s-device-plugin:v0.17.0")
    assert not _reads_only("docker manifest push registry.local/plugin:v1")
    assert _reads_only("docker exec kind-worker sh -c 'nvidia-smi -L; grep nvidia /proc/mounts'")
    assert not _reads_only("docker exec kind-worker umount -R /proc/driver/nvidia")
    assert _reads_only("oc get nodes; oc adm release info --image-for=driver-toolkit")
    assert not _reads_only("oc adm release extract --to=/tmp/release")


@pytest.mark.parametrize("rule", sorted(r for r in RULES.rules if RULES.rules[r].zh))
def test_chinese_fix_says_when_it_only_reads(rule):
    r = RULES.rules[rule]
    for step, zh in zip(r.remediation, r.zh.remediation, strict=True):
        if "only reads" in step.text:
            assert "仅查看" in zh, f"{rule}: {zh!r} should say it only reads, as the English does"


def test_titles_list_as_sentences():
    """`rules list` shows every title with <placeholders>, never template code."""
    for r in RULES.rules.values():
        shown = preview(r.title)
        assert "{{" not in shown and "{%" not in shown and "…" not in shown, (r.id, shown)


def test_every_rule_speaks_chinese():
    """The seeds (registration, the CDI case, the AKS guide) cover the categories of the
    registration links, device health, runtime classes, CDI and container start, the webhook and
    scheduling; every built-in rule has Chinese texts, so a Chinese comment never switches to
    English mid-way (a user's rule without them falls back to English: test_bot)."""
    untranslated = sorted(r.id for r in RULES.rules.values() if r.zh is None)
    assert untranslated == [], f"rules without a zh block: {untranslated}"


NVML_FAILS = "I0902 08:11:42.623606       1 main.go:271] Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.\n"
NVIDIA_BANNER = (
    'I0902 08:11:42.623492       1 main.go:267] "Starting NVIDIA Device Plugin" version="v0.17.1"\n'
)


@pytest.mark.parametrize("plugin", ["nvidia", "hami", None])
def test_a_fix_names_the_plugin_that_printed_the_evidence(tmp_path, ruleset, plugin):
    """NVIDIA's k8s-device-plugin and HAMi's print the same NVML failure: when NVIDIA's start
    banner says whose log it is, the fix changes NVIDIA's chart; when the bundle dates HAMi (its
    version in the ticket's notes), HAMi's; when nothing tells, the NVIDIA step says it applies
    only if the log is NVIDIA's."""
    from analyzer.analyze import AnalyzeOptions, analyze

    log = (NVIDIA_BANNER if plugin == "nvidia" else "") + NVML_FAILS
    (tmp_path / "device-plugin.log").write_text(log)
    if plugin == "hami":
        (tmp_path / "notes.txt").write_text("HAMi version: v2.10.0, installed with helm\n")
    report = analyze([str(tmp_path)], AnalyzeOptions(ruleset=ruleset)).report
    node = report.nodes[0]
    assert node.primary.rule_id == "nvml-init-failed"
    (finding,) = [f for f in node.findings if f.rule_id == "nvml-init-failed"]
    steps = [(s.text, s.command) for s in finding.remediation]
    hami = [t for t, c in steps if "hami-charts/hami" in c]
    nvidia = [t for t, c in steps if "nvdp/nvidia-device-plugin" in c]
    if plugin == "nvidia":
        assert not hami and nvidia and nvidia[0].startswith("The log is from NVIDIA's own")
    elif plugin == "hami":
        assert hami and not nvidia
    else:
        assert hami and nvidia and nvidia[0].startswith("If the log is from NVIDIA's own")
