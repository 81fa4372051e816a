"""`hami-analyzer batch`: many bundles into tables and a summary.

- `run`: discovery, the per-bundle analysis (`analyze_one`), parts, resume, the final tables;
- `executor`: the local executor (worker processes, watchdog) and `open_executor`;
- `dask`: the Dask executor (`--executor dask`, the `[dask]` extra);
- `io`: where bundles are read and tables written (local paths or fsspec URLs).
"""

BUNDLE_TIMEOUT = 300.0  # default seconds one bundle may take before it is recorded as an error
