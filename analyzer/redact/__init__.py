"""Redaction of support bundles: node names, hosts, addresses, e-mails, cloud ids, private
registries and secrets replaced by stable tokens (rules/redactors.yaml), so a bundle can be
shared in a public issue and still gives the same diagnosis.

`redact_tree(src, dst, *, redactors=(), map_file=None)` is the entry point for other commands
(`collect`): the folder `src` redacted into the new folder `dst`, with extra redactor files, and
the token map read from `map_file` when it exists, extended, and written back (mode 0600)."""

import os
import sys

from analyzer import ALLOCATOR_ENV, PACKAGE_ALLOCATOR

# the redaction's: freed pages kept for jemalloc's own default of 10 s. The second pass makes
# and drops a few 16 MiB buffers per piece: given back after 100 ms, each new one cost a page
# fault per 4 KiB (on a 1 GB log 200,000 more faults, 0.4-0.7 s of CPU, for ~30 MiB less peak)
REDACTION_ALLOCATOR = "dirty_decay_ms:10000,muzzy_decay_ms:0"


def _keep_freed_pages() -> None:
    """REDACTION_ALLOCATOR for the process, when polars is not loaded yet (a command that
    redacts first, as `redact`) and its allocator is configured as the package configures it
    (a user's own setting wins)."""
    if "polars" not in sys.modules and os.environ.get(ALLOCATOR_ENV) == PACKAGE_ALLOCATOR:
        os.environ[ALLOCATOR_ENV] = REDACTION_ALLOCATOR


_keep_freed_pages()

from analyzer.redact.tree import RedactionResult, redact_tree  # noqa: E402

__all__ = ["RedactionResult", "redact_tree"]
