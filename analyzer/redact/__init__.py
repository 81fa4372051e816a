"""Redaction of support bundles: node names, hosts, addresses, e-mails, cloud ids, private
registries and secrets replaced by stable tokens (rules/redactors.yaml), so a bundle can be
shared in a public issue and still gives the same diagnosis.

`redact_tree(src, dst, *, redactors=(), map_file=None)` is the entry point for other commands
(`collect`): the folder `src` redacted into the new folder `dst`, with extra redactor files, and
the token map read from `map_file` when it exists, extended, and written back (mode 0600)."""

from analyzer.redact.tree import RedactionResult, redact_tree

__all__ = ["RedactionResult", "redact_tree"]
