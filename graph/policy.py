"""Algorithm parameters built from the Flux settings table."""
from __future__ import annotations

from datetime import datetime

from core.conf import flux_setting as S
from graph.algorithms.decay import DecayPolicy
from graph.algorithms.propagation import PropagationParams

DAY = 86400.0


def decay_policy() -> DecayPolicy:
    return DecayPolicy(
        floor=S("WEIGHT_MIN"),
        tier_half_lives={
            "core": S("HALF_LIFE_CORE_DAYS") * DAY,
            "working": S("HALF_LIFE_WORKING_DAYS") * DAY,
            "ephemeral": S("HALF_LIFE_EPHEMERAL_DAYS") * DAY,
        },
        conduit_half_life=S("CONDUIT_HALF_LIFE_DAYS") * DAY,
        conduit_grace=S("CONDUIT_GRACE_HOURS") * 3600.0,
    )


def propagation_params() -> PropagationParams:
    return PropagationParams(
        attenuation=S("ATTENUATION"),
        max_hops=S("MAX_HOPS"),
        threshold=S("ACTIVATION_THRESHOLD"),
        hub_degree=S("HUB_DEGREE"),
        max_frontier=S("MAX_FRONTIER"),
        max_weight=S("WEIGHT_MAX"),
        relay={"active": 1.0, "dormant": S("DORMANT_RELAY")},
    )


def grain_weight_now(grain, now: datetime, policy: DecayPolicy | None = None) -> float:  # noqa: ANN001 - a Grain
    """The grain's weight with lazy decay applied up to ``now`` (under ``policy``, by default the settings')."""
    return (policy or decay_policy()).grain_weight(grain.weight, grain.tier, grain.last_decayed_at.timestamp(),
                                                   now.timestamp())


def conduit_weight_now(conduit, now: datetime) -> float:  # noqa: ANN001 - a Conduit
    """The conduit's weight with lazy decay (after its grace period) applied up to ``now``."""
    return decay_policy().conduit_weight(conduit.weight, conduit.created_at.timestamp(),
                                         conduit.last_decayed_at.timestamp(), now.timestamp())
