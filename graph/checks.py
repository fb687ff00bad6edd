"""System checks (run by `manage.py check` and `migrate`, so `flux start` stops before serving)."""
from __future__ import annotations

from django.core.checks import Error, register

from core.conf import flux_setting as S
from graph import semantic


@register()
def semantic_entry_installed(app_configs: object, **kwargs: object) -> list[Error]:
    """SEMANTIC_ENTRY=on needs the embedding model: refuse to start rather than fail every retrieval."""
    if S("SEMANTIC_ENTRY") == "on" and not semantic.semantic_installed():
        return [Error("SEMANTIC_ENTRY=on but the embedding model is not installed",
                      hint=f"{semantic.INSTALL_HINT}, or set SEMANTIC_ENTRY to auto or off", id="flux.E001")]
    return []
