"""Ticket ids from bundle paths, the file names of their reports (safe in a URL and on disk), and
the ticket metadata (customer, opened at, ...) a CSV joins to them."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path, PurePath
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    import polars as pl

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".gz")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def ticket_of(path: str) -> str:
    """The ticket a bundle belongs to: its folder or archive name without the archive suffix.

    >>> ticket_of("/data/tickets/T-1042.tar.gz"), ticket_of("/data/tickets/T-1043/"), ticket_of("a.zip")
    ('T-1042', 'T-1043', 'a')
    """
    name = PurePath(path).name or str(path)
    low = name.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if low.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def report_names(tasks: list[tuple[str, str]]) -> dict[str, str]:
    """Report file name of each (bundle id, path): `<ticket>.html` when the ticket is plain and
    no other bundle of the batch has the same ticket; otherwise a sanitised name made unique by a
    hash of the bundle id (a ticket name is untrusted: no path, no markup, no leading dot).

    >>> report_names([("/t/T-1.tgz", "/t/T-1.tgz"), ("/t/../<b>x", "/t/../<b>x")])
    {'/t/T-1.tgz': 'T-1.html', '/t/../<b>x': '_b_x-a1057db0.html'}
    >>> a, b = report_names([("/a/T-2", "/a/T-2"), ("/b/T-2.zip", "/b/T-2.zip")]).values()
    >>> a != b and a.startswith("T-2-") and b.startswith("T-2-")
    True
    """
    tickets = {bid: ticket_of(path) for bid, path in tasks}
    seen = Counter(tickets.values())
    names = {}
    for bid, ticket in tickets.items():
        safe = _UNSAFE.sub("_", ticket)[:80].lstrip(".") or "ticket"
        if safe != ticket or seen[ticket] > 1:
            safe += "-" + hashlib.sha256(bid.encode()).hexdigest()[:8]
        names[bid] = safe + ".html"
    return names


_REPORT_PATH = re.compile(r"reports/[A-Za-z0-9._-]+\.html")


def report_href(path: str | None) -> str | None:
    """The link to a report written by `batch --reports`; anything else in the column (tables
    merged from elsewhere) is not linked.

    >>> report_href("reports/T-1.html"), report_href("javascript:alert(1)"), report_href("reports/../x.html")
    ('reports/T-1.html', None, None)
    """
    if not path or not _REPORT_PATH.fullmatch(path) or ".." in path:
        return None
    return quote(path)


TICKET_ALIASES = ("ticket", "ticket_id", "id")  # the column that names the ticket, first found


def read_ticket_csv(path: Path) -> pl.DataFrame:
    """Ticket metadata from a CSV with a header: a `ticket` column (or `ticket_id`, `id`) holding
    the ticket names the batch derives from bundle paths (T-1042 for T-1042.tar.gz), and any
    others (customer, opened_at, priority, ...). Every value is read as text; header names are
    normalised (`Opened At` is `opened_at`); a ticket listed twice keeps its first row."""
    import polars as pl

    from analyzer.errors import AnalyzerError

    try:
        frame = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")
    except (OSError, pl.exceptions.PolarsError) as exc:
        why = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise AnalyzerError(f"{path}: cannot read the ticket CSV ({why[:200]})") from None
    frame = frame.rename(
        {c: re.sub(r"[\s-]+", "_", c.strip().lower()) for c in frame.columns}, strict=False
    )
    key = next((c for c in TICKET_ALIASES if c in frame.columns), None)
    if key is None:
        raise AnalyzerError(
            f"{path}: no ticket column (expected one of {', '.join(TICKET_ALIASES)}; "
            f"found {', '.join(frame.columns) or 'none'})"
        )
    frame = frame.rename({key: "ticket"}).drop(
        [c for c in TICKET_ALIASES if c != key and c in frame.columns]
    )
    return frame.filter(pl.col("ticket").is_not_null()).unique(
        "ticket", keep="first", maintain_order=True
    )
