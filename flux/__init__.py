"""Flux Memory: the command line and the Python SDK."""
