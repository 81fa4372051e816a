"""One issue event end to end: gather what the bot reads (the issue, the comments of its author
and of the authors the config allows, the files attached to them), analyse it as one thread,
decide, and post, update or leave the bot's one comment and labels; the action's outputs.

The bot's comment is the one written by the bot's own login (the token's identity) that ends in
the analyzer's hidden marker: a marker in anyone else's comment means nothing. Its `input=`
digest covers everything analysed (the issue's title and body, the comments read, each
attachment's digest), so an event that changes none of them (a label, a milestone, a comment by
someone the bot does not read) makes no API write at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import regex

from analyzer.atomic import private_folder
from analyzer.bot import github
from analyzer.bot.decide import (
    Authors,
    BotConfig,
    BotInputError,
    Decision,
    Options,
    decide,
    load_config,
)
from analyzer.bundle.reader import Limits
from analyzer.bundle.text import printable
from analyzer.bundle.thread import Attachment, Post
from analyzer.render.markdown import MARKER
from analyzer.rules.model import RuleSet
from analyzer.structured import load_json

_DIGEST = regex.compile(rf"<!-- {MARKER} version=\S+ rules=\S+ input=([0-9a-f]+) -->\s*\Z")


@dataclass(frozen=True)
class Event:
    text: str  # the issue as the analyzer reads it: "# title" and the body
    issue: github.Issue
    author: str = ""  # the issue's author
    comment: github.Comment | None = None  # the comment of an issue_comment event
    deleted: bool = False  # that comment was deleted
    pull_request: bool = False  # the "issue" is a pull request
    comment_count: int | None = None  # the issue's comments, as the event counts them


@dataclass(frozen=True)
class Outcome:
    decision: Decision | None  # None when the event was ignored
    lang: str
    action: str  # created | updated | unchanged | silent | dry-run | ignored
    comment: str  # the comment the issue has (or would have) from this run; "" when none
    labels_added: tuple[str, ...] = ()
    labels_removed: tuple[str, ...] = ()
    why: str = ""  # why the event was ignored

    @property
    def commented(self) -> bool:
        return self.action in ("created", "updated")

    def summary(self) -> str:
        """One line for the job log: what was done and why."""
        d = self.decision
        if d is None:
            return f"{self.action}: {self.why}"
        line = (
            f"{self.action}: {d.category} {d.rule_id or '-'} ({d.confidence}, {self.lang}); {d.why}"
        )
        if self.labels_added:
            line += f"; labels +{','.join(self.labels_added)}"
        if self.labels_removed:
            line += f" -{','.join(self.labels_removed)}"
        return line

    def outputs(self) -> dict[str, str]:
        d = self.decision
        return {
            "category": d.category if d else "",
            "rule-id": d.rule_id if d else "",
            "confidence": d.confidence if d else "",
            "commented": "true" if self.commented else "false",
        }


def read_event(path: Path, api: str, repo: str | None, server: str = "https://github.com") -> Event:
    from analyzer.bundle.issue import issue_from_payload

    try:
        raw = path.read_bytes()
        doc = load_json(raw.decode("utf-8"))
    except OSError as exc:
        raise BotInputError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:  # every way load_json fails is a ValueError
        raise BotInputError(f"{path}: not a GitHub event (JSON): {exc}") from None
    doc = doc if isinstance(doc, dict) else {}
    issue = doc.get("issue")
    issue = issue if isinstance(issue, dict) else {}
    number = issue.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise BotInputError(
            f"{path}: the event has no issue (run the action on `issues` and `issue_comment` events)"
        )
    named = doc.get("repository")
    named = named.get("full_name") if isinstance(named, dict) else None
    repo = repo or (named if isinstance(named, str) else None)
    if not repo:
        raise BotInputError("no repository: the event names none and --repo is not given")
    comment = doc.get("comment")
    try:
        comment = github.Comment.from_api(comment) if isinstance(comment, dict) else None
    except (KeyError, TypeError, ValueError, OverflowError):
        raise BotInputError(f"{path}: the event's comment has no id") from None
    user = issue.get("user")
    user = user if isinstance(user, dict) else {}
    return Event(
        issue_from_payload(raw),
        github.Issue(api.rstrip("/"), repo, issue["number"], server.rstrip("/")),
        str(user.get("login") or ""),
        comment,
        doc.get("action") == "deleted",
        bool(issue.get("pull_request")),
        count if isinstance(count := issue.get("comments"), int) and count >= 0 else None,
    )


def input_digest(body: str) -> str | None:
    """The `input=` digest of a comment that ends with the analyzer's marker."""
    m = _DIGEST.search(body)
    return m.group(1) if m else None


def run_bot(
    event: Event,
    options: Options,
    ruleset: RuleSet,
    redact: bool = False,
    dry_run: bool = False,
    limits: Limits | None = None,
) -> Outcome:
    from analyzer.analyze import AnalyzeOptions, RedactOptions, Thread, analyze
    from analyzer.render.markdown import render_markdown

    config = load_config()
    limits = limits or Limits()
    authors = Authors.of([*config.authors, *options.comment_authors])
    c = event.comment
    if why := _not_for_the_bot(event, authors):  # before any API call
        return Outcome(None, "", "ignored", "", why=why)
    me = options.bot_login or (github.ACTIONS_BOT if dry_run else github.whoami(event.issue.api))
    if c is not None and c.author.lower() == me.lower():
        return Outcome(None, "", "ignored", "", why=f"the bot's own comment ({printable(me)})")
    if dry_run:  # the payload alone: the issue and the event's comment
        read = [c] if c is not None and not event.deleted else []
        mine: list[github.Comment] = []
    else:
        everything = github.comments(event.issue, event.comment_count)
        if c is not None and not event.deleted and all(x.id != c.id for x in everything):
            everything.append(c)  # the event's own comment, whatever the listing left out
        mine = [x for x in everything if x.author.lower() == me.lower() and input_digest(x.body)]
        read = [x for x in everything if authors.takes(x, event.author, me)]
    with private_folder("hami-bot-") as tmp:
        posts = _posts(event, read, config, limits, Path(tmp), fetch=not dry_run)
        result = analyze(
            Thread(tuple(posts), config.accumulate),
            AnalyzeOptions(
                ruleset=ruleset,
                lang=config.language.detect,
                limits=limits,
                redact=RedactOptions() if redact else None,
            ),
        )
    report, lang = result.report, result.lang
    text = "\n\n".join(p.text for p in posts)
    decision = decide(report, text, options, config)
    problems = result.thread.problems if result.thread is not None else []
    body = render_markdown(report, result.digest, lang, problems)
    if dry_run:
        return Outcome(decision, lang, "dry-run", body if decision.comment else "")
    if mine and input_digest(mine[0].body) == input_digest(body):
        return Outcome(decision, lang, "unchanged", mine[0].body)
    if mine:  # the bot spoke before: its comment follows the thread, even to say less
        github.update_comment(event.issue, mine[0].id, body)
        action = "updated"
    elif decision.comment:
        github.create_comment(event.issue, body)
        action = "created"
    else:
        action = "silent"
    added, removed = _sync_labels(event.issue, decision, options, owned=bool(mine))
    return Outcome(decision, lang, action, body if action != "silent" else "", added, removed)


def _not_for_the_bot(event: Event, authors: Authors) -> str | None:
    """Why the event is none of the bot's business: a pull request, or a comment it does not
    read (a bot's, or by someone neither the issue's author nor among `authors`)."""
    c = event.comment
    if event.pull_request:
        return "a pull request, not an issue"
    if c is not None and c.by_bot:
        return f"a comment by a bot ({printable(c.author)})"
    if c is not None and not authors.takes(c, event.author, ""):
        return (
            f"a comment by {printable(c.author or 'nobody')}, whose comments the bot does not read"
        )
    return None


def _posts(
    event: Event,
    comments: list[github.Comment],
    config: BotConfig,
    limits: Limits,
    tmp: Path,
    fetch: bool,
) -> list[Post]:
    """The thread in order, each post with its attachments fetched (or why not) into `tmp`,
    the downloads together within the limits' bytes."""
    from analyzer.bot.attachments import FetchError
    from analyzer.bot.attachments import fetch as download
    from analyzer.bundle.issue import attachment_links

    texts = [("issue", event.text)] + [(f"comment-{i}", c.body) for i, c in enumerate(comments, 1)]
    left, count, posts = limits.max_total_bytes, 0, []
    for label, text in texts:
        found: list[Attachment] = []
        issue = event.issue
        for link in attachment_links(text, issue.server, issue.repo, config.attachment_suffixes):
            count += 1
            if count > config.max_attachments:
                why = f"not fetched: more than {config.max_attachments} attachments"
            elif not fetch:
                why = "not fetched (dry run)"
            else:
                dest = tmp / f"attachment-{count:03d}"
                try:
                    got = download(link.url, dest, left, issue.server)
                except FetchError as exc:
                    why = str(exc)
                else:
                    left -= dest.stat().st_size
                    found.append(Attachment(link.name, dest, sha256=got.sha256))
                    continue
            found.append(Attachment(link.name, None, why))
        posts.append(Post(label, text, tuple(found)))
    return posts


def _sync_labels(
    issue: github.Issue, decision: Decision, options: Options, owned: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Add the verdict's label; remove the map's other labels only on an issue the bot already
    answered (before that, a label from the map was put there by a person)."""
    if not options.labels or not (decision.labels or owned):
        return (), ()
    current = github.labels(issue)
    add = decision.labels - current
    drop = (current & set(options.labels.values())) - decision.labels if owned else set()
    if add:
        github.add_labels(issue, add)
    for name in sorted(drop):
        github.remove_label(issue, name)
    return tuple(sorted(add)), tuple(sorted(drop))


def write_outputs(path: Path | None, outputs: dict[str, str]) -> None:
    """Append `name=value` lines to $GITHUB_OUTPUT (values are ids: no newlines)."""
    if path is None:
        return
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.writelines(f"{name}={value}\n" for name, value in outputs.items())
    except OSError as exc:
        raise BotInputError(f"cannot write the outputs to {path}: {exc.strerror or exc}") from None
