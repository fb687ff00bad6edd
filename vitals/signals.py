"""The 14 health signals of a memory (pure, no Django).

Each signal is one small class: what it measures, its healthy range, the
time window its counters are summed over, how long the instance must have
run (days and retrievals) before it may warn, a severity and a one-line
suggestion. Its value is a pure function of counters (sums over the window
of what the services counted) and gauges (exact current counts), so a
signal costs a handful of rows however long the instance has run.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

Numbers = Mapping[str, float]


@dataclass(frozen=True)
class Reading:
    """What the signals read: counter sums per window (days -> name -> sum), gauges, the instance's age."""

    windows: Mapping[float, Numbers]
    gauges: Numbers
    age_days: float
    retrievals: float  # ever


@dataclass(frozen=True)
class SignalState:
    name: str
    value: float | None
    low: float | None
    high: float | None
    state: str  # ok | warning | warming_up | no_data
    severity: str
    suggestion: str
    window_days: float
    measures: str

    @property
    def warns(self) -> bool:
        return self.state == "warning"

    def as_dict(self) -> dict:
        return {**self.__dict__, "value": None if self.value is None else round(self.value, 4)}


def _ratio(top: float, bottom: float) -> float | None:
    return top / bottom if bottom else None


class Signal:
    name = ""
    measures = ""
    low: float | None = None
    high: float | None = None
    window_days = 7.0
    warmup_days = 0.0
    warmup_retrievals = 0
    severity = "warning"
    suggestion = ""

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        raise NotImplementedError

    def evaluate(self, reading: Reading) -> SignalState:
        """The signal's value and state; it warns only outside its range and after its warm-up."""
        value = self.value(reading.windows.get(self.window_days, {}), reading.gauges)
        warmed = reading.age_days >= self.warmup_days and reading.retrievals >= self.warmup_retrievals
        outside = value is not None and ((self.low is not None and value < self.low)
                                         or (self.high is not None and value > self.high))
        state = "no_data" if value is None else "warming_up" if not warmed else "warning" if outside else "ok"
        return SignalState(self.name, value, self.low, self.high, state, self.severity, self.suggestion,
                           self.window_days, self.measures)


class CounterRatio(Signal):
    """A ratio of two counters summed over the window, times ``scale``; no value while the bottom is 0."""

    top = bottom = ""
    scale = 1.0

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        ratio = _ratio(counters.get(self.top, 0), counters.get(self.bottom, 0))
        return None if ratio is None else self.scale * ratio


class HighwayCount(Signal):
    name, measures = "highway_count", "conduits whose weight reached HIGHWAY_WEIGHT: the strong paths"
    low, warmup_days, warmup_retrievals, severity = 1, 3.0, 100, "warning"
    suggestion = "no strong paths have formed: rate retrieved grains so useful paths strengthen"

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        return gauges.get("highways")


class HighwayGrowthRate(Signal):
    name, measures = "highway_growth_rate", "highways formed minus highways lost, per day"
    low, warmup_days, warmup_retrievals = 0.0, 7.0, 100
    suggestion = ("strong paths are fading faster than they form: check that feedback is mostly useful=true for good "
                  "answers")

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        return (counters.get("highways_formed", 0) - counters.get("highways_lost", 0)) / self.window_days


class ShortcutCreationRate(CounterRatio):
    name, measures = "shortcut_creation_rate", "shortcut conduits created per 100 retrievals"
    high, warmup_retrievals = 30.0, 100
    suggestion = "shortcuts are created for most retrievals: raise SHORTCUT_THRESHOLD so only repeated paths earn one"
    top, bottom = "shortcuts_created", "retrievals"
    scale = 100.0


class ConduitDissolutionRate(Signal):
    name, measures = "conduit_dissolution_rate", "share of conduits dissolved (weakened to nothing) in the window"
    high, warmup_retrievals = 0.05, 100
    suggestion = "conduits dissolve quickly: not-useful feedback may be given to good answers, or DECAY_FACTOR is harsh"

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        return _ratio(counters.get("conduits_dissolved", 0), gauges.get("conduits", 0))


class AvgWeightDropOnFailure(CounterRatio):
    name, measures = "avg_weight_drop_on_failure", "mean weight a path conduit loses on not-useful feedback"
    low, high, warmup_retrievals = 0.005, 0.2, 50
    suggestion = "failures barely change (or wipe out) paths: adjust DECAY_FACTOR"
    top, bottom = "weight_drop_sum", "weight_drops"


class PromotionEvents(Signal):
    name, measures = "promotion_events", "grains promoted (woken to active, or to the core tier) in the window"
    low, warmup_days, warmup_retrievals = 1, 7.0, 200
    suggestion = "nothing was promoted in a week: retrieved grains are not rated useful, or the memory is unused"

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        return counters.get("promotions", 0)


class AvgHopsPerRetrieval(CounterRatio):
    name, measures = "avg_hops_per_retrieval", "mean hops from the entry point to a returned grain"
    high, window_days, warmup_retrievals = 2.5, 1.0, 50
    suggestion = "answers come from far away: the entry search finds little; store more specific grains"
    top, bottom = "returned_hops", "returned"


class OrphanRate(CounterRatio):
    name, measures = "orphan_rate", "share of grains stored in the window with no conduit at all"
    high, warmup_days = 0.3, 1.0
    suggestion = "many grains arrive unconnected: give them a context, or store related facts together"
    top, bottom = "stored_unlinked", "stored"


class AvgConduitWeight(CounterRatio):
    name, measures = "avg_conduit_weight", "mean weight of the conduits on the paths of rated grains"
    low, high, warmup_retrievals = 0.1, 0.9, 50
    suggestion = "paths in use are all very weak (or saturated): check the balance of useful and not-useful feedback"
    top, bottom = "path_weight_sum", "path_conduits"


class RetrievalSuccessRate(CounterRatio):
    name, measures = "retrieval_success_rate", "share of rated grains rated useful"
    low, warmup_retrievals, severity = 0.25, 50, "critical"
    suggestion = "most retrieved grains are not useful: store atomic facts, and check that queries name what is sought"
    top, bottom = "useful", "rated"


class FallbackTriggerRate(CounterRatio):
    name, measures = "fallback_trigger_rate", "share of retrievals that fell back to the archive or found nothing"
    high, warmup_retrievals = 0.3, 50
    suggestion = ("many queries find too little among live grains: the memory may lack what is asked, or much is "
                  "archived")
    top, bottom = "fallbacks", "retrievals"


class FeedbackComplianceRate(CounterRatio):
    name, measures = "feedback_compliance_rate", "share of returned grains that were rated"
    low, warmup_retrievals, severity = 0.5, 20, "critical"
    suggestion = "callers rate few retrieved grains: call flux_feedback on every returned grain (see flux_onboard)"
    top, bottom = "rated", "returned"


class CoreGrainCount(Signal):
    name, measures = "core_grain_count", "grains promoted to the core decay tier by repeated usefulness"
    low, warmup_days, warmup_retrievals = 1, 14.0, 300
    suggestion = "no grain has become core: feedback is missing or PROMOTION_THRESHOLD is high"

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        return gauges.get("tier:core", 0)


class DormantGrainRate(Signal):
    name, measures = "dormant_grain_rate", "share of active and dormant grains that are dormant"
    high, warmup_days = 0.7, 30.0
    suggestion = "most of the memory sleeps: it is rarely retrieved, or DORMANT_AFTER_DAYS is short"

    def value(self, counters: Numbers, gauges: Numbers) -> float | None:
        dormant, active = gauges.get("grains:dormant", 0), gauges.get("grains:active", 0)
        return _ratio(dormant, dormant + active)


SIGNALS: list[Signal] = [
    HighwayCount(), HighwayGrowthRate(), ShortcutCreationRate(), ConduitDissolutionRate(), AvgWeightDropOnFailure(),
    PromotionEvents(), AvgHopsPerRetrieval(), OrphanRate(), AvgConduitWeight(), RetrievalSuccessRate(),
    FallbackTriggerRate(), FeedbackComplianceRate(), CoreGrainCount(), DormantGrainRate(),
]
WINDOWS = sorted({s.window_days for s in SIGNALS})


def overall(states: list[SignalState]) -> str:
    """ok, warn (a warning-severity signal warns) or critical (a critical one does)."""
    warning = [s for s in states if s.warns]
    if any(s.severity == "critical" for s in warning):
        return "critical"
    return "warn" if warning else "ok"


def transitions(states: list[SignalState], open_warnings: set[str]) -> tuple[list[SignalState], list[str]]:
    """Signals that start warning (not already open), and open warnings whose signal no longer warns."""
    warning = {s.name for s in states if s.warns}
    raised = [s for s in states if s.warns and s.name not in open_warnings]
    cleared = sorted(open_warnings - warning)
    return raised, cleared
