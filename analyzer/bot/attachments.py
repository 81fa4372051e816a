"""Fetch the files attached to an issue and its comments (links found by
`analyzer.bundle.issue.attachment_links`: only GitHub's own host, never an arbitrary URL).

The download is Python's own (gh would send the token on to wherever a redirect points): the
token goes to the GitHub server's own origin only (compared in ASCII: no look-alike host gets
it), as an unredirected header, so the signed storage URL GitHub redirects to gets no token. Each download is bounded in bytes (what the bundle limits
leave) and in time; any failure is a short reason for one line of the comment, never an error.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from analyzer import __version__

TIMEOUT = 60.0  # seconds for one attachment, connection and transfer
CHUNK = 1 << 16


class FetchError(Exception):
    """Why an attachment could not be fetched: one short reason."""


@dataclass(frozen=True)
class Fetched:
    path: Path
    sha256: str


class _NoTokenRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects to https only (or to the test's plain-http loopback host), at most 5."""

    max_redirections = 5

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlsplit(newurl).scheme not in ("https", urlsplit(req.full_url).scheme):
            raise FetchError(f"redirected to a {urlsplit(newurl).scheme} address")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_NoTokenRedirects)


def _origin(url: str) -> tuple[str, str] | None:
    """(scheme, host[:port]) of an ASCII URL, lower-cased; None for anything else."""
    parts = urlsplit(url)
    if not parts.netloc.isascii() or "@" in parts.netloc:
        return None
    return parts.scheme.lower(), parts.netloc.lower()


def token_for(url: str, server: str) -> str | None:
    """The token gh would use for `server` (GH_TOKEN on github.com, GH_ENTERPRISE_TOKEN
    elsewhere), and only when `url` is on the server's own origin: a host that merely looks
    like it, or any other, gets none."""
    origin = _origin(server)
    if origin is None or _origin(url) != origin:
        return None
    names = (
        ("GH_TOKEN", "GITHUB_TOKEN")
        if urlsplit(server).hostname == "github.com"
        else ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
    )
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def fetch(url: str, dest: Path, max_bytes: int, server: str, timeout: float = TIMEOUT) -> Fetched:
    """Download `url` into the new file `dest`, at most `max_bytes` and `timeout` seconds; the
    token goes with it when `url` is on `server`."""
    request = urllib.request.Request(
        url, headers={"User-Agent": f"hami-bundle-analyzer/{__version__}"}
    )
    token = token_for(url, server)
    if token:
        request.add_unredirected_header("Authorization", f"token {token}")
    deadline = time.monotonic() + timeout
    digest = hashlib.sha256()
    try:
        with _OPENER.open(request, timeout=timeout) as answer, dest.open("xb") as out:
            declared = answer.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise FetchError(f"{_too_big(max_bytes)} ({_mib(int(declared))})")
            size = 0
            while chunk := answer.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(_too_big(max_bytes))
                if time.monotonic() > deadline:
                    raise FetchError(f"download took longer than {timeout:.0f} s")
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise FetchError(
                "not found (HTTP 404): deleted, or in a private repository, whose attachments "
                "GitHub serves to signed-in browsers only"
            ) from None
        raise FetchError(f"HTTP {exc.code} {exc.reason}".strip()) from None
    except urllib.error.URLError as exc:
        raise FetchError(f"cannot connect: {exc.reason}") from None
    except TimeoutError:
        raise FetchError(f"no answer in {timeout:.0f} s") from None
    except OSError as exc:
        raise FetchError(f"download failed: {exc.strerror or exc}") from None
    except http.client.HTTPException as exc:  # a malformed answer (header too long, ...)
        raise FetchError(f"download failed: {str(exc)[:200] or type(exc).__name__}") from None
    return Fetched(dest, digest.hexdigest())


def _too_big(limit: int) -> str:
    return f"larger than the {_mib(limit)} the limits leave"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"
