"""A fake GitHub REST API on the loopback address: the few endpoints the issue bot calls (issue
get, comments list/create/update, labels add/remove), one in-memory repository, and a log of
every request so a test can tell reads from writes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from loopback import LoopbackServer

WRITES = ("POST", "PATCH", "PUT", "DELETE")


@dataclass
class Repo:
    issues: dict[int, dict] = field(default_factory=dict)  # number -> {title, body, labels}
    comments: dict[int, dict] = field(default_factory=dict)  # id -> {issue, body}
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, auth
    next_id: int = 1000

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _ in self.requests if m in WRITES]

    def comments_of(self, number: int) -> list[dict]:
        return [c for c in self.comments.values() if c["issue"] == number]


class _Handler(BaseHTTPRequestHandler):
    repo: Repo
    full_name: str

    def log_message(self, *args) -> None:  # quiet test output
        pass

    def _answer(self, status: int, doc=None) -> None:
        body = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        self.repo.requests.append((method, url.path, self.headers.get("Authorization", "")))
        if not self.headers.get("Authorization", "").startswith("token "):
            return self._answer(401, {"message": "Requires authentication"})
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length)) if length else {}
        base = f"/repos/{self.full_name}/issues"
        if m := re.fullmatch(rf"{base}/comments/(\d+)", url.path):
            comment = self.repo.comments.get(int(m[1]))
            if comment is None or method != "PATCH":
                return self._answer(404, {"message": "Not Found"})
            comment["body"] = payload["body"]
            return self._answer(200, {"id": int(m[1]), "body": comment["body"]})
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
            rows = [{"id": i, "body": c["body"]} for i, c in sorted(self.repo.comments.items())]
            rows = [r for r in rows if self.repo.comments[r["id"]]["issue"] == number]
            return self._answer(200, rows[(page - 1) * per : page * per])
        if m[2] == "/comments" and method == "POST":
            self.repo.next_id += 1
            self.repo.comments[self.repo.next_id] = {"issue": number, "body": payload["body"]}
            return self._answer(201, {"id": self.repo.next_id, "body": payload["body"]})
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
    """`with FakeGitHub("o/r") as gh:` serves on 127.0.0.1 (a free port) until the block ends."""

    def __init__(self, full_name: str) -> None:
        self.repo = Repo()
        super().__init__(type("Handler", (_Handler,), {"repo": self.repo, "full_name": full_name}))
