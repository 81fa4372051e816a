"""The batch summary: grids with drill-down, trends, plots, and the tickets the grids cannot place
(undated, unversioned, duplicates), computed from the batch tables with polars."""
