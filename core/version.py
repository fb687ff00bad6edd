"""The version of Flux Memory, from one place: the installed package's metadata (pyproject.toml's version)."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def flux_version() -> str:
    try:
        return version("flux-memory")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
