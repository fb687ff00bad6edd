"""The periodic decay sweep: write decayed weights back and move idle grains to dormant."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from fluxsite.conf import flux_setting as S
from graph.policy import grain_weight_now
from grains.activity import activity_record, activity_record_many
from grains.bulk import bulk_set
from grains.models import Grain, Status


@dataclass(frozen=True)
class SweepResult:
    examined: int
    demoted: int


def decay_sweep(*, now: datetime | None = None, batch_size: int = 1000) -> SweepResult:
    """Apply lazy decay to every active or dormant grain, in short transactions.

    An active grain goes dormant when its decayed weight is below DORMANT_WEIGHT
    or it has not been accessed for DORMANT_AFTER_DAYS. Nothing is deleted.
    Safe to run twice: decay is memoryless and transitions are idempotent.
    Cost: O(grains), in batches of ``batch_size``.
    """
    now = now or timezone.now()
    idle_since = now - timedelta(days=S("DORMANT_AFTER_DAYS"))
    examined = demoted = 0
    last_id = 0
    while True:
        with transaction.atomic():
            batch = list(Grain.objects.filter(pk__gt=last_id, status__in=(Status.ACTIVE, Status.DORMANT))
                         .order_by("pk")[:batch_size])
            if not batch:
                break
            events = []
            for grain in batch:
                grain.weight = grain_weight_now(grain, now)
                grain.last_decayed_at = now
                too_weak = grain.weight < S("DORMANT_WEIGHT")
                if grain.status == Status.ACTIVE and (too_weak or grain.last_accessed_at < idle_since):
                    grain.status = Status.DORMANT
                    reason = "weight below DORMANT_WEIGHT" if too_weak else "not accessed for DORMANT_AFTER_DAYS"
                    events.append(("grains.grain_demoted", {"grain_id": grain.pk, "reason": reason,
                                                            "weight": round(grain.weight, 4)}))
            bulk_set(Grain, ["weight", "last_decayed_at", "status"], batch)
            activity_record_many(events, now=now)
        examined += len(batch)
        demoted += len(events)
        last_id = batch[-1].pk
    activity_record("graph.decay_swept", {"examined": examined, "demoted": demoted}, now=now)
    return SweepResult(examined, demoted)
