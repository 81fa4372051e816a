"""The rule linter (analyzer/rules/lint.py): each validator reports a one-defect rules directory
with the right severity and the offending id, the builtin rules lint clean, and the shipped JSON
Schema is current and accepts every rule and signature file under rules/."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

import analyzer.rules.lint as lint_mod
from analyzer.cli import app
from analyzer.rules import builtin_rules_dir
from analyzer.rules.lint import CHECKS, lint
from analyzer.rules.loader import BUILTIN_DATA, load_ruleset
from analyzer.rules.schema import SCHEMA_PATH, rules_schema, schema_text

runner = CliRunner()
RID, SID = "lint-probe", "lint-probe-sig"


def probe_rule(**changes) -> dict:
    """A custom rule that lints clean; `changes` add the one defect (None removes a key)."""
    rule = {
        "id": RID,
        "title": "Lint probe",
        "severity": "info",
        "kind": "fault",
        "category": "inconclusive",
        "when": {"fact": "node.ready", "eq": False},
        "explanation": "probe",
        "tests": {"fires": [{"files": {"node.yaml": "kind: Node\n"}}]},
    }
    rule.update(changes)
    return {k: v for k, v in rule.items() if v is not None}


def probe_signature(**changes) -> dict:
    """A custom signature that lints clean; `changes` add the one defect (None removes a key)."""
    sig = {
        "id": SID,
        "source": ["text"],
        "regex": r"lint probe failed: (?P<what>\w+)",
        "meaning": "A probe line.",
        "examples": {"match": ["lint probe failed: disk"], "no_match": ["lint probe ok"]},
    }
    sig.update(changes)
    return {k: v for k, v in sig.items() if v is not None}


def write_rules(d: Path, rules=(), signatures=()) -> Path:
    doc = {}
    if signatures:
        doc["signatures"] = list(signatures)
    if rules:
        doc["rules"] = list(rules)
    path = d / "probe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def reported(d: Path, check, monkeypatch) -> list[tuple[str, str]]:
    """What one check reports on builtin rules plus `d`, loaded without the load-time lint."""
    with monkeypatch.context() as m:
        m.setattr(lint_mod, "lint", lambda rs: ([], []))
        rs = load_ruleset([d], use_cache=False)
    return [(issue.level, str(issue)) for issue in check().issues(rs)]


def assert_one_defect(tmp_path, monkeypatch, validator, severity, ident, fragment):
    """`validator` reports exactly one problem of `severity` naming the file, `ident` and
    `fragment`, and `hami-analyzer rules lint --rules DIR` prints that one problem and nothing else."""
    path = tmp_path / "probe.yaml"
    problems = reported(tmp_path, validator, monkeypatch)
    assert len(problems) == 1, problems
    level, msg = problems[0]
    assert level == severity
    assert msg.startswith(f"{path}:") and ident in msg and fragment in msg, msg
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code == (2 if severity == "error" else 1), res.output
    assert res.stderr.splitlines() == [f"{severity}: {msg}"]


COVERED = set()


def covers(check):
    """Register the check a test exercises (checked by test_every_check_has_a_test)."""

    def mark(fn):
        COVERED.add(check.__name__)
        return fn

    return mark


def test_probe_files_lint_clean(tmp_path):
    """The probe rule and signature alone lint clean, so each test's report is its one defect."""
    write_rules(tmp_path, [probe_rule()], [probe_signature()])
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.stderr == ""


def test_a_key_given_twice_is_an_error_at_its_line(tmp_path):
    """YAML keeps the last of two equal keys: a rule pasted over another's `- id:` line took its
    texts under the new id. The loader refuses it, at the second key's line."""
    (tmp_path / "twice.yaml").write_text(
        "rules:\n  - id: probe-twice\n    title: one\n    title: two\n", encoding="utf-8"
    )
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code != 0
    assert "twice.yaml:4: YAML error: key 'title' given twice in one mapping" in res.output


def test_builtin_rules_lint_clean():
    """`hami-analyzer rules lint` on the shipped rules exits 0 with no warnings."""
    res = runner.invoke(app, ["rules", "lint"])
    assert res.exit_code == 0, res.output
    assert res.stderr == "" and res.stdout.startswith("ok: ")
    assert lint(load_ruleset(use_cache=False)) == ([], [])


@covers(lint_mod.UnknownFacts)
def test_unknown_facts(tmp_path, monkeypatch):
    """UnknownFacts: a template naming an undeclared fact is an error naming the rule."""
    write_rules(tmp_path, [probe_rule(title="GPUs: {{ fact('node.bogus_count') }}")])
    assert_one_defect(
        tmp_path,
        monkeypatch,
        lint_mod.UnknownFacts,
        "error",
        f"rule {RID}",
        "unknown fact 'node.bogus_count'",
    )


@covers(lint_mod.Conditions)
@pytest.mark.parametrize(
    ("when", "fragment"),
    [
        pytest.param(
            {"fact": "node.labels.gpu", "eq": True},
            "eq True can never equal a str value",
            id="bool-vs-str-fact",
        ),
        pytest.param(
            {"fact": "node.allocatable.gpu", "in": [1, "2"]},
            "in '2' can never equal a int value",
            id="str-in-int-list",
        ),
        pytest.param(
            {"fact": "node.name", "gt": 3}, "gt needs a number fact", id="ordering-on-str"
        ),
        pytest.param(
            {"fact": "node.allocatable.gpu", "ge": "1"},
            "ge needs a number fact and a number",
            id="ordering-str-operand",
        ),
        pytest.param(
            {"fact": "node.allocatable.gpu", "matches": "^1"},
            "matches needs a string fact",
            id="matches-on-int",
        ),
        pytest.param(
            {"fact": "node.name", "contains": 1},
            "contains on a string needs a string",
            id="contains-int-in-str",
        ),
        pytest.param(
            {"fact": "node.ready", "exists": "yes"},
            "exists takes true or false",
            id="exists-not-bool",
        ),
        pytest.param(
            {"fact": "config.helm-values.devicePlugin.enabled", "exists": "false"},
            "exists takes true or false",
            id="exists-not-bool-on-config-fact",
        ),
        pytest.param(
            {"age_of": "node.name", "gt": "5m"}, "age_of needs a datetime fact", id="age-of-str"
        ),
        pytest.param(
            {"fact": "node.name", "eq": {"fact": "node.ready"}},
            "compared with node.ready (bool)",
            id="factref-type-mismatch",
        ),
        pytest.param(
            {"signature": "sch-node-added", "in": ["no-such-kind"]},
            "in: unknown kind 'no-such-kind'",
            id="in-unknown-kind",
        ),
    ],
)
def test_conditions(tmp_path, monkeypatch, when, fragment):
    """Conditions: a node whose operand can never match the fact's type, or whose `in:` names no
    kind, is an error naming the rule."""
    write_rules(tmp_path, [probe_rule(when=when)])
    assert_one_defect(tmp_path, monkeypatch, lint_mod.Conditions, "error", f"rule {RID}", fragment)


@covers(lint_mod.SignatureExamples)
@pytest.mark.parametrize(
    ("changes", "severity", "fragment"),
    [
        pytest.param(
            {"examples": {"match": ["lint probe passed"]}},
            "error",
            "example does not match",
            id="match-example-fails",
        ),
        pytest.param(
            {"examples": {"match": ["lint probe failed: a"], "no_match": ["lint probe failed: b"]}},
            "error",
            "no_match example matches",
            id="no-match-example-matches",
        ),
        pytest.param({"examples": None}, "warning", "no `examples: match:` line", id="no-examples"),
    ],
)
def test_signature_examples(tmp_path, monkeypatch, changes, severity, fragment):
    """SignatureExamples: a missing or misbehaving example is reported naming the signature."""
    write_rules(tmp_path, signatures=[probe_signature(**changes)])
    assert_one_defect(
        tmp_path, monkeypatch, lint_mod.SignatureExamples, severity, f"signature {SID}", fragment
    )


@covers(lint_mod.ReferencesResolve)
@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        pytest.param(
            {"explains": ["no-such-rule"]}, "explains unknown rule 'no-such-rule'", id="explains"
        ),
        pytest.param({"explains": [RID]}, "explains itself", id="explains-itself"),
        pytest.param(
            {"collect": ["no-such-kind"]},
            "collect names unknown kind 'no-such-kind'",
            id="collect-unknown",
        ),
        pytest.param(
            {"collect": ["issue-text"]},
            "collect names kind 'issue-text', which has no command",
            id="collect-no-command",
        ),
    ],
)
def test_references_resolve(tmp_path, monkeypatch, changes, fragment):
    """ReferencesResolve: explains/collect naming nothing real is an error naming the rule."""
    write_rules(tmp_path, [probe_rule(**changes)])
    assert_one_defect(
        tmp_path, monkeypatch, lint_mod.ReferencesResolve, "error", f"rule {RID}", fragment
    )


@covers(lint_mod.TemplateCaptures)
@pytest.mark.parametrize(
    ("explanation", "severity", "fragment"),
    [
        pytest.param(
            "node {{ captures['no-such-sig'].node }}",
            "error",
            "template reads unknown signature 'no-such-sig'",
            id="unknown-signature",
        ),
        pytest.param(
            "node {{ captures['sch-node-added'].node }}",
            "warning",
            "template reads captures of 'sch-node-added', which its conditions never use",
            id="signature-not-in-conditions",
        ),
    ],
)
def test_template_captures(tmp_path, monkeypatch, explanation, severity, fragment):
    """TemplateCaptures: a template reading captures the conditions cannot supply is reported."""
    write_rules(tmp_path, [probe_rule(explanation=explanation)])
    assert_one_defect(
        tmp_path, monkeypatch, lint_mod.TemplateCaptures, severity, f"rule {RID}", fragment
    )


def test_template_captures_from_one_branch_of_any_is_reported(tmp_path, monkeypatch):
    """TemplateCaptures: an unguarded read of a signature only one `any` branch has is reported."""
    when = {"any": [{"signature": "sch-node-added"}, {"signature": "dp-start"}]}
    write_rules(tmp_path, [probe_rule(when=when, explanation="{{ captures['dp-start'].node }}")])
    assert_one_defect(
        tmp_path,
        monkeypatch,
        lint_mod.TemplateCaptures,
        "warning",
        f"rule {RID}",
        "which not every firing has: use captures.get('dp-start')",
    )


def test_template_captures_guarded_read_is_not_reported(tmp_path, monkeypatch):
    """TemplateCaptures: a read guarded by captures.get('sig') is optional context, not a defect."""
    text = "{% if captures.get('sch-node-added') %}{{ captures['sch-node-added'].node }}{% endif %}"
    write_rules(tmp_path, [probe_rule(explanation=text)])
    assert reported(tmp_path, lint_mod.TemplateCaptures, monkeypatch) == []


@covers(lint_mod.RuleTests)
@pytest.mark.parametrize(
    "tests",
    [pytest.param(None, id="no-tests"), pytest.param({"fires": []}, id="empty-fires")],
)
def test_rule_tests(tmp_path, monkeypatch, tests):
    """RuleTests: a rule without a `tests: fires:` case is a warning naming the rule."""
    write_rules(tmp_path, [probe_rule(tests=tests)])
    assert_one_defect(
        tmp_path, monkeypatch, lint_mod.RuleTests, "warning", f"rule {RID}", "no `tests: fires:`"
    )


@covers(lint_mod.CausesConsumed)
def test_causes_consumed(tmp_path, monkeypatch):
    """CausesConsumed: a signature that names a cause no rule reads is a warning naming it;
    the same signature read by a rule, or marked context, is not."""
    write_rules(tmp_path, [probe_rule()], [probe_signature(category="runtime-other")])
    assert_one_defect(
        tmp_path,
        monkeypatch,
        lint_mod.CausesConsumed,
        "warning",
        f"signature {SID}",
        "carries the cause 'runtime-other' but no rule uses it",
    )
    used = probe_rule(when={"signature": SID})
    write_rules(tmp_path, [used], [probe_signature(category="runtime-other")])
    assert reported(tmp_path, lint_mod.CausesConsumed, monkeypatch) == []
    write_rules(tmp_path, [probe_rule()], [probe_signature(category="context")])
    assert reported(tmp_path, lint_mod.CausesConsumed, monkeypatch) == []


@covers(lint_mod.TranslationReads)
def test_translation_reads(tmp_path, monkeypatch):
    """TranslationReads: a zh text reading a fact the English never reads is an error."""
    zh = {"title": "探针 {{ fact('node.ready') }}", "explanation": "探针"}
    write_rules(tmp_path, [probe_rule(zh=zh)])
    assert_one_defect(
        tmp_path,
        monkeypatch,
        lint_mod.TranslationReads,
        "error",
        f"rule {RID}",
        "zh reads 'fact node.ready'",
    )


@pytest.mark.parametrize(
    ("zh", "fragment"),
    [
        pytest.param({"title": "探针"}, "zh: missing explanation", id="no-explanation"),
        pytest.param(
            {"title": "探针", "explanation": "探针", "remediation": ["一", "二"]},
            "2 remediation text(s) for 0 English step(s)",
            id="steps-differ",
        ),
        pytest.param(
            {"title": "探针", "explanation": "探针", "note": "x"},
            "unknown key 'note'",
            id="unknown-key",
        ),
    ],
)
def test_incomplete_translation_stops_the_load(tmp_path, zh, fragment):
    """A zh block is complete or absent: the load fails with file:line and the missing part."""
    write_rules(tmp_path, [probe_rule(zh=zh)])
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code == 2
    assert f"rule {RID}: zh" in res.stderr and fragment in res.stderr, res.stderr


def test_a_translated_step_yaml_read_as_a_mapping_stops_the_load(tmp_path):
    """An unquoted Chinese step holding ': ' is a mapping to YAML; the load says so instead of
    printing a Python dict as the step (the schema test rejected it, `rules lint` did not)."""
    step = {"text": "Look at the nodes (this only reads)", "command": "kubectl get nodes"}
    as_yaml_reads_it = {"查看节点（仅查看）": "kubectl get nodes"}
    zh = {"title": "探针", "explanation": "探针", "remediation": [as_yaml_reads_it]}
    write_rules(tmp_path, [probe_rule(remediation=[step], zh=zh)])
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "translated remediation step 1 is not a string" in res.stderr, res.stderr


def test_an_english_step_yaml_read_as_a_mapping_stops_the_load(tmp_path):
    """The same for an English step: `- On the node: read ...` is a mapping with neither text
    nor command, which printed as an empty step."""
    steps = [
        {"text": "Look (this only reads)", "command": "kubectl get nodes"},
        {"On the node": "x"},
    ]
    write_rules(tmp_path, [probe_rule(remediation=steps)])
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "remediation step 2 is a mapping without text or command" in res.stderr, res.stderr


@pytest.mark.parametrize(
    ("rule", "signature", "message"),
    [
        pytest.param(
            {"priority": "high"},
            {},
            f"rule {RID}: priority must be a whole number, got 'high'",
            id="priority",
        ),
        pytest.param({"case": 7}, {}, f"rule {RID}: case 7 not one of 1, 2, 3, 4, 5", id="case"),
        pytest.param(
            {"component_versions": {"toolkit": ">>1"}},
            {},
            f"rule {RID}: component_versions.toolkit: bad version constraint '>>1'",
            id="component-versions",
        ),
        pytest.param(
            {}, {"level": "X"}, f"signature {SID}: level 'X' not one of I, W, E, F", id="level"
        ),
        pytest.param(
            {},
            {"node_capture": "host"},
            f"signature {SID}: node_capture 'host' is not a named group",
            id="node-capture",
        ),
        pytest.param(
            {},
            {"regex": "lint (?P<what>a"},
            f"signature {SID}: bad regex: missing ) at position 15",
            id="bad-regex",
        ),
    ],
)
def test_fields_are_read_by_their_table(tmp_path, rule, signature, message):
    """Each field is read by its declared reader: a bad value is one `file:line` error naming the
    rule or signature, never a traceback."""
    path = write_rules(tmp_path, [probe_rule(**rule)], [probe_signature(**signature)])
    res = runner.invoke(app, ["rules", "lint", "--rules", str(tmp_path)])
    assert res.exit_code == 2, res.output
    ident = f"id: {SID if signature else RID}"
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.endswith(ident))
    assert res.stderr.splitlines() == [f"error: {path}:{line}: {message}"], res.stderr


def test_translation_is_rendered_in_chinese(tmp_path):
    """A complete zh block loads; texts('zh') gives it with the English step's command, and an
    untranslated rule falls back to English."""
    steps = [{"text": "Check it", "command": "kubectl get node"}]
    zh = {"title": "探针", "explanation": "说明", "remediation": ["检查"]}
    english_only = probe_rule(id="lint-probe-en", remediation=steps)
    write_rules(tmp_path, [probe_rule(zh=zh, remediation=steps), english_only])
    rs = load_ruleset([tmp_path], use_cache=False)
    title, explanation, (step,) = rs.rules[RID].texts("zh")
    assert (title, explanation, step.text, step.command) == (
        "探针",
        "说明",
        "检查",
        "kubectl get node",
    )
    other = rs.rules["lint-probe-en"]  # not translated
    assert other.zh is None
    assert other.texts("zh") == (other.title, other.explanation, other.remediation)


def test_every_check_has_a_test():
    """Each check in CHECKS is exercised by a one-defect test above."""
    assert {type(c).__name__ for c in CHECKS} == COVERED


# ---- the JSON Schema --------------------------------------------------------------------------
def test_shipped_schema_is_current():
    """analyzer/schema/rules.schema.json is what `hami-analyzer rules schema` prints."""
    res = runner.invoke(app, ["rules", "schema"])
    assert res.exit_code == 0
    assert SCHEMA_PATH.read_text(encoding="utf-8") == res.stdout == schema_text()
    assert json.loads(res.stdout) == rules_schema()


def test_schema_is_valid_draft_2020_12():
    """The generated schema is itself a valid draft 2020-12 JSON Schema."""
    jsonschema.Draft202012Validator.check_schema(rules_schema())


RULE_FILES = sorted(
    p
    for p in builtin_rules_dir().rglob("*.yaml")
    if p.relative_to(builtin_rules_dir()).as_posix() not in BUILTIN_DATA
)


def test_rule_files_are_found():
    """The schema tests below see both rule files and signature files."""
    names = {p.relative_to(builtin_rules_dir()).as_posix() for p in RULE_FILES}
    assert {"registration/links.yaml", "signatures/cloud.yaml"} <= names
    assert not names & set(BUILTIN_DATA)


@pytest.mark.parametrize(
    "path", RULE_FILES, ids=lambda p: p.relative_to(builtin_rules_dir()).as_posix()
)
def test_rule_file_validates_against_schema(path):
    """Every shipped rule and signature file validates against the shipped schema."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)
    ]
    assert errors == []


def test_schema_rejects_a_malformed_rule():
    """The schema is not vacuous: a rule with an unknown comparator and no tests is rejected."""
    bad = probe_rule(when={"fact": "node.ready", "equals": True}, tests=None)
    v = jsonschema.Draft202012Validator(rules_schema())
    assert not v.is_valid({"rules": [bad]})
    assert v.is_valid({"rules": [probe_rule()], "signatures": [probe_signature()]})
