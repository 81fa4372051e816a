"""Redaction of support bundles: node names, hosts, addresses, e-mails, cloud ids, private
registries and secrets replaced by stable tokens (rules/redactors.yaml), so a bundle can be
shared in a public issue and still gives the same diagnosis.

`redact_tree` is the entry point for other commands (`collect --redact`)."""

from analyzer.redact.tree import RedactionResult, redact_tree

__all__ = ["RedactionResult", "redact_tree"]
