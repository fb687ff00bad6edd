"""DB-free tests of lazy decay."""
from __future__ import annotations

import pytest

from graph.algorithms.decay import DecayPolicy, decayed, recency_factor

DAY = 86400.0


def test_value_halves_toward_the_floor_each_half_life():
    assert decayed(0.85, floor=0.05, elapsed_seconds=7 * DAY, half_life_seconds=7 * DAY) == pytest.approx(0.45)


def test_decay_is_memoryless_so_write_back_is_safe():
    once = decayed(0.9, floor=0.05, elapsed_seconds=10 * DAY, half_life_seconds=7 * DAY)
    first = decayed(0.9, floor=0.05, elapsed_seconds=4 * DAY, half_life_seconds=7 * DAY)
    twice = decayed(first, floor=0.05, elapsed_seconds=6 * DAY, half_life_seconds=7 * DAY)
    assert once == pytest.approx(twice)


def test_no_decay_without_time_or_below_the_floor():
    assert decayed(0.5, floor=0.05, elapsed_seconds=0, half_life_seconds=DAY) == 0.5
    assert decayed(0.04, floor=0.05, elapsed_seconds=DAY, half_life_seconds=DAY) == 0.04


def test_policy_uses_the_tier_half_life_and_conduit_grace():
    policy = DecayPolicy(floor=0.05, tier_half_lives={"core": 30 * DAY, "working": 7 * DAY, "ephemeral": 2 * DAY},
                         conduit_half_life=14 * DAY, conduit_grace=3 * DAY)
    t0 = 1_700_000_000.0
    later = t0 + 7 * DAY
    assert policy.grain_weight(0.55, "working", t0, later) == pytest.approx(0.3)
    assert policy.grain_weight(0.55, "core", t0, later) > policy.grain_weight(0.55, "working", t0, later)
    assert policy.conduit_weight(0.5, t0, t0, t0 + 3 * DAY) == 0.5
    assert policy.conduit_weight(0.5, t0, t0, t0 + 17 * DAY) == pytest.approx(0.275)


def test_recency_factor_falls_from_one_to_its_floor():
    assert recency_factor(0, half_life_seconds=DAY, floor=0.5) == 1.0
    assert recency_factor(DAY, half_life_seconds=DAY, floor=0.5) == pytest.approx(0.75)
    assert recency_factor(1000 * DAY, half_life_seconds=DAY, floor=0.5) == pytest.approx(0.5)
