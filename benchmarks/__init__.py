"""Benchmarks for acp-types: ``python -m benchmarks`` (see ``make bench``)."""
