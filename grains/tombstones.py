"""Tombstones: what remains of a forgotten or purged grain, kept by content hash so the content is never
silently stored again. The grains side of forgetting and restoring (the act as a whole, conduits and traces
included, is memory.forgetting): entomb a grain with what a restore needs, take it back out within the
window, and clear what the window no longer allows.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from django.db.models import Q

from core.conf import flux_setting as S
from core.errors import Conflict, NotFound
from core.rows import model_rebuilt, model_row
from core.validate import require_id
from grains.models import Caller, ConfidenceEvent, Grain, Source, Tombstone

SCRUBBED_SOURCE = "[removed: a grain extracted from this text was purged]"


def grain_entomb(grain: Grain, *, reason: str, who: Caller, now: datetime, by_operator: bool,
                 conduits: list[dict]) -> Tombstone:
    """Replace ``grain`` by its tombstone inside the caller's transaction: the grain, its confidence history and
    ``conduits`` (rows, kept for a restore) go; the source text it was extracted from is scrubbed."""
    kept = {"grain": model_row(grain), "conduits": conduits,
            "confidence": [model_row(e) for e in ConfidenceEvent.objects.filter(grain=grain).order_by("pk")]}
    tomb = Tombstone.objects.create(
        content_hash=grain.content_hash, grain_id=grain.pk, preview=grain.content[:120], reason=reason[:200],
        created_at=now, caller=who, superseded_by=grain.superseded_by, restore_data=kept,
        restorable_until=now + timedelta(hours=S("PURGE_RESTORE_WINDOW_HOURS")), by_operator=by_operator)
    if grain.source_id:
        Source.objects.filter(pk=grain.source_id).update(text=SCRUBBED_SOURCE)
    grain.delete()
    return tomb


def grain_unearth(grain_id: int, *, now: datetime,
                  cluster_exists: Callable[[int], bool]) -> tuple[Tombstone, Grain, list[dict]]:
    """Put a purged grain back exactly as it was (same id, fields, confidence history), inside the caller's
    transaction; its tombstone goes; a cluster that is gone since is dropped. Returns the tombstone, the grain
    and the conduit rows it had.

    Refused (Conflict) after PURGE_RESTORE_WINDOW_HOURS, or when its content was stored again since.
    """
    tomb = Tombstone.objects.filter(grain_id=require_id(grain_id, "grain_id")).first()
    if tomb is None:
        raise NotFound(f"no purged grain {grain_id!r} to restore", details={"grain_id": grain_id})
    if tomb.restore_data is None or tomb.restorable_until is None or now > tomb.restorable_until:
        until = f"ended {tomb.restorable_until:%Y-%m-%d %H:%M} UTC" if tomb.restorable_until else "does not apply"
        raise Conflict(f"grain {grain_id} can no longer be restored: its restore window "
                       f"(PURGE_RESTORE_WINDOW_HOURS) {until}; store its content again with restore "
                       "set to true to bring it back as a new grain", details={"grain_id": grain_id})
    if Grain.objects.filter(Q(content_hash=tomb.content_hash) | Q(pk=tomb.grain_id)).exists():
        raise Conflict(f"grain {grain_id} was stored again since it was purged; nothing to restore",
                       details={"grain_id": grain_id})
    kept = tomb.restore_data
    grain = model_rebuilt(Grain, kept["grain"])
    if grain.cluster_id and not cluster_exists(grain.cluster_id):
        grain.cluster_id = None
    if grain.source_id and not Source.objects.filter(pk=grain.source_id).exists():
        grain.source_id = None
    grain.save(force_insert=True)
    ConfidenceEvent.objects.bulk_create([model_rebuilt(ConfidenceEvent, e) for e in kept["confidence"]])
    tomb.delete()
    return tomb, grain, kept["conduits"]


def tombstones_expire(*, now: datetime) -> int:
    """Clear the restore data and preview of tombstones whose restore window has ended; how many were cleared.

    What stays: the content hash (the content is still refused), the reason, who and when.
    """
    return Tombstone.objects.filter(restorable_until__lt=now).filter(
        Q(restore_data__isnull=False) | ~Q(preview="")).update(restore_data=None, preview="")
