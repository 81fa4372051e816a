"""Command line: analyze, inspect, timeline, batch, redact, rules {list,show,facts,schema,lint,test},
dev score.

Heavy modules (polars, jinja2) are imported inside commands so `--help` starts fast.
Exit codes of `analyze`: 0 no fault (at or above --fail-on), 1 a fault, 2 usage or input error
(one line on stderr), 3 internal error, 4 inconclusive (no fault, not enough to call it healthy).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from analyzer import __version__
from analyzer.errors import AnalyzerError, RuleLoadError

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Diagnose HAMi GPU node support bundles offline.",
)
rules_app = typer.Typer(no_args_is_help=True, help="List, show, lint and test the rules.")
app.add_typer(rules_app, name="rules")
dev_app = typer.Typer(no_args_is_help=True, help="Developer tools: score the analyzer on a corpus.")
app.add_typer(dev_app, name="dev")
EXIT_OK, EXIT_FAULT, EXIT_INPUT, EXIT_INTERNAL, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4


class Format(StrEnum):
    terminal = "terminal"
    json = "json"
    markdown = "markdown"
    html = "html"


class Severity(StrEnum):
    critical = "critical"
    error = "error"
    warning = "warning"
    info = "info"


RulesOpt = Annotated[
    list[Path] | None, typer.Option("--rules", help="Extra rule directory (may repeat).")
]
NodeOpt = Annotated[
    str | None, typer.Option("--node", help="Analyse only this node of a node List.")
]
MaxBytes = Annotated[
    int, typer.Option("--max-bytes", help="Archive/stdin uncompressed size cap (MiB).")
]
MaxMembers = Annotated[int, typer.Option("--max-members", help="Archive member count cap.")]
RedactorsOpt = Annotated[
    list[Path] | None,
    typer.Option("--redactors", help="Extra redactors YAML file (may repeat)."),
]
BundleArg = Annotated[
    list[str], typer.Argument(help="Bundle: folder, archive, file(s), or - for stdin.")
]
MapOpt = Annotated[
    Path | None,
    typer.Option("--map", help="Write the token -> real value map here (never in the bundle)."),
]


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(EXIT_INPUT)


def _ruleset(extra: list[Path] | None, use_cache: bool = True):
    from analyzer.rules.loader import load_ruleset

    try:
        rules = load_ruleset(list(extra or []), use_cache=use_cache)
    except RuleLoadError as exc:
        for p in exc.problems:
            typer.echo(f"error: {p}", err=True)
        raise typer.Exit(EXIT_INPUT) from None
    # the modules and the rules live as long as the process: keep the collector off them (a
    # full collection over polars' and jinja2's objects costs a small bundle ~20 ms)
    gc.freeze()
    return rules


def _limits(max_bytes: int, max_members: int):
    from analyzer.bundle.reader import Limits

    return Limits(max_members=max_members, max_total_bytes=max_bytes << 20)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    tmp = output.with_name(output.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(output)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        _fail(f"cannot write {output}: {exc.strerror or exc}")


def exit_code(report, fail_on: str = "info") -> int:
    """1 when a fault at or above `fail_on` fired on any node, 4 when nothing could be decided."""
    from analyzer.report.model import SEVERITY_RANK

    limit = SEVERITY_RANK[fail_on]
    faults = [f for n in report.nodes for f in n.faults()]
    if any(SEVERITY_RANK[f.severity] <= limit for f in faults):
        return EXIT_FAULT
    if not faults and all(n.primary.category == "inconclusive" for n in report.nodes):
        return EXIT_INCONCLUSIVE
    return EXIT_OK


@app.command()
def analyze(
    inputs: Annotated[
        list[str], typer.Argument(help="Bundle: folder, archive, file(s), or - for stdin.")
    ],
    format: Annotated[Format, typer.Option("--format", "-f")] = Format.terminal,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    node: NodeOpt = None,
    rules: RulesOpt = None,
    from_issue: Annotated[
        bool, typer.Option("--from-issue", help="Input is GitHub issue text or event JSON.")
    ] = False,
    max_bytes: MaxBytes = 4096,
    max_members: MaxMembers = 5000,
    fail_on: Annotated[
        Severity,
        typer.Option("--fail-on", help="Exit 1 only for faults at or above this severity."),
    ] = Severity.info,
    redact: Annotated[
        bool, typer.Option("--redact", help="Analyse a redacted copy: the output shows tokens.")
    ] = False,
    redactors: RedactorsOpt = None,
    map_file: MapOpt = None,
) -> None:
    """Diagnose a bundle. Exit 0: no fault, 1: a fault, 2: usage or input error, 3: internal
    error, 4: inconclusive."""
    from analyzer.analyze import analyze as run
    from analyzer.analyze import analyze_issue

    ruleset = _ruleset(rules)
    if output is not None and not output.parent.is_dir():
        _fail(f"cannot write {output}: no such directory {output.parent}")
    if (redactors or map_file) and not redact:
        _fail("--redactors and --map need --redact")
    try:
        if from_issue or (len(inputs) == 1 and _is_issue(inputs[0])):
            raw = _read_input(inputs[0])
            if redact:
                from analyzer.redact.bundle import redact_issue

                raw = redact_issue(raw, redactors or [], map_file)
            _bundle, report = analyze_issue(raw, ruleset, node)
            digest = raw
        elif redact:
            from analyzer.redact.bundle import analyze_redacted

            limits = _limits(max_bytes, max_members)
            bundle, report = analyze_redacted(
                inputs, ruleset, node, limits, redactors or [], map_file
            )
            digest = bundle.digest.encode()
        else:
            bundle, report = run(inputs, ruleset, node, _limits(max_bytes, max_members))
            digest = bundle.digest.encode()
    except AnalyzerError as exc:
        _fail(str(exc))
        return
    if format is Format.json:
        from analyzer.render.jsonout import render_json

        text = render_json(report)
    elif format is Format.markdown:
        from analyzer.render.markdown import render_markdown

        text = render_markdown(report, digest)
    elif format is Format.html:
        from analyzer.render.html import render_html

        text = render_html(report)
    else:
        from analyzer.render.terminal import render_terminal

        text = render_terminal(report)
    _write(text, output)
    raise typer.Exit(exit_code(report, fail_on.value))


def _is_issue(spec: str) -> bool:
    """An issue is a .md file, or a .json file holding an issue body (GitHub event payload)."""
    p = Path(spec)
    if p.suffix.lower() in (".md", ".markdown"):
        return p.is_file()
    if p.suffix.lower() == ".json" and p.is_file() and p.stat().st_size < (8 << 20):
        head = p.read_text(encoding="utf-8", errors="replace")
        return '"body"' in head and ('"issue"' in head or '"title"' in head)
    return False


def _read_input(spec: str) -> bytes:
    from analyzer.bundle.issue import MAX_ISSUE_BYTES
    from analyzer.errors import BundleError

    try:
        data = (
            sys.stdin.buffer.read(MAX_ISSUE_BYTES + 1) if spec == "-" else Path(spec).read_bytes()
        )
    except OSError as exc:
        raise BundleError(f"{spec}: {exc.strerror or exc}") from None
    return data


@app.command()
def inspect(
    inputs: Annotated[
        list[str], typer.Argument(help="Bundle: folder, archive, file(s) or - for stdin.")
    ],
    format: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
    node: NodeOpt = None,
    rules: RulesOpt = None,
    max_bytes: MaxBytes = 4096,
    max_members: MaxMembers = 5000,
) -> None:
    """Show what was found: files and kinds, node facts, GPU table, handshake, log statistics."""
    from analyzer.analyze import analyze as run
    from analyzer.render.inspect import render_inspect, render_inspect_json

    ruleset = _ruleset(rules)
    try:
        _bundle, report = run(inputs, ruleset, node, _limits(max_bytes, max_members))
    except AnalyzerError as exc:
        _fail(str(exc))
        return
    _write(render_inspect_json(report) if format == "json" else render_inspect(report), None)


@app.command()
def timeline(
    inputs: Annotated[
        list[str], typer.Argument(help="Bundle: folder, archive, file(s) or - for stdin.")
    ],
    format: Annotated[
        str, typer.Option("--format", "-f", help="text, csv, json or parquet")
    ] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="Only these sources (e.g. device-plugin-log, node)."),
    ] = None,
    severity: Annotated[
        str | None, typer.Option("--severity", help="Minimum severity: I, W, E or F.")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO time, inclusive.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO time, inclusive.")] = None,
    node: NodeOpt = None,
    rules: RulesOpt = None,
) -> None:
    """The merged, time-ordered events of every log and of the node object."""
    from analyzer.analyze import load_bundle, node_reports
    from analyzer.timeline import filter_timeline, write_timeline

    if format not in ("text", "csv", "json", "parquet"):
        _fail(f"unknown format {format!r}: use text, csv, json or parquet")
    if format == "parquet" and output is None:
        _fail("--format parquet needs --output FILE")
    ruleset = _ruleset(rules)
    try:
        bundle = load_bundle(inputs, ruleset)
        _report, tl = next(node_reports(bundle, ruleset, node))
        frame = filter_timeline(tl.frame, source, severity, since, until)
    except (AnalyzerError, ValueError) as exc:
        _fail(str(exc))
        return
    try:
        write_timeline(frame, format, output)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")


@app.command()
def batch(
    inputs: Annotated[
        list[str] | None, typer.Argument(help="Folder of tickets, list file(s), or bundle paths.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output folder for the tables.")
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="Worker processes (default: all cores).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-analyse bundles already in --out.")
    ] = False,
    csv: Annotated[bool, typer.Option("--csv", help="Also write the tables as CSV.")] = False,
    summary_only: Annotated[
        Path | None,
        typer.Option("--summary-only", help="Rebuild summary.html from the tables in DIR."),
    ] = None,
) -> None:
    """Analyse many bundles into bundles.parquet, findings.parquet and summary.html (resumable)."""
    from analyzer import batch as batch_mod

    if summary_only is not None:
        if not (summary_only / "bundles.parquet").is_file():
            _fail(f"{summary_only}: no bundles.parquet (run a batch first)")
        typer.echo(str(batch_mod.write_summary(summary_only)))
        return
    if not inputs or out is None:
        _fail("batch needs INPUT... and --out DIR (or --summary-only DIR)")
    missing = [i for i in inputs if not Path(i).exists()]
    if missing:
        _fail(f"{missing[0]}: no such file or directory")
    counts = batch_mod.run_batch(list(inputs), out, jobs, force, csv)
    typer.echo(
        f"{counts['bundles']} bundles, {counts['findings']} findings -> {out}/bundles.parquet, "
        f"{out}/findings.parquet, {out}/summary.html"
    )


@app.command()
def redact(
    inputs: BundleArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="A .tar.gz/.tgz archive, or a new folder.")
    ],
    redactors: RedactorsOpt = None,
    map_file: MapOpt = None,
    max_bytes: MaxBytes = 4096,
    max_members: MaxMembers = 5000,
) -> None:
    """Write a copy of the bundle with node names, hosts, addresses, e-mails, cloud ids, private
    registries and secrets replaced by stable tokens (node-1, ip-1, ...)."""
    from analyzer.redact.bundle import redact_bundle

    limits = _limits(max_bytes, max_members)
    try:
        result, warnings = redact_bundle(
            inputs, output, redactors=redactors or [], map_file=map_file, limits=limits
        )
    except AnalyzerError as exc:
        _fail(str(exc))
        return
    for w in [*warnings, *result.skipped]:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(
        f"{len(result.files)} files, {sum(result.counts.values())} values replaced by "
        f"{len(result.tokens.mapping())} tokens -> {output}"
        + (f" (map: {map_file})" if map_file else "")
    )


@rules_app.command("list")
def rules_list(rules: RulesOpt = None) -> None:
    """One line per rule: id, kind, severity, category, title."""
    rs = _ruleset(rules)
    for r in sorted(rs.rules.values(), key=lambda r: (r.category, r.id)):
        typer.echo(f"{r.id:42} {r.kind:6} {r.severity:8} {r.category:30} {r.title}")
    typer.echo(f"{len(rs.rules)} rules, {len(rs.signatures)} signatures")


@rules_app.command("show")
def rules_show(rule_id: str, rules: RulesOpt = None) -> None:
    """The rule's page: what it detects, why, evidence it uses, fix, references."""
    from analyzer.render.rulepage import render_rule_page

    rs = _ruleset(rules)
    if rule_id not in rs.rules and rule_id not in rs.signatures:
        _fail(f"no rule or signature {rule_id!r} (see `hami-analyzer rules list`)")
    typer.echo(render_rule_page(rs, rule_id))


@rules_app.command("lint")
def rules_lint(rules: RulesOpt = None) -> None:
    """Validate every rule file: exit 2 with file:line errors, 1 with warnings, 0 when clean."""
    rs = _ruleset(rules, use_cache=False)
    for w in rs.warnings:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(
        f"{'ok' if not rs.warnings else f'{len(rs.warnings)} warning(s)'}: {len(rs.rules)} rules "
        f"and {len(rs.signatures)} signatures in {len(rs.files)} files"
    )
    raise typer.Exit(1 if rs.warnings else 0)


@rules_app.command("facts")
def rules_facts(
    format: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
) -> None:
    """The fact registry: every fact a rule may name, its type, producer and sources."""
    import json

    from analyzer.facts.registry import FACTS

    if format == "json":
        typer.echo(json.dumps([f.__dict__ for f in FACTS], indent=2))
        return
    for f in FACTS:
        src = ", ".join(f.sources) or "always known"
        typer.echo(f"{f.path:42} {f.type:8} {f.producer:10} [{src}]  {f.description}")


@rules_app.command("schema")
def rules_schema() -> None:
    """The JSON Schema of rule files (also shipped as analyzer/schema/rules.schema.json)."""
    from analyzer.rules.schema import schema_text

    sys.stdout.write(schema_text())


@rules_app.command("test")
def rules_test(
    rule_id: Annotated[str | None, typer.Argument()] = None, rules: RulesOpt = None
) -> None:
    """Run every rule's own test cases and every signature's examples."""
    from analyzer.rules.selftest import run_rule_tests

    rs = _ruleset(rules)
    results = run_rule_tests(rs, rule_id)
    failed = [r for r in results if not r.ok]
    for r in failed:
        typer.echo(f"FAIL {r.rule_id} {r.case}: {r.detail}")
    typer.echo(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    raise typer.Exit(1 if failed else 0)


@dev_app.command("score")
def dev_score(
    corpus: Annotated[Path, typer.Argument(help="Folder of cases, each with expected.yaml.")],
    format: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
    rules: RulesOpt = None,
) -> None:
    """Score the analyzer on real cases, as attached files and as issue.md alone."""
    from analyzer.score import render_score, score_corpus

    if not corpus.is_dir():
        _fail(f"{corpus}: not a folder of cases")
    result = score_corpus(corpus, _ruleset(rules))
    typer.echo(render_score(result, format))


@app.command()
def version() -> None:
    """Print the analyzer version."""
    typer.echo(__version__)


def _cli_error(exc: Exception) -> tuple[str, int] | None:
    """A command-line error raised by click (typer vendors it from 0.2x, earlier it is click
    itself, so it is recognised by its interface): its message on one line and exit code."""
    if not (hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)):
        return None
    msg = " ".join(str(exc.format_message()).split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and exc.exit_code == 2:
        path = ctx.command_path.replace("hami-analyzer", "").strip()
        msg += f" (see: hami-analyzer {path + ' ' if path else ''}--help)"
    return f"error: {msg}", exc.exit_code


def run(args: list[str] | None = None) -> int:
    """The command line, as an exit status. Usage errors are one line too (click would print
    the usage and a box), so a bot or CI log shows the reason, not a screenful."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="hami-analyzer", standalone_mode=False)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        typer.echo(str(exc.code), err=True)
        return 1
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # a bug: one line, never a traceback (HAMI_ANALYZER_DEBUG=1 shows it)
        if type(exc).__name__ == "Abort":  # click's Ctrl-C / EOF
            typer.echo("interrupted", err=True)
            return 130
        if (cli := _cli_error(exc)) is not None:
            typer.echo(cli[0], err=True)
            return cli[1]
        if os.environ.get("HAMI_ANALYZER_DEBUG"):
            import traceback

            traceback.print_exc()
        typer.echo(
            f"error: internal error ({type(exc).__name__}: {exc}); please report it", err=True
        )
        return EXIT_INTERNAL
    return code if isinstance(code, int) else EXIT_OK


def main() -> None:
    """Console entry point. Tearing the interpreter down with polars loaded takes ~100 ms, as long
    as analysing a small bundle; by now every output is written and every temporary folder
    removed (context managers), so the process ends without it."""
    code = run()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError):  # a closed pipe (`| head`) is not our failure
        pass
    os._exit(code)
