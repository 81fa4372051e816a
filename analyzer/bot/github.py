"""The few GitHub REST calls the bot makes, through the `gh` CLI (`gh api`), which the runner
images carry and which handles the token, retries and GitHub Enterprise.

Every call names the full URL under the API root ($GITHUB_API_URL: https://api.github.com, or
https://HOST/api/v3 on GitHub Enterprise Server). `gh api` takes a full URL as it is and sends
the token of that host (GH_TOKEN for github.com, GH_ENTERPRISE_TOKEN for any other host), so the
same code talks to github.com, to an Enterprise server and to the loopback fake of the tests;
`GH_HOST` alone would make gh use https://HOST/api/v3, which a plain-HTTP test server cannot
answer.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Set
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from analyzer.errors import AnalyzerError

PER_PAGE = 100
MAX_PAGES = 30  # 3,000 comments: more than any issue the bot answers
TIMEOUT = 60.0


ACTIONS_BOT = "github-actions[bot]"  # who comments with the workflow's GITHUB_TOKEN
_STATUS = re.compile(r"\(HTTP (\d{3})\)")


class GitHubError(AnalyzerError):
    """A failed API call: one line naming the call (exit 1)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    author: str = ""  # login
    author_type: str = "User"  # User | Bot | Organization
    association: str = "NONE"  # OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, ... NONE

    @property
    def by_bot(self) -> bool:
        return self.author_type == "Bot" or self.author.lower().endswith("[bot]")

    @classmethod
    def from_api(cls, doc: dict) -> Comment:
        """A comment as the REST API (and an issue_comment event) gives it."""
        user = doc.get("user")
        user = user if isinstance(user, dict) else {}
        return cls(
            int(doc["id"]),
            str(doc.get("body") or ""),
            str(user.get("login") or ""),
            str(user.get("type") or "User"),
            str(doc.get("author_association") or "NONE"),
        )


@dataclass(frozen=True)
class Issue:
    api: str  # API root, no trailing slash
    repo: str  # owner/name
    number: int
    server: str = "https://github.com"  # the web host, where attachments live

    @property
    def url(self) -> str:
        return f"{self.api}/repos/{self.repo}/issues/{self.number}"


def gh_api(method: str, url: str, payload: Any = None) -> Any:
    """One `gh api` call; the parsed JSON answer (None when empty)."""
    args = ["gh", "api", "--method", method, url, "-H", "Accept: application/vnd.github+json"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as body:
        if payload is not None:
            json.dump(payload, body)
            body.flush()
            args += ["--input", body.name]
        try:
            res = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        except FileNotFoundError:
            raise GitHubError("the gh CLI is not installed (https://cli.github.com)") from None
        except subprocess.TimeoutExpired:
            raise GitHubError(f"gh api {method} {url}: no answer in {TIMEOUT:.0f} s") from None
    if res.returncode != 0:
        why = " ".join((res.stderr or res.stdout).split())[:300]
        status = _STATUS.search(res.stderr or "")
        raise GitHubError(f"gh api {method} {url}: {why}", int(status[1]) if status else None)
    try:
        return json.loads(res.stdout) if res.stdout.strip() else None
    except json.JSONDecodeError:
        raise GitHubError(f"gh api {method} {url}: answer is not JSON") from None


def comments(issue: Issue, total: int | None = None) -> list[Comment]:
    """The issue's comments, oldest first; of an issue with more than MAX_PAGES pages of them
    (`total`, the event's count) the newest pages, where the evidence and the bot's own comment are."""
    out: list[Comment] = []
    last = -(-total // PER_PAGE) if total else MAX_PAGES
    first = max(1, last - MAX_PAGES + 1)
    for page in range(first, first + MAX_PAGES):
        batch = gh_api("GET", f"{issue.url}/comments?per_page={PER_PAGE}&page={page}") or []
        out += [Comment.from_api(c) for c in batch]
        if len(batch) < PER_PAGE:
            break
    return out


def whoami(api: str) -> str:
    """The login the token comments as: the user of a personal token, else (GET /user answers
    403 to the workflow's GITHUB_TOKEN and to app tokens) github-actions[bot]."""
    try:
        return str((gh_api("GET", f"{api}/user") or {})["login"])
    except GitHubError as exc:
        if exc.status == 403:
            return ACTIONS_BOT
        raise
    except (KeyError, TypeError):
        raise GitHubError(f"gh api GET {api}/user: no login in the answer") from None


def labels(issue: Issue) -> set[str]:
    doc = gh_api("GET", issue.url) or {}
    return {str(lb["name"]) for lb in doc.get("labels") or []}


def create_comment(issue: Issue, body: str) -> int:
    return int(gh_api("POST", f"{issue.url}/comments", {"body": body})["id"])


def update_comment(issue: Issue, comment_id: int, body: str) -> None:
    gh_api("PATCH", f"{issue.api}/repos/{issue.repo}/issues/comments/{comment_id}", {"body": body})


def add_labels(issue: Issue, names: Set[str]) -> None:
    gh_api("POST", f"{issue.url}/labels", {"labels": sorted(names)})


def remove_label(issue: Issue, name: str) -> None:
    gh_api("DELETE", f"{issue.url}/labels/{quote(name, safe='')}")
