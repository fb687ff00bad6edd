"""Health of the memory: signals, counts by status and kind (from gauges), queues, warnings, history."""
from __future__ import annotations

from datetime import datetime

from django.db.models import Sum
from django.utils import timezone

from core.conf import flux_setting as S
from core.errors import InvalidInput
from core.redis_state import redis_health
from core.validate import iso_datetime
from grains.models import Caller, Grain, Status
from graph.models import Conduit, ConduitKind, Feedback
from graph.semantic import semantic_state
from vitals.counters import counter_sums, window_start
from vitals.models import Gauge, HealthWarning, Snapshot
from vitals.signals import SIGNALS, WINDOWS, Reading, SignalState, overall

NAMES = [s.name for s in SIGNALS]


def vitals_read(*, now: datetime) -> Reading:
    """What the signals need, in a few small queries whatever the history: counter sums per window, the
    gauges, highways (an index range), the instance's age and its retrievals ever."""
    gauges = dict(Gauge.objects.values_list("name", "value"))
    gauges["highways"] = Conduit.objects.filter(weight__gte=S("HIGHWAY_WEIGHT")).count()
    first = Grain.objects.order_by("pk").values_list("created_at", flat=True).first()
    age = (now - first).total_seconds() / 86400 if first else 0.0
    retrievals = Caller.objects.aggregate(n=Sum("retrievals"))["n"] or 0
    windows = {days: counter_sums(since=window_start(now, days)) for days in WINDOWS}
    return Reading(windows=windows, gauges=gauges, age_days=age, retrievals=retrievals)


def vitals_states(*, now: datetime | None = None) -> list[SignalState]:
    reading = vitals_read(now=now or timezone.now())
    return [signal.evaluate(reading) for signal in SIGNALS]


def health_summary(*, write_depth: int, now: datetime | None = None) -> dict:
    """Status (ok / warn / critical), every signal, grain and conduit counts, queues, open warnings.

    A few small queries however long the instance has run: no table is counted.
    """
    reading = vitals_read(now=now or timezone.now())
    states = [signal.evaluate(reading) for signal in SIGNALS]
    gauges = reading.gauges
    grains = {s.value: int(gauges.get(f"grains:{s.value}", 0)) for s in Status}
    conduits = {k.value: int(gauges.get(f"conduits:{k.value}", 0)) for k in ConduitKind}
    last = Snapshot.objects.order_by("-created_at").values_list("created_at", flat=True).first()
    warnings = HealthWarning.objects.filter(cleared_at__isnull=True).order_by("raised_at")
    return {
        "status": overall(states),
        "signals": [s.as_dict() for s in states],
        "warnings": list(warnings.values("signal", "severity", "value", "message", "raised_at")),
        "grains": {**grains, "total": int(gauges.get("grains", 0))},
        "conduits": {**{k: v for k, v in conduits.items() if v}, "total": int(gauges.get("conduits", 0))},
        "queues": {"write": write_depth, "feedback_pending": Feedback.objects.filter(applied_at__isnull=True).count()},
        "retrieval": semantic_state(),
        "redis": redis_health(),
        "last_snapshot": last,
    }


def health_history(*, signal: str, since: str | None = None, limit: int = 500) -> list[dict]:
    """One signal's value and state in each snapshot since ``since`` (ISO 8601), oldest first."""
    if signal not in NAMES:
        raise InvalidInput(f"'signal' {signal!r} is not one of {', '.join(NAMES)}", details={"field": "signal"})
    rows = Snapshot.objects.order_by("created_at")
    if since:
        rows = rows.filter(created_at__gte=iso_datetime(since, "since"))
    return [{"created_at": created, **values.get(signal, {"value": None, "state": "no_data"})}
            for created, values in rows.values_list("created_at", "signals")[:limit]]
