"""Facts with provenance: producers, registry, the per-node context rules evaluate."""
