"""The manifest.json that `hami-analyzer collect` writes into its archive: the collection time
(so the year of klog lines is known, not inferred) and the calls that failed (input notes). It
describes the bundle; it is not evidence about the node."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from analyzer.bundle.model import Artefact
from analyzer.parse.times import parse_time

MANIFEST_KIND = "CollectManifest"  # its `kind:`, by which kinds.yaml recognises it
MANIFEST_API = "hami-analyzer/v1"
NOTED = ("forbidden", "not-found", "failed", "timeout", "skipped")  # call statuses worth a note


@dataclass(frozen=True)
class ManifestFacts:
    file: str
    collected_at: dt.datetime | None
    notes: tuple[str, ...]


def parse_manifest(artefact: Artefact) -> ManifestFacts:
    """
    >>> from analyzer.bundle.model import BundleFile
    >>> from pathlib import Path
    >>> text = '{"kind": "CollectManifest", "collected_at": "2026-08-15T10:20:00Z", "calls": ['
    >>> text += '{"command": "kubectl get lease -n hami", "status": "forbidden", "error": "no"}]}'
    >>> m = parse_manifest(Artefact(BundleFile("manifest.json", Path("m"), 1), "m", "", 1, text))
    >>> m.collected_at.isoformat(), m.notes
    ('2026-08-15T10:20:00+00:00', ('`kubectl get lease -n hami` forbidden: no',))
    """
    name = artefact.file.name
    try:
        doc = json.loads(artefact.text or "")
    except ValueError as exc:
        return ManifestFacts(name, None, (f"not valid JSON ({exc}); collection time unknown",))
    if not isinstance(doc, dict):
        return ManifestFacts(name, None, ("not a JSON object; collection time unknown",))
    notes = []
    for call in doc.get("calls") or []:
        if isinstance(call, dict) and call.get("status") in NOTED:
            error = " ".join(str(call.get("error") or "").split())[:200]
            notes.append(
                f"`{call.get('command')}` {call['status']}" + (f": {error}" if error else "")
            )
    return ManifestFacts(name, parse_time(doc.get("collected_at")), tuple(notes))
