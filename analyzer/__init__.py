"""hami-bundle-analyzer: offline diagnosis of HAMi GPU node support bundles."""

import os

__version__ = "0.1.0"

# polars allocates through jemalloc, which keeps freed pages for 10 s by default. Streaming a big
# log frees and allocates a batch every few milliseconds, so those pages would add ~100 MiB to
# the peak; returning them after 100 ms costs no measurable time. It only takes effect before
# polars is first imported (pola-rs/polars#23128); an explicit setting wins.
ALLOCATOR_ENV = "_RJEM_MALLOC_CONF"  # polars' allocator (jemalloc), read when polars is loaded
PACKAGE_ALLOCATOR = "dirty_decay_ms:100,muzzy_decay_ms:0"
os.environ.setdefault(ALLOCATOR_ENV, PACKAGE_ALLOCATOR)
