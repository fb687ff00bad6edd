"""Forgetting, purging and restoring grains, and the audit log of what was done by hand.

Purging (an operator) and forgetting (a caller) are one act: the grain, its
conduits and its history go, a tombstone of its content hash stays (so the
content is refused when stored again), and the tombstone keeps the grain
exactly as it was for PURGE_RESTORE_WINDOW_HOURS, so a mistake can be undone;
after that only the hash remains. A purge is lifted only by an operator's
restore; a caller's forgetting also by the caller storing the content again
with restore. Every such act is an append-only audit entry: who, when, what
(by content hash, never the content), before, after, why.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Model, Q
from django.utils import timezone

from fluxsite.conf import flux_setting as S
from graph.models import Cluster, Conduit
from graph.services.traces import traces_scrub
from grains.activity import activity_record
from grains.audit import audit_record, plain, require_reason
from grains.callers import caller_resolve
from grains.errors import Conflict, NotFound
from grains.models import Caller, ConfidenceEvent, Grain, Source, Tombstone
from grains.validate import require_id

SCRUBBED_SOURCE = "[removed: a grain extracted from this text was purged]"


def _row(obj: Model) -> dict:
    return plain({f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields})


def _rebuilt(model: type[Model], row: dict) -> Model:
    return model(**{f.attname: f.to_python(row[f.attname]) for f in model._meta.concrete_fields if f.attname in row})


def grain_purge(*, grain_id: int, reason: str, actor: str | Caller | None = None,
                now: datetime | None = None, by_operator: bool = True) -> Tombstone:
    """An operator deletes a grain with its conduits and history, leaving a restorable tombstone; audited.

    The tombstone keeps what superseded the grain, so grains it superseded still
    find their current successor through it. Its restore data (and a preview) go
    when the restore window ends (``tombstones_expire``); the audit entry keeps the
    content hash and the reason, never the content; the queries of traces that
    returned the grain and the source text it was extracted from are scrubbed now.
    Only an operator's restore lifts the tombstone of a purge. Nothing is written
    when an error is raised.
    """
    reason = require_reason(reason)
    now = now or timezone.now()
    with transaction.atomic():
        grain = Grain.objects.filter(pk=require_id(grain_id, "grain_id")).first()
        if grain is None:
            raise NotFound(f"grain {grain_id!r} does not exist", details={"grain_id": grain_id})
        who = caller_resolve(actor, now=now)
        kept = {"grain": _row(grain),
                "conduits": [_row(c) for c in Conduit.objects.filter(Q(source=grain) | Q(target=grain))],
                "confidence": [_row(e) for e in ConfidenceEvent.objects.filter(grain=grain).order_by("pk")]}
        tomb = Tombstone.objects.create(
            content_hash=grain.content_hash, grain_id=grain.pk, preview=grain.content[:120], reason=reason[:200],
            created_at=now, caller=who, superseded_by=grain.superseded_by, restore_data=kept,
            restorable_until=now + timedelta(hours=S("PURGE_RESTORE_WINDOW_HOURS")), by_operator=by_operator)
        traces_scrub(grain.pk)
        if grain.source_id:
            Source.objects.filter(pk=grain.source_id).update(text=SCRUBBED_SOURCE)
        grain.delete()
        audit_record(actor=str(who), action="purge" if by_operator else "forget", grain_id=tomb.grain_id,
                     reason=reason, now=now,
                     before={"content_hash": grain.content_hash, "status": grain.status,
                             "confidence": grain.confidence, "conduits": len(kept["conduits"])},
                     after={"tombstone_id": tomb.pk, "restorable_until": tomb.restorable_until})
        activity_record("grains.grain_forgotten", {"grain_id": tomb.grain_id, "reason": tomb.reason,
                                                   "by": str(who)}, now=now)
    return tomb


def grain_forget(*, grain_id: int, reason: str, caller: str | Caller | None = None,
                 now: datetime | None = None) -> Tombstone:
    """A caller forgets a grain: the same act as a purge, in the caller's name; the caller may bring the content
    back by storing it again with restore."""
    return grain_purge(grain_id=grain_id, reason=reason, actor=caller, now=now, by_operator=False)


def tombstones_expire(*, now: datetime | None = None) -> int:
    """Clear the restore data and preview of tombstones whose restore window has ended; how many were cleared.

    What stays: the content hash (the content is still refused), the reason, who and when.
    """
    now = now or timezone.now()
    return Tombstone.objects.filter(restorable_until__lt=now).filter(
        Q(restore_data__isnull=False) | ~Q(preview="")).update(restore_data=None, preview="")


def grain_restore(*, grain_id: int, reason: str, actor: str | Caller | None = None,
                  now: datetime | None = None) -> Grain:
    """Bring a purged grain back exactly as it was (same id, fields, conduits, history); audited.

    Refused (Conflict) after PURGE_RESTORE_WINDOW_HOURS, or when its content
    was stored again since. Conduits to grains that are gone since stay gone.
    """
    reason = require_reason(reason)
    now = now or timezone.now()
    with transaction.atomic():
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
        who = caller_resolve(actor, now=now)
        grain = _put_back(tomb.restore_data)
        tomb.delete()
        audit_record(actor=str(who), action="restore", grain_id=grain.pk, reason=reason, now=now,
                     before={"tombstone_id": tomb.pk}, after={"content_hash": grain.content_hash, "status": grain.status,
                                                              "conduits": grain.conduits_out.count()
                                                              + grain.conduits_in.count()})
        activity_record("grains.grain_restored", {"grain_id": grain.pk, "by": str(who)}, now=now)
    return grain


def _put_back(kept: dict) -> Grain:
    grain = _rebuilt(Grain, kept["grain"])
    if grain.cluster_id and not Cluster.objects.filter(pk=grain.cluster_id).exists():
        grain.cluster_id = None
    if grain.source_id and not Source.objects.filter(pk=grain.source_id).exists():
        grain.source_id = None
    grain.save(force_insert=True)
    ends = {c["source_id"] for c in kept["conduits"]} | {c["target_id"] for c in kept["conduits"]}
    alive = set(Grain.objects.filter(pk__in=ends).values_list("pk", flat=True))
    Conduit.objects.bulk_create([_rebuilt(Conduit, c) for c in kept["conduits"]
                                 if c["source_id"] in alive and c["target_id"] in alive], ignore_conflicts=True)
    ConfidenceEvent.objects.bulk_create([_rebuilt(ConfidenceEvent, e) for e in kept["confidence"]])
    return grain
