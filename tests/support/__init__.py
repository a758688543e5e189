"""Helpers the tests share that are not fixtures: scans of MXNet's source, the NumPy reference
computation and its environments, a ps-lite cluster."""
