"""Parsers: artefacts into typed facts (node, pods, configs) and log line frames."""
