"""One issue event end to end: analyse the issue, decide, and post, update or leave the bot's
comment and labels; the action's outputs.

The bot's comment is the one ending in the analyzer's hidden marker. Its `input=` digest is the
digest of the issue's title and body, so an edit that does not change the text (a label, a
milestone, an edit undone) finds the same digest and makes no API write at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import regex

from analyzer.bot import github
from analyzer.bot.decide import BotInputError, Decision, Options, decide, load_config
from analyzer.render.markdown import MARKER
from analyzer.rules.model import RuleSet

_DIGEST = regex.compile(rf"<!-- {MARKER} version=\S+ rules=\S+ input=([0-9a-f]+) -->\s*\Z")


@dataclass(frozen=True)
class Event:
    raw: bytes
    text: str  # the issue as the analyzer reads it: "# title" and the body
    issue: github.Issue


@dataclass(frozen=True)
class Outcome:
    decision: Decision
    lang: str
    action: str  # created | updated | unchanged | silent | dry-run
    comment: str  # the comment the issue has (or would have) from this run; "" when none
    labels_added: tuple[str, ...] = ()
    labels_removed: tuple[str, ...] = ()

    @property
    def commented(self) -> bool:
        return self.action in ("created", "updated")

    def summary(self) -> str:
        """One line for the job log: what was done and why."""
        d = self.decision
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
            "category": d.category,
            "rule-id": d.rule_id,
            "confidence": d.confidence,
            "commented": "true" if self.commented else "false",
        }


def read_event(path: Path, api: str, repo: str | None) -> Event:
    from analyzer.bundle.issue import issue_from_payload

    try:
        raw = path.read_bytes()
        doc = json.loads(raw)
    except OSError as exc:
        raise BotInputError(f"{path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BotInputError(f"{path}: not a GitHub event (JSON): {exc}") from None
    issue = doc.get("issue") if isinstance(doc, dict) else None
    if not isinstance(issue, dict) or not isinstance(issue.get("number"), int):
        raise BotInputError(f"{path}: the event has no issue (run the action on `issues` events)")
    repo = repo or ((doc.get("repository") or {}).get("full_name"))
    if not repo:
        raise BotInputError("no repository: the event names none and --repo is not given")
    return Event(raw, issue_from_payload(raw), github.Issue(api.rstrip("/"), repo, issue["number"]))


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
) -> Outcome:
    from analyzer.analyze import analyze_issue
    from analyzer.bundle.issue import parse_issue
    from analyzer.render.markdown import render_markdown

    config = load_config()
    lang = config.language.detect(parse_issue(event.text).prose)
    raw, text = event.raw, event.text.encode("utf-8")
    if redact:  # the comment is built from the redacted text only, as `analyze --redact` does
        from analyzer.redact.bundle import redact_issue

        raw = text = redact_issue(event.raw, [], None)
    _bundle, report = analyze_issue(raw, ruleset, lang=lang)
    decision = decide(report, event.text, options, config)
    body = render_markdown(report, text, lang)
    if dry_run:
        return Outcome(decision, lang, "dry-run", body if decision.comment else "")
    mine = [c for c in github.comments(event.issue) if input_digest(c.body)]
    if mine and input_digest(mine[0].body) == input_digest(body):
        return Outcome(decision, lang, "unchanged", mine[0].body)
    if mine:  # the bot spoke before: its comment follows the text, even to say less
        github.update_comment(event.issue, mine[0].id, body)
        action = "updated"
    elif decision.comment:
        github.create_comment(event.issue, body)
        action = "created"
    else:
        action = "silent"
    added, removed = _sync_labels(event.issue, decision, options, owned=bool(mine))
    return Outcome(decision, lang, action, body if action != "silent" else "", added, removed)


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
