"""The issue bot's judgement (analyzer/bot/decide.py), its two languages, and the `bot` command's
errors. The API side is tested end to end in tests/test_action.py."""

from __future__ import annotations

import json
import re
import string

import pytest
import yaml

from analyzer.analyze import analyze_issue
from analyzer.bot.decide import BotInputError, Options, decide, load_config, parse_labels
from analyzer.bot.run import input_digest
from analyzer.messages import MESSAGES_PATH
from analyzer.render.markdown import render_markdown
from analyzer.rules import builtin_rules_dir
from conftest import run_cli

NVML = "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND"
CONFIG = load_config()


def _decide(ruleset, text: str, **options):
    _, report = analyze_issue(text.encode(), ruleset)
    return decide(report, text, Options(**options), CONFIG)


@pytest.mark.parametrize(
    ("prose", "lang"),
    [
        ("The device plugin pod restarts every minute on our A100 nodes.", "en"),
        (
            "我们在 k3s 上部署了 HAMi v2.7.1，device plugin 的 Pod 一直 CrashLoopBackOff，请问怎么解决？",
            "zh",
        ),
        ("节点注册失败", "zh"),
        ("Our scheduler log says 调度失败 but everything else looks fine on the node today.", "en"),
        ("", "en"),
    ],
)
def test_language_from_the_share_of_cjk(prose, lang):
    """Chinese prose that quotes English words is Chinese; English quoting a Chinese phrase is not."""
    assert CONFIG.language.detect(prose) == lang


@pytest.mark.parametrize(
    ("text", "relevant"),
    [
        ("# Typo in README\n\nThe second paragraph says 'teh'.", False),
        ("# CI badge broken\n\n```\nError: badge.svg 404\n```\n", False),
        ("# Question\n\nDoes HAMi support time slicing?", True),
        ("# 显存超分\n\n如何配置？", True),
        (
            "# it fails\n\n```\nkind: Node\nmetadata:\n  name: worker-1\nstatus:\n  allocatable:\n    cpu: '8'\n```\n",
            True,
        ),
    ],
)
def test_relevance_from_material_or_words(ruleset, text, relevant):
    """Bundle material (a Node object here) or HAMi/GPU wording; anything else stays quiet."""
    _, report = analyze_issue(text.encode(), ruleset)
    assert CONFIG.relevance.relevant(report, text) is relevant


def test_policy_table(ruleset):
    """comment-when and min-confidence: a fault below the bar counts as inconclusive and gets no
    label; an irrelevant issue gets nothing even with `always`."""
    crash = f"# crash\n\n```\n{NVML}\n```\n"
    described = "# The hami device plugin keeps restarting\n\nIt restarts every few minutes."
    unsure = "# HAMi question\n\nPods stay Pending on our GPU node; logs to follow."
    unrelated = "# Typo in README\n\nThe second paragraph says 'teh'."
    labels = {"plugin-crash-nvml": "nvml", "inconclusive": "needs-info"}

    d = _decide(ruleset, crash, comment_when="fault", labels=labels)
    assert (d.verdict, d.comment, d.labels, d.confidence) == ("fault", True, {"nvml"}, "high")

    d = _decide(ruleset, described, labels=labels)  # min-confidence medium by default
    assert (d.category, d.confidence) == ("plugin-crash-nvml", "low")
    assert (d.verdict, d.comment, d.labels) == ("inconclusive", True, {"needs-info"})
    assert "below min-confidence medium" in d.why
    assert not _decide(ruleset, described, comment_when="fault").comment
    d = _decide(ruleset, described, min_confidence="low", comment_when="fault", labels=labels)
    assert (d.verdict, d.comment, d.labels) == ("fault", True, {"nvml"})

    d = _decide(ruleset, unsure, labels=labels)
    assert (d.category, d.comment, d.labels) == ("inconclusive", True, {"needs-info"})
    assert not _decide(ruleset, unsure, comment_when="fault").comment

    d = _decide(ruleset, unrelated, comment_when="always", labels=labels)
    assert (d.relevant, d.comment, d.labels) == (False, False, frozenset())


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- a\n- b", "must be a mapping"),
        ("plugin-crash: x", "unknown category 'plugin-crash'"),
        ("a: [b", "labels is not YAML"),
    ],
)
def test_bad_labels(text, fragment):
    with pytest.raises(BotInputError, match=re.escape(fragment)):
        parse_labels(text)


def test_bad_options():
    with pytest.raises(BotInputError, match="min-confidence 'certain'"):
        Options(min_confidence="certain")
    with pytest.raises(BotInputError, match="comment-when 'never'"):
        Options(comment_when="never")


ZH_ISSUE = (
    "# hami-device-plugin 一直重启\n\n我们在 k3s 上部署了 HAMi v2.7.1，device plugin 的 Pod 一直"
    f" CrashLoopBackOff，日志如下：\n\n```\n{NVML}\n```\n\n请问怎么解决？"
)


def test_chinese_issue_gets_a_chinese_comment(ruleset):
    """Verdict line, headings, checklist and confidence notes in Chinese, and the translated
    rules (the NVML crash, the described restart) too."""
    lang = CONFIG.language.detect(ZH_ISSUE)
    _, report = analyze_issue(ZH_ISSUE.encode(), ruleset, lang=lang)
    md = render_markdown(report, ZH_ISSUE.encode(), lang)
    first = md.split("\n")[0]
    assert lang == "zh"
    assert first.startswith("🔴 **Device Plugin 无法加载 NVML（ERROR\\_LIBRARY\\_NOT\\_FOUND）**")
    assert "规则 `nvml-init-failed`" in first and "置信度高" in first
    assert "注册链路：设备数量: **中断**" in md
    assert "**修复：**" in md and "**请附上：**" in md and "<summary>详情</summary>" in md
    assert "- [ ] containerd 配置（在节点上执行）。" in md
    assert "### 🟠 报告者描述 Device Plugin 在重启或崩溃" in md
    assert "_置信度低：Issue 正文中描述的现象_" in md
    assert "Please attach" not in md and "Registration links" not in md


def test_untranslated_rule_falls_back_to_english(ruleset):
    """A rule without a zh block (the webhook rule) speaks English inside a Chinese comment."""
    text = (
        "# 创建 GPU Pod 失败\n\n我们在集群里创建申请显卡的 Pod 时一直失败，排查了很久也没有找到原因。"
        "创建 Pod 时 kube-apiserver 的日志里有这样一行，请帮忙看看是什么问题：\n\n```\n"
        'E0707 11:53:33.346585 1 dispatcher.go:180] failed calling webhook "vgpu.hami.io": '
        'failed to call webhook: Post "https://hami-scheduler.kube-system.svc:443/webhook?'
        'timeout=30s": net/http: request canceled while waiting for connection\n```\n'
    )
    assert ruleset.rules["webhook-call-failed"].zh is None
    lang = CONFIG.language.detect(text)
    _, report = analyze_issue(text.encode(), ruleset, lang=lang)
    md = render_markdown(report, text.encode(), lang)
    assert lang == "zh" and report.primary.rule_id == "webhook-call-failed"
    assert md.startswith("🔴 **") and "The API server cannot call HAMi" in md.splitlines()[0]
    assert "规则 `webhook-call-failed`" in md and "注册链路：" in md


def test_english_issue_keeps_english(ruleset):
    text = f"# plugin crash\n\nThe device plugin restarts:\n\n```\n{NVML}\n```\n"
    lang = CONFIG.language.detect(text)
    _, report = analyze_issue(text.encode(), ruleset, lang=lang)
    md = render_markdown(report, text.encode(), lang)
    assert lang == "en"
    assert md.startswith(
        "🔴 **The device plugin cannot load NVML (ERROR\\_LIBRARY\\_NOT\\_FOUND)**"
    )
    assert "**Please attach:**" in md and not re.search(r"[\u4e00-\u9fff]", md)


def test_messages_complete_in_both_languages():
    """Every phrase has English and Chinese with the same placeholders."""
    messages = yaml.safe_load(MESSAGES_PATH.read_text(encoding="utf-8"))["messages"]
    for key, texts in messages.items():
        assert set(texts) == {"en", "zh"}, key
        names = [{f for _, f, _, _ in string.Formatter().parse(t) if f} for t in texts.values()]
        assert names[0] == names[1], key


def test_every_collectable_kind_has_a_chinese_title():
    kinds = yaml.safe_load((builtin_rules_dir() / "kinds.yaml").read_text())["kinds"]
    missing = [k for k, v in kinds.items() if v.get("collect") and not v.get("title_zh")]
    assert missing == []


def test_input_digest_is_the_issue_text(ruleset, tmp_path):
    """`analyze --from-issue` and the bot mark the same digest: the issue's title and body, so an
    event that only changed labels or timestamps reads as unchanged."""
    issue = {"number": 1, "title": "crash", "body": f"```\n{NVML}\n```\n"}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"action": "opened", "issue": issue}))
    b.write_text(json.dumps({"action": "labeled", "issue": {**issue, "labels": [{"name": "x"}]}}))
    digests = [
        input_digest(run_cli("analyze", "--from-issue", str(p), "-f", "markdown").stdout)
        for p in (a, b)
    ]
    text = f"# crash\n\n```\n{NVML}\n```\n"
    _, report = analyze_issue(text.encode(), ruleset)
    assert digests[0] == digests[1] == input_digest(render_markdown(report, text.encode()))


def _event(tmp_path, **issue) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"issue": issue, "repository": {"full_name": "o/r"}}))
    return str(path)


def test_bot_dry_run_prints_outputs(tmp_path):
    event = _event(tmp_path, number=3, title="crash", body=f"```\n{NVML}\n```\n")
    out = tmp_path / "out"
    res = run_cli("bot", "--event", event, "--dry-run", "--outputs", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("dry-run: plugin-crash-nvml nvml-init-failed (high, en)")
    assert out.read_text().splitlines() == [
        "category=plugin-crash-nvml",
        "rule-id=nvml-init-failed",
        "confidence=high",
        "commented=false",
    ]


@pytest.mark.parametrize(
    ("args", "issue", "fragment"),
    [
        (["--comment-when", "never"], {"number": 1, "body": "x"}, "comment-when 'never'"),
        (["--labels", "nope: x"], {"number": 1, "body": "x"}, "labels: unknown category"),
        ([], {"body": "x"}, "the event has no issue"),
    ],
)
def test_bot_input_errors_are_one_line(tmp_path, args, issue, fragment):
    res = run_cli("bot", "--event", _event(tmp_path, **issue), "--dry-run", *args)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and fragment in res.stderr, res.stderr


def test_redact_keeps_names_and_addresses_out_of_the_comment(tmp_path):
    """`redact: true`: the comment is that of `analyze --redact`: the verdict stays, the node
    name and the address pasted in the issue do not reach it."""
    log = (
        "I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-secret-7\n"
        f"{NVML} (host 10.23.45.67)"
    )
    event = _event(tmp_path, number=1, title="crash", body=f"```\n{log}\n```\n")
    plain = run_cli("bot", "--event", event, "--dry-run")
    redacted = run_cli("bot", "--event", event, "--redact", "--dry-run")
    assert plain.returncode == redacted.returncode == 0, redacted.stderr
    assert "gpu-secret-7" in plain.stdout and "10.23.45.67" in plain.stdout
    assert "gpu-secret-7" not in redacted.stdout and "10.23.45.67" not in redacted.stdout
    assert "plugin-crash-nvml" in redacted.stdout.split("\n", 1)[0]


def test_missing_gh_is_one_line(tmp_path):
    """Without gh on PATH the bot fails with one line and exit 1, after deciding, before writing."""
    event = _event(tmp_path, number=1, title="crash", body=f"```\n{NVML}\n```\n")
    res = run_cli("bot", "--event", event, PATH=str(tmp_path), GITHUB_API_URL="http://127.0.0.1:9")
    assert res.returncode == 1
    assert res.stderr == "error: the gh CLI is not installed (https://cli.github.com)\n"


def test_analyze_lang_option(tmp_path):
    """`analyze --lang zh` gives the bot's Chinese comment on the command line; default English."""
    issue = tmp_path / "issue.md"
    issue.write_text(ZH_ISSUE, encoding="utf-8")
    zh = run_cli("analyze", str(issue), "-f", "markdown", "--lang", "zh")
    en = run_cli("analyze", str(issue), "-f", "markdown")
    assert zh.returncode == en.returncode == 1
    assert zh.stdout.startswith("🔴 **Device Plugin 无法加载 NVML") and "**请附上：**" in zh.stdout
    assert (
        en.stdout.startswith("🔴 **The device plugin cannot load NVML")
        and "**Please attach:**" in en.stdout
    )
    assert input_digest(zh.stdout) == input_digest(en.stdout)
