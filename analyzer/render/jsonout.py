"""Machine-readable diagnosis (schema: analyzer/schema/diagnosis.schema.json)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from analyzer.diagnosis import Diagnosis

SCHEMA_VERSION = "1.0"


def _default(o: Any) -> Any:
    if isinstance(o, dt.datetime):
        return o.isoformat()
    if isinstance(o, set | tuple):
        return list(o)
    return str(o)


def diagnosis_document(diags: list[Diagnosis]) -> dict[str, Any]:
    first = diags[0].to_dict()
    doc = {"schema_version": SCHEMA_VERSION, **first}
    if len(diags) > 1:
        doc["nodes"] = [{"node": d.node, "primary": d.to_dict()["primary"]} for d in diags]
    return doc


def render_json(diags: list[Diagnosis]) -> str:
    return json.dumps(
        diagnosis_document(diags), indent=2, ensure_ascii=False, default=_default, sort_keys=False
    )
