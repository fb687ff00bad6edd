"""The periodic decay sweep: decayed weights and aged confidence written back, lifecycle moves applied."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.bulk import bulk_set
from core.conf import flux_setting as S
from grains.activity import activity_record
from grains.lifecycle import GRAIN_STATE_FIELDS, Changes
from grains.models import Grain, Status
from graph.algorithms.lifecycle import GrainState, LifecycleRules, transition
from graph.policy import DAY, grain_weight_now

# A confidence step smaller than this is left for a later sweep (it is memoryless), to keep the history short.
MIN_CONFIDENCE_STEP = 0.01


@dataclass(frozen=True)
class SweepResult:
    examined: int
    moved: dict[str, int] = field(default_factory=dict)

    @property
    def demoted(self) -> int:
        return self.moved.get(Status.DORMANT, 0)


def lifecycle_rules() -> LifecycleRules:
    return LifecycleRules(
        dormant_weight=S("DORMANT_WEIGHT"), dormant_after_seconds=S("DORMANT_AFTER_DAYS") * DAY,
        archive_after_seconds=S("ARCHIVE_AFTER_DAYS") * DAY, confidence_floor=S("CONFIDENCE_FLOOR"),
        quarantine_min_rated=S("QUARANTINE_MIN_RATED"), quarantine_max_usefulness=S("QUARANTINE_MAX_USEFULNESS"),
    )


def _sweep_one(grain: Grain, changes: Changes, rules: LifecycleRules, now: datetime) -> str | None:
    grain.weight = grain_weight_now(grain, now)
    grain.last_decayed_at = now
    aged = changes.rules.aged(grain.confidence, (now - grain.confidence_at).total_seconds())
    if grain.confidence - aged >= MIN_CONFIDENCE_STEP:
        changes.confidence(grain, aged, "aged")
    state = GrainState(
        status=grain.status, weight=grain.weight, confidence=grain.confidence,
        idle_seconds=(now - grain.last_accessed_at).total_seconds(),
        in_status_seconds=(now - grain.status_changed_at).total_seconds(),
        useful=grain.useful_count, not_useful=grain.not_useful_count,
    )
    move = transition(state, rules)
    if move is not None and changes.status(grain, *move):
        return move[0]
    return None


def decay_sweep(*, now: datetime | None = None, batch_size: int = 1000) -> SweepResult:
    """Apply lazy decay, confidence drift and lifecycle moves to every active or dormant grain.

    Moves: active -> dormant (weak or idle), dormant -> archived (long
    dormancy), either -> quarantined (confidence below the floor, or proved
    useless); each is logged with its reason. Nothing is deleted. Safe to run
    twice or beside the REST service: decay is memoryless, moves are
    idempotent, and each batch of ``batch_size`` is one short transaction.
    Cost: O(grains).
    """
    now = now or timezone.now()
    rules = lifecycle_rules()
    examined, moved, last_id = 0, {}, 0
    while True:
        with transaction.atomic():
            batch = list(Grain.objects.filter(pk__gt=last_id, status__in=(Status.ACTIVE, Status.DORMANT))
                         .order_by("pk")[:batch_size])
            if not batch:
                break
            changes = Changes(now)
            for grain in batch:
                to = _sweep_one(grain, changes, rules, now)
                if to:
                    moved[to] = moved.get(to, 0) + 1
            bulk_set(Grain, ["weight", "last_decayed_at", *GRAIN_STATE_FIELDS], batch)
            changes.save()
        examined += len(batch)
        last_id = batch[-1].pk
    activity_record("graph.decay_swept", {"examined": examined, "moved": moved,
                                          "demoted": moved.get(Status.DORMANT, 0)}, now=now)
    return SweepResult(examined, moved)
