from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from django.conf import settings

# Tests (and the servers they start, which inherit the environment) retrieve lexically unless a test turns
# semantic entry on: results do not depend on the embedding model, and no process pays
# for loading the model it does not need. tests/graph/test_semantic.py turns it on.
os.environ["SEMANTIC_ENTRY"] = "off"
settings.FLUX["SEMANTIC_ENTRY"] = "off"  # this process read its settings before this file

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.fixture
def t0() -> datetime:
    return T0


@pytest.fixture
def flux_settings(settings):
    """Override Flux constants for one test: ``flux_settings(MAX_HOPS=1)``."""

    def override(**values: object) -> None:
        unknown = set(values) - set(settings.FLUX)
        assert not unknown, f"unknown Flux settings {unknown}"
        settings.FLUX = {**settings.FLUX, **values}

    return override
