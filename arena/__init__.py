"""Subnet rules: reasoning judge, suites and leak clusters, race, weights (docs/arena-rules.md)."""
