"""Recognise what a piece of text is, by content only (users rename and mix files).

How each kind is recognised is declared in rules/kinds.yaml (`recognise:` entries, the
Kubernetes-object step, the log-marker vote; see analyzer/bundle/probes.py for the vocabulary):
this module only tries the catalogue's steps in their order on the text's head."""

from __future__ import annotations

from analyzer.bundle.probes import Text, recognition_of
from analyzer.catalogue.kinds import Catalogue


def sniff(text: str, catalogue: Catalogue) -> tuple[str, str]:
    """Return (kind, reason) for a text: the first recognition step that matches its head (the
    catalogue's last step, `otherwise`, matches any)."""
    rec = recognition_of(catalogue)
    head = Text(text[: rec.head_chars], rec.log_lines)

    def again(inner: str) -> tuple[str, str]:
        return sniff(inner, catalogue)

    for step in rec.steps:
        found = step.attempt(head, again)
        if found is not None:
            return found
    # the catalogue's load made sure its last step (`otherwise: true`) matches every text
    raise AssertionError("the kind catalogue has no `otherwise` recognition step")
