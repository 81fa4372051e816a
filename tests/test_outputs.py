"""Every command refuses, before it writes anything, an output path (-o, --out, --map,
--outputs) that is one of its inputs (spelled `./x` or `x`, through a symlink or a hard link),
lies inside an input folder, or below an input file (an archive's own path): exit 2, one line,
the input untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from analyzer.outputs import OutputOnInputError, check_outputs
from conftest import CLI, SAMPLES
from contract import tree_digest

SAMPLE = SAMPLES / "healthy-single-gpu" / "bundle"


def _run(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HAMI_ANALYZER_DEBUG", "KUBECONFIG")}
    env["HOME"] = str(cwd.parent / "home")  # its rules cache is no output of the command
    env.update(extra)
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """bundle/ (a folder), b.tgz (an archive), event.json, in a work folder."""
    work = tmp_path / "work"
    shutil.copytree(SAMPLE, work / "bundle")
    subprocess.run(["tar", "-czf", "b.tgz", "-C", "bundle", "."], cwd=work, check=True)
    (work / "event.json").write_text('{"issue": {"number": 1, "title": "t", "body": "x"}}')
    return work


# (command line with {out} for the output, the input it must not touch)
COMMANDS = {
    "analyze -o": (["analyze", "b.tgz", "-f", "html", "-o", "{out}"], "b.tgz"),
    "analyze --map": (["analyze", "b.tgz", "--redact", "--map", "{out}"], "b.tgz"),
    "redact -o": (["redact", "b.tgz", "-o", "{out}"], "b.tgz"),
    "redact --map": (["redact", "b.tgz", "-o", "r.tgz", "--map", "{out}"], "b.tgz"),
    "timeline -o": (["timeline", "b.tgz", "-f", "csv", "-o", "{out}"], "b.tgz"),
    "batch --out": (["batch", "b.tgz", "--out", "{out}", "-j", "1"], "b.tgz"),
    "bot --outputs": (
        ["bot", "--event", "event.json", "--dry-run", "--outputs", "{out}"],
        "event.json",
    ),
    "collect -o": (
        ["collect", "--kubectl", "/bin/true", "--kubeconfig", "b.tgz", "-o", "{out}"],
        "b.tgz",
    ),
    "collect --map": (
        [
            "collect",
            "--kubectl",
            "/bin/true",
            "--kubeconfig",
            "b.tgz",
            "-o",
            "c.tgz",
            "--map",
            "{out}",
        ],
        "b.tgz",
    ),
}
# how the output is spelled, relative to the work folder
SPELLINGS = {
    "same name": lambda w, src: src,
    "./ spelling": lambda w, src: f"./{src}",
    "absolute via ..": lambda w, src: str(w / "bundle" / ".." / src),
    "symlink to it": lambda w, src: _link(w, src),
    "hard link to it": lambda w, src: _hard(w, src),
    "below the archive": lambda w, src: f"{src}/report.html",
}


def _link(w: Path, src: str) -> str:
    (w / "link").symlink_to(w / src)
    return "link"


def _hard(w: Path, src: str) -> str:
    os.link(w / src, w / "hard")
    return "hard"


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_output_onto_an_input_is_refused(command, spelling, work):
    args, source = COMMANDS[command]
    out = SPELLINGS[spelling](work, source)
    before = tree_digest(work / source), sorted(p.name for p in work.iterdir())
    res = _run(work, *[a.replace("{out}", out) for a in args])
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert "inputs are never modified" in res.stderr, res.stderr
    assert (tree_digest(work / source), sorted(p.name for p in work.iterdir())) == before


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "bundle", "-f", "json", "-o", "bundle/report.json"],
        ["analyze", "./bundle/", "-f", "json", "-o", "bundle/sub/../report.json"],
        ["redact", "bundle", "-o", "bundle/redacted"],
        ["timeline", "bundle", "-o", "bundle/t.txt"],
        ["batch", "bundle", "--out", "bundle/out"],
        ["analyze", "bundle/node.yaml", "-o", "./bundle/node.yaml"],
        ["analyze", "b.tgz", "--rules", "bundle", "-o", "bundle/r.txt"],
    ],
)
def test_output_into_an_input_folder_is_refused(args, work):
    before = tree_digest(work / "bundle")
    res = _run(work, *args)
    assert res.returncode == 2 and "inputs are never modified" in res.stderr, res.stderr
    assert tree_digest(work / "bundle") == before


def test_outputs_beside_the_inputs_are_written(work):
    res = _run(
        work, "analyze", "b.tgz", "-f", "json", "-o", "report.json", "--redact", "--map", "map.json"
    )
    assert res.returncode in (0, 1, 4), res.stderr
    assert (work / "report.json").stat().st_size and (work / "map.json").stat().st_size
    res = _run(work, "redact", "bundle", "-o", "r.tgz", "--map", "r.tgz")
    assert res.returncode == 2 and "are the same file" in res.stderr


def test_check_outputs_skips_stdin_urls_and_missing_options():
    check_outputs(
        {"-o": "report.html", "--map": None, "--out": "s3://b/out"}, ["-", "s3://b/t", None]
    )
    with pytest.raises(OutputOnInputError):
        check_outputs({"--out": "x/y"}, ["x"])


def test_a_printable_message_for_a_hostile_name(work):
    name = "b\x1b]52;c;aGk=\x07.tgz"
    shutil.copy(work / "b.tgz", work / name)
    res = _run(work, "analyze", name, "-o", name)
    assert res.returncode == 2 and "\x1b" not in res.stderr and "\x07" not in res.stderr


@pytest.mark.parametrize("where", ["~/.kube/config", "$KUBECONFIG"])
@pytest.mark.parametrize("option", ["-o", "--map"])
def test_collect_never_writes_onto_the_kubeconfig_kubectl_reads(where, option, work):
    """Without --kubeconfig, kubectl reads $KUBECONFIG (a list of files) or ~/.kube/config:
    those are collect's inputs too."""
    home = work.parent / "home"
    (home / ".kube").mkdir(parents=True)
    default, listed = home / ".kube" / "config", work / "kc2"
    for kubeconfig in (default, work / "kc1", listed):
        kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    env = {"KUBECONFIG": f"{work / 'kc1'}{os.pathsep}{listed}"} if where != "~/.kube/config" else {}
    target = str(default if not env else listed)
    args = ["-o", target] if option == "-o" else ["-o", "c.tgz", "--map", target]
    res = _run(work, "collect", "--kubectl", "/bin/true", *args, **env)
    assert res.returncode == 2 and "inputs are never modified" in res.stderr, res.stderr
    assert Path(target).read_text() == "apiVersion: v1\nkind: Config\n"
