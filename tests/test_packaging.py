"""The wheel carries the rules, templates and schema: a plain install must work anywhere."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import REPO


def test_wheel_ships_rules_templates_and_schema(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    wheel = next(tmp_path.glob("hami_bundle_analyzer-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    rule_files = {
        p.relative_to(REPO / "rules").as_posix() for p in (REPO / "rules").rglob("*.yaml")
    }
    assert {f"analyzer/_rules/{f}" for f in rule_files} <= names
    assert "analyzer/render/templates/report.html.j2" in names
    assert "analyzer/schema/diagnosis.schema.json" in names
    assert any(n.endswith("entry_points.txt") for n in names)
