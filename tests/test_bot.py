"""The issue bot's judgement (analyzer/bot/decide.py), its two languages, and the `bot` command's
errors. The API side is tested end to end in tests/test_action.py."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import socket
import string
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import regex
import yaml

from analyzer.analyze import AnalyzeOptions, Issue, RedactOptions, Thread, analyze
from analyzer.bot import github
from analyzer.bot.decide import (
    Authors,
    BotInputError,
    Options,
    decide,
    load_config,
    parse_labels,
)
from analyzer.bot.run import input_digest, read_event, run_bot
from analyzer.bundle.thread import Attachment, Post, digest_source
from analyzer.catalogue.messages import MESSAGES_PATH
from analyzer.render.markdown import render_markdown
from analyzer.rules import builtin_rules_dir
from conftest import SAMPLES, run_cli

NVML = "E0815 09:06:21.709851  412873 register.go:96] nvml Init err:  ERROR_LIBRARY_NOT_FOUND"
CONFIG = load_config()


def _decide(ruleset, text: str, **options):
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
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
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
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
    report = analyze(Issue(ZH_ISSUE.encode()), AnalyzeOptions(ruleset=ruleset, lang=lang)).report
    md = render_markdown(report, ZH_ISSUE.encode(), lang)
    first = md.split("\n")[0]
    assert lang == "zh"
    assert first.startswith("🔴 **Device Plugin 无法加载 NVML（ERROR\\_LIBRARY\\_NOT\\_FOUND）**")
    assert "规则 `nvml-init-failed`" in first and "置信度高" in first
    assert "注册链路：设备数量: **中断**" in md
    assert "**修复：**" in md and "<summary>详情</summary>" in md
    # the fix takes the three next steps; the checklist waits under the details
    assert "**请附上：**" not in md
    assert "- containerd 配置: `containerd config dump" in md.split("<details>")[1]
    assert "后果：报告者描述 Device Plugin 在重启或崩溃" in md  # the crash the log explains
    assert "Please attach" not in md and "Registration links" not in md
    described = ZH_ISSUE.split("，日志如下")[0] + "，请问怎么解决？"  # no log: the symptom alone
    report = analyze(Issue(described.encode()), AnalyzeOptions(ruleset=ruleset, lang="zh")).report
    md = render_markdown(report, described.encode(), "zh")
    assert "### 🟠 报告者描述 Device Plugin 在重启或崩溃" in md
    assert "_置信度低：Issue 正文中描述的现象_" in md
    assert (
        "**请附上：**\n- [ ] 一次收集全部：在能用 kubectl 访问集群的机器上运行 hami-analyzer collect"
        in md
    )


def test_untranslated_rule_falls_back_to_english(ruleset):
    """A rule without a zh block (a user's rule; here the webhook rule with its Chinese texts
    taken away) speaks English inside a Chinese comment."""
    text = (
        "# 创建 GPU Pod 失败\n\n我们在集群里创建申请显卡的 Pod 时一直失败，排查了很久也没有找到原因。"
        "创建 Pod 时 kube-apiserver 的日志里有这样一行，请帮忙看看是什么问题：\n\n```\n"
        'E0707 11:53:33.346585 1 dispatcher.go:180] failed calling webhook "vgpu.hami.io": '
        'failed to call webhook: Post "https://hami-scheduler.kube-system.svc:443/webhook?'
        'timeout=30s": net/http: request canceled while waiting for connection\n```\n'
    )
    english_only = dataclasses.replace(ruleset.rules["webhook-call-failed"], zh=None)
    ruleset = dataclasses.replace(
        ruleset, rules={**ruleset.rules, "webhook-call-failed": english_only}
    )
    lang = CONFIG.language.detect(text)
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset, lang=lang)).report
    md = render_markdown(report, text.encode(), lang)
    assert lang == "zh" and report.primary.rule_id == "webhook-call-failed"
    assert md.startswith("🔴 **") and "The API server cannot call HAMi" in md.splitlines()[0]
    assert "规则 `webhook-call-failed`" in md and "注册链路：" in md


def test_english_issue_keeps_english(ruleset):
    text = f"# plugin crash\n\nThe device plugin restarts:\n\n```\n{NVML}\n```\n"
    lang = CONFIG.language.detect(text)
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset, lang=lang)).report
    md = render_markdown(report, text.encode(), lang)
    assert lang == "en"
    assert md.startswith(
        "🔴 **The device plugin cannot load NVML (ERROR\\_LIBRARY\\_NOT\\_FOUND)**"
    )
    assert "**Also useful:**" in md and not re.search(r"[\u4e00-\u9fff]", md)


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
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
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
    assert (
        zh.stdout.startswith("🔴 **Device Plugin 无法加载 NVML") and "**也有帮助：**" in zh.stdout
    )
    assert (
        en.stdout.startswith("🔴 **The device plugin cannot load NVML")
        and "**Also useful:**" in en.stdout
    )
    assert input_digest(zh.stdout) == input_digest(en.stdout)


# ---- the thread: comments read, newest evidence, the digest, spoofed markers, dry runs ----------

NVML_LOG = f"I0815 09:04:51.202341  412873 main.go:275] Start working on node gpu-node-2\n{NVML}\n"
HEALTHY_LOG = (SAMPLES / "healthy-single-gpu" / "bundle" / "device-plugin.log").read_text()


def _comment(author: str, kind: str = "User", association: str = "NONE", body: str = ""):
    return github.Comment(1, body, author, kind, association)


@pytest.mark.parametrize(
    ("comment", "authors", "me", "read"),
    [
        (_comment("Reporter"), [], "github-actions[bot]", True),  # logins ignore case
        (_comment("someone"), [], "github-actions[bot]", False),
        (_comment("someone", association="MEMBER"), [], "github-actions[bot]", False),
        (_comment("someone", association="MEMBER"), ["MEMBER"], "github-actions[bot]", True),
        (_comment("Alice"), ["alice"], "github-actions[bot]", True),
        (_comment("renovate[bot]", "User"), ["renovate[bot]"], "x", False),  # a [bot] login
        (_comment("helper", "Bot"), ["helper"], "x", False),  # a Bot account
        (_comment("reporter", "Bot"), [], "x", False),
        (_comment("hami-bot"), ["hami-bot", "OWNER"], "hami-bot", False),  # the bot itself
        (_comment("reporter"), [], "Reporter", False),  # the bot's token is the reporter's
        (_comment(""), ["NONE"], "x", False),  # a deleted account
    ],
)
def test_whose_comments_are_read(comment, authors, me, read):
    assert Authors.of(authors).takes(comment, "reporter", me) is read


def _thread(ruleset, *texts: str, lang: str = "en"):
    posts = [Post("issue", texts[0])] + [
        Post(f"comment-{i}", t) for i, t in enumerate(texts[1:], 1)
    ]
    result = analyze(
        Thread(tuple(posts), CONFIG.accumulate), AnalyzeOptions(ruleset=ruleset, lang=lang)
    )
    return result.bundle, result.report, result.thread


def test_the_newest_paste_of_a_kind_wins(ruleset):
    """A device-plugin log in the issue and another in a later comment: the comment's decides,
    the older one is left out with a warning; the prose of both adds up. The other way round,
    the later crash decides."""
    crashed = f"# plugin crash\n\nThe hami device plugin crashes:\n\n```\n{NVML_LOG}```\n"
    fixed = f"Installed the driver, now:\n\n```\n{HEALTHY_LOG}```\n"
    bundle, report, files = _thread(ruleset, crashed, fixed)
    assert report.primary.rule_id != "nvml-init-failed"
    logs = [a.file.name for a in bundle.artefacts if a.kind == "device-plugin-log"]
    assert logs == ["comment-1-block-01.txt"]
    assert "issue-block-01.txt: device-plugin-log replaced by the newer one in comment 1" in (
        bundle.warnings
    )
    prose = [a.file.name for a in bundle.artefacts if a.kind == "issue-text"]
    assert prose == ["issue-text.md", "comment-1-text.md"]
    assert "crashes" in files.prose and "Installed the driver" in files.prose

    _, report, _ = _thread(ruleset, f"# plugin\n\n```\n{HEALTHY_LOG}```\n", crashed)
    assert report.primary.rule_id == "nvml-init-failed"
    # the crash pasted again after the healthy log: the repeat is the newest paste
    bundle, report, _ = _thread(ruleset, crashed, fixed, f"Again:\n\n```\n{NVML_LOG}```\n")
    assert report.primary.rule_id == "nvml-init-failed"
    names = [f.name for f in bundle.inventory.files]
    assert "comment-2-block-01.txt" in names and "issue-block-01.txt" not in names


def test_one_post_reads_as_analyze_from_issue(ruleset):
    """The issue alone is the bundle `analyze --from-issue` reads: same files, same verdict."""
    text = f"# crash\n\nHAMi v2.7.1\n\n```\n{NVML_LOG}```\n\n    indented\n"
    a = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset))
    b, from_thread, _ = _thread(ruleset, text)
    assert [f.name for f in a.bundle.inventory.files] == [f.name for f in b.inventory.files]
    assert a.report.primary == from_thread.primary


def test_the_digest_covers_everything_analysed():
    """The issue alone digests as `analyze --from-issue` does; a comment read, an attachment's
    bytes or why it is missing each change it."""
    issue = Post("issue", "# t\n\nbody")
    assert digest_source([issue]) == b"# t\n\nbody"
    variants = [
        [issue],
        [issue, Post("comment-1", "more")],
        [issue, Post("comment-1", "more, edited")],
        [Post("issue", issue.text, (Attachment("b.tgz", None, "HTTP 404"),))],
        [Post("issue", issue.text, (Attachment("b.tgz", None, "", "ab12"),))],
        [Post("issue", issue.text, (Attachment("b.tgz", None, "", "cd34"),))],
    ]
    assert len({digest_source(v) for v in variants}) == len(variants)


def _event_file(tmp_path, body: str, comment: dict | None = None, **issue) -> str:
    doc = {
        "action": "created",
        "issue": {"number": 3, "title": "pods pending", "body": body, "user": {"login": "rep"}},
        "repository": {"full_name": "o/r"},
    }
    doc["issue"].update(issue)
    if comment is not None:
        doc["comment"] = comment
    path = tmp_path / "event.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _comment_doc(body: str, login: str = "rep", kind: str = "User") -> dict:
    return {"id": 9, "body": body, "user": {"login": login, "type": kind}}


PENDING = "HAMi vGPU: pods requesting nvidia.com/gpu stay Pending on our node."


def test_dry_run_on_a_comment_event_reads_the_payload_alone(ruleset, tmp_path, monkeypatch):
    """`--dry-run` on issue_comment: the issue's body and the new comment, nothing else: no
    API call, no download, no socket opened."""

    def no_network(*_args, **_kwargs):
        raise AssertionError("a dry run used the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(github, "gh_api", no_network)
    link = "[b.tgz](https://github.com/user-attachments/files/1/b.tgz)"
    path = _event_file(tmp_path, f"{PENDING} {link}", _comment_doc(f"```\n{NVML_LOG}```\n"))
    event = read_event(Path(path), "https://api.github.com", None)
    out = run_bot(event, Options(), ruleset, dry_run=True)
    assert (out.action, out.decision.rule_id) == ("dry-run", "nvml-init-failed")
    assert "`comment-1-block-01.txt:2`" in out.comment
    assert "`issue/b.tgz` was not analysed: not fetched (dry run)" in out.comment


@pytest.mark.parametrize(
    ("comment", "why"),
    [
        (_comment_doc(f"```\n{NVML}\n```", "ci[bot]", "Bot"), "a comment by a bot (ci[bot])"),
        (_comment_doc(f"```\n{NVML}\n```", "eve"), "a comment by eve, whose comments"),
    ],
)
def test_a_comment_the_bot_does_not_read_is_ignored(tmp_path, comment, why):
    res = run_cli("bot", "--event", _event_file(tmp_path, PENDING, comment), "--dry-run")
    assert res.returncode == 0 and res.stdout.startswith(f"ignored: {why}"), res.stdout


def test_a_pull_request_comment_is_ignored(tmp_path):
    path = _event_file(tmp_path, PENDING, _comment_doc("hi"), pull_request={"url": "x"})
    res = run_cli("bot", "--event", path, "--dry-run")
    assert res.stdout.startswith("ignored: a pull request"), res.stdout


class FakeAPI:
    """analyzer.bot.github's calls on one issue, in memory."""

    def __init__(self, monkeypatch, comments: list[github.Comment], labels: set[str], me):
        self.thread, self.current, self.writes, self.asked = list(comments), labels, [], []
        for name in ("comments", "whoami", "labels", "add_labels", "remove_label"):
            monkeypatch.setattr(github, name, getattr(self, name))
        monkeypatch.setattr(github, "create_comment", self.create)
        monkeypatch.setattr(github, "update_comment", self.update)
        self.me = me

    def whoami(self, api):
        self.asked.append("whoami")
        return self.me

    def comments(self, issue, total=None):
        return list(self.thread)

    def labels(self, issue):
        return set(self.current)

    def create(self, issue, body):
        self.writes.append(("create", body))
        self.thread.append(github.Comment(99, body, self.me, "Bot"))
        return 99

    def update(self, issue, comment_id, body):
        self.writes.append(("update", comment_id))

    def add_labels(self, issue, names):
        self.writes.append(("add", tuple(sorted(names))))

    def remove_label(self, issue, name):
        self.writes.append(("remove", name))


LABEL_MAP = {"plugin-crash-nvml": "nvml", "annotation-missing-or-stale": "registration"}


def _spoof(text: str, rules_version: str) -> str:
    import hashlib

    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"Nothing to see.\n<!-- hami-bundle-analyzer version=0.1.0 rules={rules_version} input={digest} -->\n"


def test_a_spoofed_marker_is_not_the_bots_comment(ruleset, tmp_path, monkeypatch):
    """Another user's comment ending in the marker with the digest of the issue's text: not
    PATCHed, not a reason to skip, and the maintainer's label of the map stays."""
    body = f"```\n{NVML_LOG}```\n"
    event = read_event(Path(_event_file(tmp_path, body)), "https://api.github.com", None)
    spoof = github.Comment(5, _spoof(event.text, ruleset.version), "eve", "User")
    api = FakeAPI(monkeypatch, [spoof], {"registration"}, github.ACTIONS_BOT)
    out = run_bot(event, Options(labels=LABEL_MAP), ruleset)
    assert out.action == "created" and out.labels_removed == ()
    assert [w[0] for w in api.writes] == ["create", "add"]


def test_the_bots_own_comment_is_updated(ruleset, tmp_path, monkeypatch):
    """The same marker in a comment by the bot's login (a personal token's user here, as GET
    /user tells) is its comment: updated in place, its map labels follow the verdict; its
    comments are never read as evidence even though its account is a user's."""
    event = read_event(Path(_event_file(tmp_path, PENDING)), "https://api.github.com", None)
    old = github.Comment(5, "old\n" + _spoof("other text", ruleset.version), "hami-bot", "User")
    evidence = github.Comment(6, f"```\n{NVML_LOG}```\n", "hami-bot", "User", "OWNER")
    authors = Options(labels=LABEL_MAP, comment_authors=("OWNER",))
    api = FakeAPI(monkeypatch, [old, evidence], {"nvml"}, "hami-bot")
    out = run_bot(event, authors, ruleset)
    assert out.action == "updated" and out.decision.category == "inconclusive"
    assert api.writes == [("update", 5), ("remove", "nvml")] and api.asked == ["whoami"]

    api = FakeAPI(monkeypatch, [old], set(), "someone-else")
    out = run_bot(event, Options(bot_login="hami-bot"), ruleset)
    assert out.action == "updated" and api.asked == []  # the login given: GitHub not asked


# ---- the Markdown table cells ---------------------------------------------------------------


def test_a_pipe_in_a_node_name_stays_inside_its_cell(ruleset):
    """GFM splits table rows at every unescaped `|`, code spans included; rendered by a GFM
    table parser (markdown-it-py, a dependency of typer's rich), the multi-node table keeps each
    hostile node name in one code span of one cell: no live HTML, two cells per row."""
    markdown_it = pytest.importorskip("markdown_it")
    from analyzer.render.markdown import table_cell

    node = (SAMPLES / "annotation-health-omitted" / "bundle" / "node.yaml").read_text()
    names = ["gpu|<img src=x onerror=alert(1)>@octocat|", "a\\|<b>b</b>", "c\\\\|<i>x</i>|"]
    docs = [node.replace("gpu-node-2", f"'{n}'") for n in names]
    report = analyze(
        Issue(("```yaml\n" + "\n---\n".join(docs) + "\n```\n").encode()),
        AnalyzeOptions(ruleset=ruleset),
    ).report
    assert len(report.nodes) == 3
    md = render_markdown(report, b"x")
    table = md[md.index("\n| ") + 1 :].split("\n\n")[0]  # the multi-node table
    page = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(table)
    assert "<img" not in page and "<b>" not in page and "<i>" not in page and "@octocat" in page
    rows = regex.findall(r"<tr>(.*?)</tr>", page, regex.S)
    assert len(rows) == 4 and all(r.count("<td>") + r.count("<th>") == 2 for r in rows)
    assert f"<code>{html.escape(names[0], quote=False)}</code>" in page
    # a backslash before a `|` cannot survive a table cell exactly; the cell stays one code span
    assert all(regex.match(r"\s*<td><code>[^<]*</code></td>", r) for r in rows[1:])
    assert table_cell(table_cell("`a|b`")) == table_cell("`a|b`")  # escaping twice is once


# ---- what to collect next leads with `hami-analyzer collect` ---------------------------------


def _collect_of(ruleset, text: str):
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
    return report.worst.collect


def test_collect_next_leads_with_hami_analyzer_collect(ruleset):
    """Nothing points anywhere: the list starts with the install line and `collect` (for the
    node when the bundle names one), then the kinds as before."""
    bare = _collect_of(ruleset, "# HAMi pods pending\n\nOur GPU pods stay Pending.")
    assert bare[0].kind == "collect-manifest" and len(bare) > 2
    install, command = bare[0].command.split("\n")
    assert install == "pipx install git+https://github.com/Project-HAMi/hami-bundle-analyzer"
    assert command == "hami-analyzer collect -o hami-bundle.tar.gz"
    assert [c.kind for c in bare[1:3]] == ["node", "device-plugin-log"]

    named = _collect_of(ruleset, f"# HAMi\n\n```\n{NVML_LOG.splitlines()[0]}\n```\n")
    assert named[0].command.endswith(
        "hami-analyzer collect --node gpu-node-2 -o hami-bundle.tar.gz"
    )


def test_collect_is_not_asked_for_twice_and_fetches_the_node_side_with_node_debug(ruleset):
    """An archive of `collect` in the bundle: not asked for again. Node-side items missing (CDI
    specs, toolkit or containerd config, journals): the lead adds `--node-debug`, which fetches
    them; cluster-side items alone: it does not (no privileged pod for nothing). One item
    missing: that item alone."""
    from analyzer.analyze import AnalyzeOptions, analyze

    manifest = {"kind": "CollectManifest", "collected_at": "2026-08-15T10:20:00Z", "files": []}
    text = f"# HAMi\n\n```json\n{json.dumps(manifest)}\n```\n\nOur GPU pods stay Pending."
    assert all(c.kind != "collect-manifest" for c in _collect_of(ruleset, text))

    def lead(items) -> str:
        assert items[0].kind == "collect-manifest", [c.kind for c in items]
        return items[0].command.split("\n")[1]

    report = analyze(
        [str(SAMPLES / "cdi-unresolvable" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    assert [c.where for c in report.worst.collect[1:]] == ["node", "node"]
    assert lead(report.worst.collect).endswith(" --node-debug -o hami-bundle.tar.gz")
    nvml = f"# HAMi\n\n```\n{NVML_LOG}```\n"  # wants the containerd config and helm values
    assert lead(_collect_of(ruleset, nvml)) == (
        "hami-analyzer collect --node gpu-node-2 --node-debug -o hami-bundle.tar.gz"
    )
    bare = _collect_of(ruleset, "# HAMi pods pending\n\nOur GPU pods stay Pending.")
    assert lead(bare) == "hami-analyzer collect -o hami-bundle.tar.gz"
    report = analyze(
        [str(SAMPLES / "oci-hook-failed" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    assert [c.kind for c in report.worst.collect] == ["toolkit-config"]


def test_the_collect_line_is_a_command_the_cli_accepts(tmp_path):
    """The printed `collect` line parses: with a kubectl that is not there, it fails on kubectl,
    not on an option; the install line is the project's own repository."""
    from analyzer.report.next_steps import INSTALL, collect_command_step

    for node_debug in (False, True):
        command = collect_command_step("gpu-7", node_debug=node_debug).command.split("\n")[1]
        assert ("--node-debug" in command) == node_debug
        res = run_cli(*command.split()[1:], "--kubectl", str(tmp_path / "no-kubectl"))
        assert res.returncode == 2 and "no-kubectl" in res.stderr, res.stderr
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    repo = regex.search(r'Issues = "(https://github.com/[^"]+)/issues"', pyproject)[1]
    assert f"pipx install git+{repo}" == INSTALL


def test_the_comment_asks_for_collect_and_one_more_item(ruleset):
    """The checklist: `collect`, then the single most useful item; the rest under details."""
    text = "# HAMi pods pending\n\nOur GPU pods stay Pending."
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
    md = render_markdown(report, text.encode())
    checklist = md.split("**Please attach:**")[1].split("<details>")[0]
    assert checklist.count("- [ ]") == 2
    assert "hami-analyzer collect -o hami-bundle.tar.gz" in checklist
    assert "Node object" in checklist and "Also useful" in md
    terminal = run_cli("analyze", "--from-issue", "-", stdin=text.encode()).stdout
    collect_next = terminal.split("Collect next:")[1]
    assert collect_next.lstrip().startswith("• Everything at once")


def test_redaction_covers_the_comments_and_the_attachments(ruleset, tmp_path):
    """`redact: true`: one redaction run over the issue, the comments and the attached archive,
    so a node named in all three is one token everywhere and never reaches the comment."""
    import tarfile

    bundle = SAMPLES / "annotation-health-omitted" / "bundle"
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for f in sorted(bundle.iterdir()):
            tar.add(f, arcname=f"hami-bundle/{f.name}")
    posts = [
        Post("issue", "# gpu-node-2 lost its GPUs\n\nHAMi on gpu-node-2, bundle attached.",
             (Attachment("bundle.tar.gz", archive, sha256="x"),)),
        Post("comment-1", f"And the plugin log of gpu-node-2:\n\n```\n{NVML_LOG}```\n"),
    ]  # fmt: skip
    thread = Thread(tuple(posts), CONFIG.accumulate)
    result = analyze(thread, AnalyzeOptions(ruleset=ruleset, redact=RedactOptions()))
    parsed, report, files = result.bundle, result.report, result.thread
    assert files is not None
    md = render_markdown(report, b"x", unread=files.problems)
    assert "gpu-node-2" not in md and "gpu-node-2" not in " ".join(parsed.warnings)
    assert {n.node for n in report.nodes} == {"node-1"} and files.problems == []
    names = [f.name for f in parsed.inventory.files]
    assert "issue/bundle.tar.gz!hami-bundle/node.yaml" in names and "comment-1-text.md" in names
    plain = analyze(thread, AnalyzeOptions(ruleset=ruleset)).report
    assert report.primary.rule_id == plain.primary.rule_id


def test_unread_attachments_are_short_lines_in_either_language(ruleset):
    """One line per attachment that could not be read, five at most and a count of the rest;
    its name cannot inject anything; in a Chinese comment the lead item is Chinese too."""
    text = "# HAMi 设备插件\n\n我们的 GPU Pod 一直 Pending。"
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset, lang="zh")).report
    unread = [(f"issue/@octocat<b>{i}</b>.log", "not found (HTTP 404)") for i in range(7)]
    md = render_markdown(report, b"x", "zh", unread)
    lines = [ln for ln in md.splitlines() if ln.startswith("⚠️")]
    assert len(lines) == 6 and lines[-1] == "⚠️ 另有 2 个附件未能分析。"
    assert lines[0] == "⚠️ 附件 `issue/@octocat<b>0</b>.log` 未能分析：not found (HTTP 404)"
    assert "一次收集全部" in md.split("**请附上：**")[1]


# ---- fetching one attachment ---------------------------------------------------------------


class _Slow(BaseHTTPRequestHandler):
    """/slow answers after 3 s; /stream sends 3 MiB without a length; /ftp redirects to ftp;
    /header answers with a header line longer than http.client takes."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/header":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n")
            self.close_connection = True
            return
        if self.path == "/slow":
            time.sleep(3)
        if self.path == "/ftp":
            self.send_response(302)
            self.send_header("Location", "ftp://127.0.0.1/x")
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()  # no Content-Length: read to the end of the stream
        for _ in range(3 if self.path == "/stream" else 0):
            self.wfile.write(b"x" * (1 << 20))


@pytest.mark.parametrize(
    ("path", "limit", "timeout", "why"),
    [
        ("/slow", 1 << 20, 1.0, "no answer in 1 s"),
        ("/stream", 1 << 20, 30.0, "larger than the 1.0 MiB the limits leave"),
        ("/ftp", 1 << 20, 30.0, "redirected to a ftp address"),
        ("/header", 1 << 20, 30.0, "download failed: got more than 65536 bytes"),
    ],
)
def test_a_failed_download_is_a_short_reason(tmp_path, path, limit, timeout, why):
    from analyzer.bot.attachments import FetchError, fetch
    from loopback import LoopbackServer

    with LoopbackServer(_Slow) as srv, pytest.raises(FetchError) as caught:
        fetch(f"{srv.url}{path}", tmp_path / "x", limit, srv.url, timeout)
    assert str(caught.value).startswith(why), caught.value


# ---- which links are fetched, from where, with which token ---------------------------------


LOOK_ALIKES = [
    "https://gİthub.com",  # İ folds to i under Unicode case-insensitive matching
    "https://GİTHUB.COM",
    "httpſ://github.com",  # ſ folds to s
    "https://github.com.evil.example",
    "https://github.com@evil.example",
    "https://evil.example",
]


def test_links_are_on_the_server_itself_and_only_it_gets_the_token(monkeypatch):
    """A link on a host that merely looks like the server (Unicode case folding, a longer
    name, userinfo) is no attachment; every link fetched is on the server's own origin, and
    the token goes to that origin only: never to another host, whatever the link says."""
    from analyzer.bot.attachments import token_for
    from analyzer.bundle.issue import attachment_links

    monkeypatch.setenv("GH_TOKEN", "github-token")
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "enterprise-token")
    server = "https://github.com"
    text = " ".join(f"{h}/user-attachments/files/{i}/x{i}.log" for i, h in enumerate(LOOK_ALIKES))
    text += " https://GitHub.com/user-attachments/files/9/real.log"
    links = attachment_links(text, server, "o/r", (".log",))
    assert [a.name for a in links] == ["real.log"]
    assert [a.url for a in links] == [f"{server}/user-attachments/files/9/real.log"]
    assert token_for(links[0].url, server) == "github-token"
    for host in LOOK_ALIKES:
        assert token_for(f"{host}/user-attachments/files/1/x.log", server) is None, host
    ghes = "https://ghe.example.com"
    assert token_for(f"{ghes}/user-attachments/files/1/x.log", ghes) == "enterprise-token"
    assert token_for(f"{ghes}/user-attachments/files/1/x.log", server) is None
    assert token_for("https://gİthub.com/x", "https://gİthub.com") is None  # only ASCII hosts


def test_an_attachment_is_one_path_segment_fetched_in_ascii(tmp_path):
    """A link's file name is one path segment: `..`, an encoded `/` or a control character
    make no attachment (and no token-bearing request to another path of the server); a name
    in any script is fetched percent-encoded (it crashed the run with UnicodeEncodeError)."""
    from analyzer.bot.attachments import fetch
    from analyzer.bundle.issue import attachment_links
    from fake_github import FakeGitHub

    with FakeGitHub("o/r") as gh:
        gh.repo.files["/user-attachments/files/3/%E6%97%A5%E5%BF%97.log"] = b"NVML"
        gh.repo.files["/user-attachments/files/5/a.log"] = b"a"
        text = "\n".join(
            f"{gh.url}{path}"
            for path in (
                "/user-attachments/files/1/../../../settings/x.log",
                "/o/r/files/2/a.log%2F..%2F..%2Fx.log",
                "/user-attachments/files/3/日志.log",
                "/user-attachments/files/4/a\x01b.log",
                "/user-attachments/files/5/a.log/../../x.log",
                "/user-attachments/files/6/%2e%2e",
            )
        )
        links = attachment_links(text, gh.url, "o/r", (".log", ".."))
        assert [(a.name, a.url.removeprefix(gh.url)) for a in links] == [
            ("日志.log", "/user-attachments/files/3/%E6%97%A5%E5%BF%97.log"),
            ("a.log", "/user-attachments/files/5/a.log"),
        ]
        got = [fetch(a.url, tmp_path / f"{i}", 1 << 20, gh.url) for i, a in enumerate(links)]
        assert [g.path.read_bytes() for g in got] == [b"NVML", b"a"]


@pytest.mark.parametrize(
    ("log", "asks"),
    [
        (NVML_LOG, False),  # the crash's cause is pasted
        (NVML_LOG.splitlines()[0] + "\n" + NVML_LOG.splitlines()[0] + "\npanic: boom\n", False),
        (NVML_LOG.splitlines()[0] + "\n", True),  # a clean start: the crashed container's is not
    ],
)
def test_a_described_crash_does_not_ask_for_the_log_that_shows_it(ruleset, log, asks):
    """The reporter says the device plugin restarts and pastes its log: where the log shows the
    crash or its cause, the described restart is that finding's consequence, and the comment
    does not ask for the crashed container's log; where it shows a clean start, it still does."""
    text = (
        f"# hami-device-plugin keeps restarting\n\nThe device plugin restarts.\n\n```\n{log}```\n"
    )
    report = analyze(Issue(text.encode()), AnalyzeOptions(ruleset=ruleset)).report
    md = render_markdown(report, text.encode())
    top = [f.rule_id for f in report.worst.faults()]
    assert ("plugin-crash-described" in top) == asks, top
    assert ("Attach the previous container's log" in md) == asks


def test_whatever_explains_a_plugin_restart_explains_the_described_one(ruleset):
    """A rule that explains the restart the log shows also explains the one the reporter
    describes (else the comment asks for the crashed container's log the paste already is)."""
    missing = [
        r.id
        for r in ruleset.rules.values()
        if "plugin-restarted" in r.explains and "plugin-crash-described" not in r.explains
    ]
    assert missing == [], missing


def test_an_issue_of_thousands_of_comments_is_read_from_its_newest_pages(monkeypatch):
    """MAX_PAGES pages of comments: of an issue with more, the newest pages (the evidence that
    triggered the event and the bot's own answer are there), not the oldest."""
    pages: list[int] = []

    def api(_method, url, *_args, **_kwargs):
        page = int(re.search(r"[?&]page=(\d+)", url)[1])
        pages.append(page)
        first = (page - 1) * github.PER_PAGE
        return [{"id": first + i, "body": "chatter"} for i in range(github.PER_PAGE)]

    monkeypatch.setattr(github, "gh_api", api)
    issue = github.Issue("https://api.github.com", "octo/x", 7)
    total = github.PER_PAGE * (github.MAX_PAGES + 5) + 1
    got = github.comments(issue, total)
    assert pages == list(range(7, 7 + github.MAX_PAGES))
    assert got[-1].id == (6 + github.MAX_PAGES) * github.PER_PAGE - 1
    pages.clear()
    github.comments(issue, 250)
    assert pages[0] == 1
