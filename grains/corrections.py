"""Corrections by hand: a grain's status or confidence set by an operator, a caller blocked or unblocked.

Each is audited with who, when, before, after and why; status and confidence
changes also go through the lifecycle unit of work, so they are in the
activity log and the confidence history like any other.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import InvalidInput, NotFound
from core.validate import require_id
from grains.audit import audit_record, require_reason
from grains.callers import caller_resolve
from grains.lifecycle import GRAIN_STATE_FIELDS, Changes
from grains.models import Caller, Grain, require_status


def _grain(grain_id: int) -> Grain:
    grain = Grain.objects.select_for_update().filter(pk=require_id(grain_id, "grain_id")).first()
    if grain is None:
        raise NotFound(f"grain {grain_id!r} does not exist", details={"grain_id": grain_id})
    return grain


def grain_status_set(*, grain_id: int, status: str, reason: str, actor: str | Caller,
                     now: datetime | None = None) -> Grain:
    """Move a grain to ``status`` by hand (e.g. quarantine a wrong fact, wake an archived one); audited."""
    reason, now = require_reason(reason), now or timezone.now()
    require_status(status)
    with transaction.atomic():
        grain, who = _grain(grain_id), caller_resolve(actor, now=now)
        before = grain.status
        changes = Changes(now)
        changes.status(grain, status, f"set by {who}: {reason}"[:200])
        grain.save(update_fields=GRAIN_STATE_FIELDS)
        changes.save()
        audit_record(actor=str(who), action="status_change", grain_id=grain.pk, reason=reason, now=now,
                     before={"status": before}, after={"status": grain.status})
    return grain


def grain_confidence_set(*, grain_id: int, confidence: float, reason: str, actor: str | Caller,
                         now: datetime | None = None) -> Grain:
    """Override a grain's confidence (0-1) by hand; kept in its history and audited."""
    reason, now = require_reason(reason), now or timezone.now()
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise InvalidInput(f"'confidence' must be a number from 0 to 1, got {confidence!r}",
                           details={"field": "confidence"})
    with transaction.atomic():
        grain, who = _grain(grain_id), caller_resolve(actor, now=now)
        before = grain.confidence
        changes = Changes(now)
        changes.confidence(grain, float(confidence), "set by hand", caller_id=who.pk)
        grain.save(update_fields=GRAIN_STATE_FIELDS)
        changes.save()
        audit_record(actor=str(who), action="confidence_override", grain_id=grain.pk, reason=reason, now=now,
                     before={"confidence": before}, after={"confidence": grain.confidence, "status": grain.status})
    return grain


def caller_block_set(*, caller: str | Caller, blocked: bool, reason: str, actor: str | Caller,
                     now: datetime | None = None) -> Caller:
    """Block a caller's client, every role of it (refused on store, retrieve, feedback and relations), or unblock
    it; audited."""
    reason, now = require_reason(reason), now or timezone.now()
    with transaction.atomic():
        target, who = caller_resolve(caller, now=now), caller_resolve(actor, now=now)
        before = {"caller": str(target), "blocked": target.blocked}
        # A block is on the client: every role of it, so changing the role does not get around it.
        Caller.objects.filter(client=target.client).update(blocked=blocked,
                                                           blocked_reason=reason[:300] if blocked else "")
        target.refresh_from_db(fields=["blocked", "blocked_reason"])
        audit_record(actor=str(who), action="caller_block" if blocked else "caller_unblock", grain_id=None,
                     reason=reason, now=now, before=before, after={"caller": str(target), "blocked": blocked})
    return target
