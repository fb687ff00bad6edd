"""Lazy exponential decay (pure). Time is always an argument."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime


def decayed(value: float, floor: float, elapsed_seconds: float, half_life_seconds: float) -> float:
    """``value`` after ``elapsed_seconds`` of halving toward ``floor`` every ``half_life_seconds``.

    Memoryless: decaying for a then b equals decaying for a + b, so a value can be
    written back at any time and decay continues from there. (Called for every grain a retrieval reaches: its
    arguments are best given by position.)
    """
    if elapsed_seconds <= 0 or value <= floor:
        return value
    if half_life_seconds <= 0:
        return floor
    return floor + (value - floor) * 0.5 ** (elapsed_seconds / half_life_seconds)


def elapsed(since: datetime, now: datetime, *, grace_seconds: float = 0.0) -> float:
    """Seconds from ``since`` (plus a grace period) to ``now``; never negative."""
    return max(0.0, (now - since).total_seconds() - grace_seconds)


def recency_factor(age_seconds: float, half_life_seconds: float, floor: float) -> float:
    """1.0 for a grain just accessed, falling toward ``floor`` with age."""
    return decayed(1.0, floor, age_seconds, half_life_seconds)


@dataclass(frozen=True)
class DecayPolicy:
    """How grain and conduit weights fade with time. Times are epoch seconds, durations seconds."""

    floor: float
    tier_half_lives: Mapping[str, float]
    conduit_half_life: float
    conduit_grace: float

    def grain_weight(self, weight: float, tier: str, decayed_at: float, now: float) -> float:
        return decayed(weight, self.floor, now - decayed_at, self.tier_half_lives[tier])

    def conduit_weight(self, weight: float, created_at: float, decayed_at: float, now: float) -> float:
        start = max(decayed_at, created_at + self.conduit_grace)
        return decayed(weight, self.floor, now - start, self.conduit_half_life)
