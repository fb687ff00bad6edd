"""Every health signal's value and state on literal counters and gauges (no database)."""
from __future__ import annotations

import pytest

from vitals.signals import SIGNALS, Reading, overall, transitions

BY_NAME = {s.name: s for s in SIGNALS}
WARM = {"age_days": 400.0, "retrievals": 10_000}


def reading(counters: dict | None = None, gauges: dict | None = None, **age: float) -> Reading:
    counters = counters or {}
    return Reading(windows={1.0: counters, 7.0: counters}, gauges=gauges or {}, **{**WARM, **age})


# name, counters, gauges, expected value, state
CASES = [
    ("highway_count", {}, {"highways": 12}, 12, "ok"),
    ("highway_count", {}, {"highways": 0}, 0, "warning"),
    ("highway_growth_rate", {"highways_formed": 14, "highways_lost": 7}, {}, 1.0, "ok"),
    ("highway_growth_rate", {"highways_formed": 0, "highways_lost": 7}, {}, -1.0, "warning"),
    ("shortcut_creation_rate", {"shortcuts_created": 5, "retrievals": 100}, {}, 5.0, "ok"),
    ("shortcut_creation_rate", {"shortcuts_created": 60, "retrievals": 100}, {}, 60.0, "warning"),
    ("shortcut_creation_rate", {}, {}, None, "no_data"),
    ("conduit_dissolution_rate", {"conduits_dissolved": 10}, {"conduits": 1000}, 0.01, "ok"),
    ("conduit_dissolution_rate", {"conduits_dissolved": 100}, {"conduits": 1000}, 0.1, "warning"),
    ("avg_weight_drop_on_failure", {"weight_drop_sum": 4.5, "weight_drops": 100}, {}, 0.045, "ok"),
    ("avg_weight_drop_on_failure", {"weight_drop_sum": 0.1, "weight_drops": 100}, {}, 0.001, "warning"),
    ("promotion_events", {"promotions": 3}, {}, 3, "ok"),
    ("promotion_events", {}, {}, 0, "warning"),
    ("avg_hops_per_retrieval", {"returned_hops": 40, "returned": 100}, {}, 0.4, "ok"),
    ("avg_hops_per_retrieval", {"returned_hops": 300, "returned": 100}, {}, 3.0, "warning"),
    ("orphan_rate", {"stored_unlinked": 5, "stored": 100}, {}, 0.05, "ok"),
    ("orphan_rate", {"stored_unlinked": 50, "stored": 100}, {}, 0.5, "warning"),
    ("avg_conduit_weight", {"path_weight_sum": 40, "path_conduits": 100}, {}, 0.4, "ok"),
    ("avg_conduit_weight", {"path_weight_sum": 5, "path_conduits": 100}, {}, 0.05, "warning"),
    ("retrieval_success_rate", {"useful": 30, "rated": 100}, {}, 0.3, "ok"),
    ("retrieval_success_rate", {"useful": 10, "rated": 100}, {}, 0.1, "warning"),
    ("fallback_trigger_rate", {"fallbacks": 10, "retrievals": 100}, {}, 0.1, "ok"),
    ("fallback_trigger_rate", {"fallbacks": 50, "retrievals": 100}, {}, 0.5, "warning"),
    ("feedback_compliance_rate", {"rated": 90, "returned": 100}, {}, 0.9, "ok"),
    ("feedback_compliance_rate", {"rated": 10, "returned": 100}, {}, 0.1, "warning"),
    ("core_grain_count", {}, {"tier:core": 4}, 4, "ok"),
    ("core_grain_count", {}, {}, 0, "warning"),
    ("dormant_grain_rate", {}, {"grains:dormant": 10, "grains:active": 90}, 0.1, "ok"),
    ("dormant_grain_rate", {}, {"grains:dormant": 90, "grains:active": 10}, 0.9, "warning"),
]


def test_there_are_fourteen_signals_each_fully_described():
    assert len(SIGNALS) == 14 == len(BY_NAME)
    for signal in SIGNALS:
        assert signal.measures and signal.suggestion and signal.severity in ("warning", "critical")
        assert signal.low is not None or signal.high is not None
    assert {name for name, *_ in CASES} == set(BY_NAME)


@pytest.mark.parametrize("name,counters,gauges,value,state", CASES)
def test_signal_value_and_state(name, counters, gauges, value, state):
    result = BY_NAME[name].evaluate(reading(counters, gauges))
    assert result.state == state
    assert result.value == (None if value is None else pytest.approx(value))


@pytest.mark.parametrize("name,counters,gauges,value,state", [c for c in CASES if c[4] == "warning"])
def test_no_signal_warns_while_warming_up(name, counters, gauges, value, state):
    signal = BY_NAME[name]
    young = reading(counters, gauges, age_days=0.0, retrievals=0)
    expected = "warming_up" if signal.warmup_days or signal.warmup_retrievals else "warning"
    assert signal.evaluate(young).state == expected


def test_warm_up_needs_both_its_days_and_its_retrievals():
    signal = BY_NAME["feedback_compliance_rate"]  # 20 retrievals, no days
    low = {"rated": 1, "returned": 100}
    assert signal.evaluate(reading(low, retrievals=19)).state == "warming_up"
    assert signal.evaluate(reading(low, retrievals=20, age_days=0.0)).state == "warning"
    promotions = BY_NAME["promotion_events"]  # 7 days and 200 retrievals
    assert promotions.evaluate(reading({}, retrievals=5000, age_days=6.9)).state == "warming_up"
    assert promotions.evaluate(reading({}, retrievals=199, age_days=30)).state == "warming_up"


def test_overall_status_follows_the_worst_warning():
    states = [s.evaluate(reading({"rated": 90, "returned": 100, "useful": 50})) for s in SIGNALS]
    assert overall([s for s in states if not s.warns]) == "ok"
    worse = BY_NAME["orphan_rate"].evaluate(reading({"stored_unlinked": 9, "stored": 10}))
    assert overall([worse]) == "warn"
    critical = BY_NAME["feedback_compliance_rate"].evaluate(reading({"rated": 1, "returned": 100}))
    assert overall([worse, critical]) == "critical"


def test_warnings_are_raised_once_and_cleared_when_the_signal_returns():
    bad = BY_NAME["orphan_rate"].evaluate(reading({"stored_unlinked": 9, "stored": 10}))
    good = BY_NAME["orphan_rate"].evaluate(reading({"stored_unlinked": 0, "stored": 10}))
    assert transitions([bad], set()) == ([bad], [])
    assert transitions([bad], {"orphan_rate"}) == ([], [])  # already open: not raised again
    assert transitions([good], {"orphan_rate"}) == ([], ["orphan_rate"])
