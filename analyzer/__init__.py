"""hami-bundle-analyzer: offline diagnosis of HAMi GPU node support bundles."""

__version__ = "0.1.0"
