"""Status and confidence changes of grains, with their history and activity events.

Every service that moves a grain between statuses or changes how much it is
believed goes through ``Changes``, so each change carries a reason, lands in
the activity log and (for confidence) in the grain's confidence history, and
a grain that falls below CONFIDENCE_FLOOR is quarantined in the same step.
The caller of ``Changes`` saves the grain rows it changed, then ``save()``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core import metrics
from core.conf import flux_setting as S
from grains.activity import activity_record_many
from grains.confidence import ConfidenceRules
from grains.models import ConfidenceEvent, Grain, Status

EVENT_BY_STATUS = {
    Status.ACTIVE: "grains.grain_promoted",
    Status.DORMANT: "grains.grain_demoted",
    Status.ARCHIVED: "grains.grain_archived",
    Status.QUARANTINED: "grains.grain_quarantined",
}
GRAIN_STATE_FIELDS = ["status", "status_changed_at", "confidence", "confidence_at"]


def confidence_rules() -> ConfidenceRules:
    return ConfidenceRules(
        upper=S("CONFIDENCE_MAX"), corroboration=S("CORROBORATION_BOOST"), contradiction=S("CONTRADICTION_PENALTY"),
        useful=S("CONFIDENCE_USEFUL_STEP"), not_useful=S("CONFIDENCE_NOT_USEFUL_STEP"),
        neutral=S("CONFIDENCE_NEUTRAL"), half_life_seconds=S("CONFIDENCE_HALF_LIFE_DAYS") * 86400.0,
        floor=S("CONFIDENCE_FLOOR"),
    )


@dataclass
class Changes:
    """A unit of work: status moves and confidence steps, recorded together."""

    now: datetime
    rules: ConfidenceRules = field(default_factory=confidence_rules)
    events: list[ConfidenceEvent] = field(default_factory=list)
    activity: list[tuple[str, dict]] = field(default_factory=list)

    def status(self, grain: Grain, to: str, reason: str) -> bool:
        """Move ``grain`` to status ``to`` (in memory); False when it is there already."""
        if grain.status == to:
            return False
        self.activity.append((EVENT_BY_STATUS[Status(to)], {
            "grain_id": grain.pk, "from": grain.status, "to": to, "reason": reason}))
        grain.status, grain.status_changed_at = to, self.now
        return True

    def confidence(self, grain: Grain, value: float, reason: str, *, caller_id: int | None = None,
                   related: int | None = None) -> None:
        """Set the grain's confidence (in memory) with a history entry; quarantine it below the floor."""
        value = round(value, 6)
        if value == grain.confidence:
            return
        grain.confidence, grain.confidence_at = value, self.now
        self.events.append(ConfidenceEvent(grain=grain, confidence=value, reason=reason[:64], created_at=self.now,
                                           caller_id=caller_id, related_grain_id=related))
        if self.rules.below_floor(value) and grain.status in (Status.ACTIVE, Status.DORMANT):
            self.status(grain, Status.QUARANTINED, f"confidence {value:.2f} below CONFIDENCE_FLOOR ({reason})")

    def save(self) -> None:
        ConfidenceEvent.objects.bulk_create(self.events)
        activity_record_many(self.activity, now=self.now)
        promotions = sum(1 for kind, _ in self.activity if kind == "grains.grain_promoted")
        metrics.count({"promotions": promotions}, now=self.now)
        self.events, self.activity = [], []
