"""When a grain changes status on its own (pure, no Django).

active -> dormant when its decayed weight is too low or it has not been used
for a long time; dormant -> archived after a long dormancy; active or dormant
-> quarantined when it is barely believed or has kept proving useless.
Promotion back to active happens on use (retrieval, useful feedback), not
here. Nothing is ever deleted by these rules.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GrainState:
    status: str
    weight: float             # decayed to now
    confidence: float         # aged to now
    idle_seconds: float       # since the last access
    in_status_seconds: float  # since the grain entered its status
    useful: int
    not_useful: int


@dataclass(frozen=True)
class LifecycleRules:
    dormant_weight: float
    dormant_after_seconds: float
    archive_after_seconds: float
    confidence_floor: float
    quarantine_min_rated: int
    quarantine_max_usefulness: float


def transition(state: GrainState, rules: LifecycleRules) -> tuple[str, str] | None:
    """The status ``state`` should move to and why, or None to stay.

    Quarantined and archived grains are left alone: they come back only by use
    or by hand. Quarantine is checked first, so a useless grain is not merely
    put to sleep.
    """
    if state.status not in ("active", "dormant"):
        return None
    if state.confidence < rules.confidence_floor:
        return "quarantined", f"confidence {state.confidence:.2f} below CONFIDENCE_FLOOR {rules.confidence_floor}"
    rated = state.useful + state.not_useful
    if rated >= rules.quarantine_min_rated and state.useful / rated < rules.quarantine_max_usefulness:
        return "quarantined", f"useful in {state.useful} of {rated} ratings"
    if state.status == "active":
        if state.weight < rules.dormant_weight:
            return "dormant", f"weight {state.weight:.3f} below DORMANT_WEIGHT {rules.dormant_weight}"
        if state.idle_seconds >= rules.dormant_after_seconds:
            return "dormant", f"not accessed for {state.idle_seconds / 86400:.0f} days"
        return None
    if min(state.in_status_seconds, state.idle_seconds) >= rules.archive_after_seconds:
        return "archived", f"dormant for {state.in_status_seconds / 86400:.0f} days"
    return None
