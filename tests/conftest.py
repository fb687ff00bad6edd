from __future__ import annotations

from datetime import datetime, timezone

import pytest

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)


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
