"""Read Flux constants from Django settings (so tests can override them)."""
from __future__ import annotations

from django.conf import settings


def flux_setting(name: str):  # noqa: ANN201 - type follows the setting's default
    return settings.FLUX[name]
