"""In-process Python SDK: the Flux services for scripts and tests, in a few lines.

    from flux.sdk import Flux
    mem = Flux.open("~/.flux/my-memory", caller="my-script:system")
    gid = mem.store("Paris is the capital of France", provenance="user_stated")
    found = mem.retrieve("French capital")
    mem.feedback(found.trace_id, found.grains[0].id, useful=True)
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path


class Flux:
    """Store, retrieve and rate grains of one instance, calling the services directly."""

    def __init__(self, caller: str | None = None) -> None:
        self.caller = caller

    @classmethod
    def open(cls, data_dir: str | os.PathLike | None = None, *, caller: str | None = None) -> Flux:
        """Set up Django on the instance in ``data_dir`` (default FLUX_DATA_DIR), migrated, and connect."""
        import django
        from django.conf import settings

        wanted = str(Path(data_dir).expanduser()) if data_dir is not None else None
        if settings.configured and wanted and Path(settings.DATA_DIR) != Path(wanted):
            raise RuntimeError(f"this process already uses the instance in {settings.DATA_DIR}; "
                               "open one instance per process")
        if wanted:
            os.environ["FLUX_DATA_DIR"] = wanted
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        return cls(caller)

    def store(self, content: str, *, provenance: str = "ai_stated", context: str = "",
              occurred_at: datetime | str | None = None) -> int:
        from grains.services import grain_store

        return grain_store(content=content, provenance=provenance, context=context, occurred_at=occurred_at,
                           caller=self.caller).grain.pk

    def store_batch(self, items: Sequence[Mapping]) -> list[int]:
        from grains.services import grain_store_batch

        return [r.grain.pk for r in grain_store_batch(items=items, caller=self.caller)]

    def retrieve(self, query: str, *, limit: int | None = None, include_quarantined: bool = False):  # noqa: ANN201
        from graph.services import grain_retrieve

        return grain_retrieve(query=query, limit=limit, include_quarantined=include_quarantined, caller=self.caller)

    def feedback(self, trace_id: int, grain_id: int, *, useful: bool) -> None:
        from graph.services import feedback_record

        feedback_record(trace_id=trace_id, grain_id=grain_id, useful=useful, caller=self.caller)

    def forget(self, grain_id: int, *, reason: str) -> None:
        from grains.services import grain_forget

        grain_forget(grain_id=grain_id, reason=reason, caller=self.caller)

    def grains(self, *, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
        from grains.selectors import grain_list

        return grain_list(status=status, limit=limit, offset=offset)

    def relate(self, source_id: int, kind: str, target_id: int, *, note: str = "") -> int:
        """Assert ``source kind target``: supports, contradicts, supersedes (source is newer) or caused_by
        (source is the effect). Returns the relation's conduit id."""
        from epistemic.services import relation_assert

        conduit, _ = relation_assert(source_id=source_id, target_id=target_id, kind=kind, note=note,
                                     caller=self.caller)
        return conduit.pk

    def relations(self, *, kind: str | None = None, grain_id: int | None = None, limit: int = 50) -> list[dict]:
        from epistemic.selectors import relation_list

        return relation_list(kind=kind, grain_id=grain_id, limit=limit)

    def grain(self, grain_id: int) -> dict:
        """A grain's dossier: conduits, confidence history (why it is believed), traces."""
        from grains.selectors import grain_detail

        return grain_detail(grain_id)
