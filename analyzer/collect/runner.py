"""Run one external command with a time limit and a size bound, and record how it went.

A failed call is information, not an error: a forbidden `kubectl get` becomes a manifest line
saying so, and the collection goes on."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analyzer.bundle.text import printable

GRACE = 5.0  # seconds kubectl gets beyond its own --request-timeout before it is killed
SCRATCH = ".scratch"  # where output lands before it is kept or read (inside the staging folder)


@dataclass(frozen=True)
class Call:
    """One command in the manifest: what ran, where its output went, how it ended."""

    command: str  # shell-quoted, the program by its name (not its path)
    file: str | None  # bundle-relative path of the kept output; None when nothing was kept
    status: str  # ok | empty | forbidden | not-found | failed | timeout | skipped
    exit_code: int | None  # None when it was killed or never started
    seconds: float
    bytes: int = 0
    truncated: bool = False  # cut at the size bound
    error: str = ""  # the last line it printed on stderr
    kind: str = ""  # the catalogue kind the output is expected to be


def classify(exit_code: int, stderr: str, size: int) -> str:
    """A call's status from its exit code and what kubectl printed.

    >>> classify(1, 'Error from server (Forbidden): leases.coordination.k8s.io is forbidden', 0)
    'forbidden'
    >>> classify(1, 'Error from server (NotFound): leases "hami-scheduler" not found', 0)
    'not-found'
    >>> classify(1, 'Unable to connect to the server: context deadline exceeded', 0)
    'timeout'
    >>> classify(0, '', 0), classify(0, '', 12), classify(1, 'Unable to connect', 0)
    ('empty', 'ok', 'failed')
    """
    if exit_code == 0:
        return "ok" if size else "empty"
    low = stderr.lower()
    if "forbidden" in low:
        return "forbidden"
    if "notfound" in low or "not found" in low:
        return "not-found"
    if "timeout" in low or "deadline exceeded" in low:  # kubectl's own --request-timeout
        return "timeout"
    return "failed"


def _shown(argv: list[str]) -> str:
    """The command for the manifest: the program by its name, and without the kubeconfig's
    path (a local path, often a user's home; it says nothing about the cluster).

    >>> _shown(["/usr/bin/kubectl", "--kubeconfig", "/home/ann/.kube/c", "get", "node"])
    'kubectl get node'
    """
    args = list(argv[1:])
    while "--kubeconfig" in args[:-1]:
        at = args.index("--kubeconfig")
        del args[at : at + 2]
    return shlex.join([Path(argv[0]).name, *args])


def _brief(command: str) -> str:
    """A command without the options every call repeats (kubeconfig, context, timeout).

    >>> _brief("kubectl --kubeconfig /k --request-timeout=30s get node -o name -- n1")
    'kubectl get node -o name -- n1'
    """
    return re.sub(r" --(?:kubeconfig|context) \S+| --request-timeout=\S+", "", command)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


class Runner:
    """Runs commands into the staging folder and keeps the list of calls for the manifest."""

    def __init__(
        self,
        staging: Path,
        timeout: float,
        max_bytes: int,
        progress: Callable[[str], None],
        env: dict[str, str] | None = None,
    ) -> None:
        self.staging = staging
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.progress = progress
        self.env = env
        self.calls: list[Call] = []
        (staging / SCRATCH).mkdir(parents=True, exist_ok=True)

    def skip(self, command: str, why: str) -> None:
        self._record(Call(command, None, "skipped", None, 0.0, error=why))

    def keep(
        self,
        argv: list[str],
        file: str,
        kind: str,
        transform: Callable[[bytes], bytes] | None = None,
    ) -> Call:
        """Run `argv` and keep its output (through `transform`, which may raise ValueError) as
        `file` of the bundle, when there is any."""
        if transform is None:
            return self._record(self._run(argv, file, None, kind)[0])
        call, data = self._run(argv, None, None, kind)
        if data is None or call.status != "ok":
            return self._record(call)
        try:
            data = transform(data)
        except ValueError as exc:
            return self._record(Call(**{**call.__dict__, "status": "failed", "error": str(exc)}))
        return self.add(call.command, file, kind, data, call.exit_code, call.seconds)

    def add(
        self,
        command: str,
        file: str,
        kind: str,
        data: bytes,
        exit_code: int | None,
        seconds: float,
        error: str = "",
    ) -> Call:
        """Keep `data`, obtained by `command` (run elsewhere: inside a debug pod, or read and
        transformed here), as `file` of the bundle, and record it."""
        if exit_code == 0 or data:
            status = "ok" if data else "empty"
        else:
            status = classify(exit_code if exit_code is not None else 1, error, 0)
        kept = None
        if data:
            target = self.staging / file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            kept = file
        return self._record(
            Call(command, kept, status, exit_code, seconds, len(data), False, error, kind)
        )

    def read(self, argv: list[str], timeout: float | None = None) -> bytes | None:
        """Run `argv` for its output (discovery); None when it did not succeed."""
        call, data = self._run(argv, None, timeout)
        return data if self._record(call).status == "ok" else None

    def run_for(self, argv: list[str], stdin: bytes, timeout: float | None = None) -> Call:
        """Run `argv` with `stdin` for what it does (create an object), and record how it went."""
        return self._record(self._run(argv, None, timeout, stdin=stdin)[0])

    def _run(
        self,
        argv: list[str],
        file: str | None,
        timeout: float | None = None,
        kind: str = "",
        stdin: bytes | None = None,
    ) -> tuple[Call, bytes | None]:
        shown = _shown(argv)
        scratch = self.staging / SCRATCH / f"{len(self.calls)}.out"
        start = time.monotonic()
        try:
            with scratch.open("wb") as out:
                res = subprocess.run(
                    argv,
                    stdout=out,
                    stderr=subprocess.PIPE,
                    input=stdin,
                    stdin=subprocess.DEVNULL if stdin is None else None,
                    timeout=(timeout or self.timeout) + GRACE,
                    env=self.env,
                )
        except subprocess.TimeoutExpired:
            scratch.unlink(missing_ok=True)
            took = time.monotonic() - start
            return Call(
                shown, None, "timeout", None, took, error=f"no answer in {took:.0f} s"
            ), None
        except OSError as exc:
            scratch.unlink(missing_ok=True)
            return Call(shown, None, "failed", None, 0.0, error=str(exc.strerror or exc)), None
        took = time.monotonic() - start
        size = scratch.stat().st_size
        truncated = size >= self.max_bytes  # kubectl's --limit-bytes stops exactly there
        if size > self.max_bytes:
            with scratch.open("r+b") as fh:
                fh.truncate(self.max_bytes)
            size = self.max_bytes
        stderr = res.stderr.decode("utf-8", "replace")
        status = classify(res.returncode, stderr, size)
        kept = None
        data = None
        if status == "ok" and file is not None:
            target = self.staging / file
            target.parent.mkdir(parents=True, exist_ok=True)
            scratch.replace(target)
            kept = file
        elif file is None:
            data = scratch.read_bytes()
        scratch.unlink(missing_ok=True)
        error = "" if status in ("ok", "empty") else last_line(stderr)
        return Call(shown, kept, status, res.returncode, took, size, truncated, error, kind), data

    def finish(self) -> None:
        """Remove the scratch folder (every output has been kept or read by now)."""
        scratch = self.staging / SCRATCH
        for p in scratch.iterdir():
            p.unlink()
        scratch.rmdir()

    def _record(self, call: Call) -> Call:
        """Keep the call for the manifest and print its progress line (the one style of every
        line collect prints while it runs; text from the cluster made terminal-safe)."""
        self.calls.append(call)
        what = call.file or _brief(call.command)
        what = what if len(what) <= 160 else what[:157] + "..."
        detail = f": {call.error}" if call.error else ""
        size = f", {call.bytes:,} bytes" if call.bytes else ""
        cut = ", truncated" if call.truncated else ""
        self.progress(
            printable(
                f"[{len(self.calls)}] {what} ... {call.status} "
                f"({call.seconds:.1f} s{size}{cut}){detail}"
            ).replace("\n", " ")
        )
        return call
