"""Benchmarks run by `make bench`; each module in this package exposes `run() -> dict`."""
