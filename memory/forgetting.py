"""Forgetting, purging and restoring grains, each audited.

Purging (an operator) and forgetting (a caller) are one act: the grain, its
conduits and its history go, a tombstone of its content hash stays (so the
content is refused when stored again), and the tombstone keeps the grain
exactly as it was for PURGE_RESTORE_WINDOW_HOURS, so a mistake can be undone;
after that only the hash remains (``tombstones_expire``). A purge is lifted
only by an operator's restore; a caller's forgetting also by the caller
storing the content again with restore. Every such act is an append-only
audit entry: who, when, what (by content hash, never the content), before,
after, why. The queries of traces that returned the grain, and the source
text it was extracted from, are scrubbed at once.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import NotFound
from core.validate import require_id
from grains.activity import activity_record
from grains.audit import audit_record, require_reason
from grains.callers import caller_resolve
from grains.models import Caller, Grain, Tombstone
from grains.tombstones import grain_entomb, grain_unearth
from grains.tombstones import tombstones_expire as _expire
from graph.selectors import cluster_exists
from graph.services.conduits import conduits_put_back, conduits_snapshot
from graph.services.traces import returned_unrated_drop, traces_scrub


def grain_purge(*, grain_id: int, reason: str, actor: str | Caller | None = None,
                now: datetime | None = None, by_operator: bool = True) -> Tombstone:
    """An operator deletes a grain with its conduits and history, leaving a restorable tombstone; audited.

    The tombstone keeps what superseded the grain, so grains it superseded still
    find their current successor through it. Nothing is written when an error is raised.
    """
    reason = require_reason(reason)
    now = now or timezone.now()
    with transaction.atomic():
        grain = Grain.objects.filter(pk=require_id(grain_id, "grain_id")).first()
        if grain is None:
            raise NotFound(f"grain {grain_id!r} does not exist", details={"grain_id": grain_id})
        who = caller_resolve(actor, now=now)
        conduits = conduits_snapshot(grain.pk)
        traces_scrub(grain.pk)
        returned_unrated_drop(grain.pk, now=now)
        before = {"content_hash": grain.content_hash, "status": grain.status, "confidence": grain.confidence,
                  "conduits": len(conduits)}
        tomb = grain_entomb(grain, reason=reason, who=who, now=now, by_operator=by_operator, conduits=conduits)
        audit_record(actor=str(who), action="purge" if by_operator else "forget", grain_id=tomb.grain_id,
                     reason=reason, now=now, before=before,
                     after={"tombstone_id": tomb.pk, "restorable_until": tomb.restorable_until})
        activity_record("grains.grain_forgotten", {"grain_id": tomb.grain_id, "reason": tomb.reason,
                                                   "by": str(who)}, now=now)
    return tomb


def grain_forget(*, grain_id: int, reason: str, caller: str | Caller | None = None,
                 now: datetime | None = None) -> Tombstone:
    """A caller forgets a grain: the same act as a purge, in the caller's name; the caller may bring the content
    back by storing it again with restore."""
    return grain_purge(grain_id=grain_id, reason=reason, actor=caller, now=now, by_operator=False)


def grain_restore(*, grain_id: int, reason: str, actor: str | Caller | None = None,
                  now: datetime | None = None) -> Grain:
    """Bring a purged grain back exactly as it was (same id, fields, conduits, history); audited.

    Refused (Conflict) after PURGE_RESTORE_WINDOW_HOURS, or when its content
    was stored again since. Conduits to grains that are gone since stay gone.
    """
    reason = require_reason(reason)
    now = now or timezone.now()
    with transaction.atomic():
        tomb, grain, conduits = grain_unearth(grain_id, now=now, cluster_exists=cluster_exists)
        back = conduits_put_back(conduits)
        who = caller_resolve(actor, now=now)
        audit_record(actor=str(who), action="restore", grain_id=grain.pk, reason=reason, now=now,
                     before={"tombstone_id": tomb.pk},
                     after={"content_hash": grain.content_hash, "status": grain.status, "conduits": back})
        activity_record("grains.grain_restored", {"grain_id": grain.pk, "by": str(who)}, now=now)
    return grain


def tombstones_expire(*, now: datetime | None = None) -> int:
    """Clear the restore data of tombstones whose restore window has ended (idempotent)."""
    return _expire(now=now or timezone.now())
