"""manage.py flux_embed: embed every grain that has no vector of the current model yet (a memory stored with
SEMANTIC_ENTRY=off, or by an older model)."""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError

from core.commands import FluxCommand
from graph.semantic import INSTALL_HINT, MODEL, semantic_enabled
from memory.upkeep import embed_missing


class Command(FluxCommand):
    help = "Embed every grain that has no vector yet, with a progress bar (semantic entry points need them)."

    def handle(self, *args: object, **opts: object) -> None:
        try:
            enabled = semantic_enabled()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        if not enabled:
            raise CommandError(f"semantic entry is off (SEMANTIC_ENTRY=off, or the model is not installed: "
                               f"{INSTALL_HINT})")
        done = embed_missing(progress=True)
        self.stdout.write(f"embedded {done} grain(s) with {MODEL}")
