"""A fake GitHub on the loopback address: the few REST endpoints the issue bot calls (the
authenticated user, issue get, comments list/create/update, labels add/remove), one in-memory
repository whose comments have authors, the files attached to its issues (served as GitHub's web
host serves them, with redirects where a test asks), and a log of every request so a test can
tell reads from writes and see where the token went."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from loopback import LoopbackServer

WRITES = ("POST", "PATCH", "PUT", "DELETE")
ACTIONS_BOT = "github-actions[bot]"


@dataclass
class Repo:
    issues: dict[int, dict] = field(default_factory=dict)  # number -> {title, body, labels}
    comments: dict[int, dict] = field(default_factory=dict)  # id -> {issue, body, user, ...}
    files: dict[str, bytes] = field(default_factory=dict)  # web path -> attachment bytes
    redirects: dict[str, str] = field(default_factory=dict)  # web path -> Location
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, auth
    # None: the token is the workflow's GITHUB_TOKEN (GET /user answers 403 and comments are
    # github-actions[bot]'s); a login: a personal token of that user
    token_login: str | None = None
    next_id: int = 1000

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _ in self.requests if m in WRITES]

    def comments_of(self, number: int) -> list[dict]:
        return [c for c in self.comments.values() if c["issue"] == number]

    def add_comment(
        self, number: int, body: str, login: str, kind: str = "User", association: str = "NONE"
    ) -> int:
        """A comment by someone else than the bot (or by the bot, with its login)."""
        self.next_id += 1
        self.comments[self.next_id] = {
            "issue": number,
            "body": body,
            "user": {"login": login, "type": kind},
            "author_association": association,
        }
        return self.next_id

    def comment_api(self, comment_id: int) -> dict:
        """The comment as the REST API and an issue_comment event carry it."""
        c = self.comments[comment_id]
        return {"id": comment_id, **{k: v for k, v in c.items() if k != "issue"}}

    def me(self) -> dict:
        if self.token_login is None:
            return {"login": ACTIONS_BOT, "type": "Bot"}
        return {"login": self.token_login, "type": "User"}


class _Handler(BaseHTTPRequestHandler):
    repo: Repo
    full_name: str

    def log_message(self, *args) -> None:  # quiet test output
        pass

    def _answer(self, status: int, doc=None, headers: dict[str, str] | None = None) -> None:
        body = b"" if doc is None else json.dumps(doc).encode()
        self._send(status, body, {"Content-Type": "application/json", **(headers or {})})

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _attachment(self, path: str) -> bool:
        """GitHub's web host: an attached file (no token needed: a public repository)."""
        if not re.match(rf"/(?:user-attachments|{re.escape(self.full_name)})/files/", path):
            return False
        if path in self.repo.redirects:
            self._send(302, b"", {"Location": self.repo.redirects[path]})
        elif path in self.repo.files:
            self._send(200, self.repo.files[path], {"Content-Type": "application/octet-stream"})
        else:
            self._answer(404, {"message": "Not Found"})
        return True

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        self.repo.requests.append((method, url.path, self.headers.get("Authorization", "")))
        if method == "GET" and self._attachment(url.path):
            return None
        if not self.headers.get("Authorization", "").startswith("token "):
            return self._answer(401, {"message": "Requires authentication"})
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length)) if length else {}
        if url.path == "/user" and method == "GET":
            if self.repo.token_login is None:
                return self._answer(403, {"message": "Resource not accessible by integration"})
            return self._answer(200, self.repo.me())
        base = f"/repos/{self.full_name}/issues"
        if m := re.fullmatch(rf"{base}/comments/(\d+)", url.path):
            comment = self.repo.comments.get(int(m[1]))
            if comment is None or method != "PATCH":
                return self._answer(404, {"message": "Not Found"})
            comment["body"] = payload["body"]  # a maintainer's token may edit anyone's comment
            return self._answer(200, self.repo.comment_api(int(m[1])))
        m = re.fullmatch(rf"{base}/(\d+)(/comments|/labels|/labels/(.+))?", url.path)
        if m is None or int(m[1]) not in self.repo.issues:
            return self._answer(404, {"message": "Not Found"})
        number, issue = int(m[1]), self.repo.issues[int(m[1])]
        if m[2] is None and method == "GET":
            labels = [{"name": n} for n in sorted(issue["labels"])]
            return self._answer(200, {"number": number, "title": issue["title"], "labels": labels})
        if m[2] == "/comments" and method == "GET":
            q = parse_qs(url.query)
            per, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
            rows = [self.repo.comment_api(i) for i in sorted(self.repo.comments)]
            rows = [r for r in rows if self.repo.comments[r["id"]]["issue"] == number]
            return self._answer(200, rows[(page - 1) * per : page * per])
        if m[2] == "/comments" and method == "POST":
            me = self.repo.me()
            self.repo.next_id += 1
            self.repo.comments[self.repo.next_id] = {
                "issue": number,
                "body": payload["body"],
                "user": me,
                "author_association": "NONE" if me["type"] == "Bot" else "MEMBER",
            }
            return self._answer(201, self.repo.comment_api(self.repo.next_id))
        if m[2] == "/labels" and method == "POST":
            issue["labels"] |= set(payload["labels"])
            return self._answer(200, [{"name": n} for n in sorted(issue["labels"])])
        if m[3] and method == "DELETE":
            issue["labels"].discard(unquote(m[3]))
            return self._answer(200, [{"name": n} for n in sorted(issue["labels"])])
        return self._answer(404, {"message": "Not Found"})

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def do_DELETE(self) -> None:
        self._route("DELETE")


class FakeGitHub(LoopbackServer):
    """`with FakeGitHub("o/r") as gh:` serves on 127.0.0.1 (a free port) until the block ends;
    `gh.url` is both its API root and its web host."""

    def __init__(self, full_name: str) -> None:
        self.repo = Repo()
        super().__init__(type("Handler", (_Handler,), {"repo": self.repo, "full_name": full_name}))
