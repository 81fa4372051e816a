"""`hami-analyzer collect`: run kubectl (and helm) against a live cluster and write one archive
the analyzer reads, with a manifest.json saying how each file was obtained."""
