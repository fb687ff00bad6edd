"""Health: signals read from counters and gauges, snapshots, warnings raised and cleared, alerts."""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from core.conf import flux_setting as S
from grains.activity import activity_record
from grains.models import Grain, Status, Tier
from graph.models import Conduit, ConduitKind
from vitals.alerts import alert_soon
from vitals.counters import counters_forget, window_start
from vitals.models import Gauge, HealthWarning, Snapshot
from vitals.selectors import vitals_states
from vitals.signals import WINDOWS, SignalState, overall, transitions


@dataclass(frozen=True)
class SnapshotResult:
    snapshot: Snapshot
    raised: list[str]
    cleared: list[str]
    alerts: list[Future] = field(default_factory=list)


def _message(state: SignalState) -> str:
    bounds = f"[{'' if state.low is None else state.low}, {'' if state.high is None else state.high}]"
    return f"{state.name} = {state.value:.3g}, outside its healthy range {bounds}: {state.suggestion}"


def vitals_snapshot(*, now: datetime | None = None) -> SnapshotResult:
    """Store every signal's value and state; raise warnings that start, clear those that ended.

    Each raise and clear goes to the activity log; each new warning (only a new
    one) is sent as a Telegram alert in the background when configured.
    History older than HEALTH_RETENTION_DAYS is deleted. One short transaction.
    """
    now = now or timezone.now()
    states = vitals_states(now=now)
    with transaction.atomic():
        snapshot = Snapshot.objects.create(created_at=now, status=overall(states), signals={
            s.name: {"value": None if s.value is None else round(s.value, 6), "state": s.state} for s in states})
        open_warnings = {w.signal: w for w in HealthWarning.objects.filter(cleared_at__isnull=True)}
        raised, cleared = transitions(states, set(open_warnings))
        for state in raised:
            HealthWarning.objects.create(signal=state.name, severity=state.severity, value=state.value,
                                         message=_message(state)[:300], raised_at=now)
            activity_record("vitals.warning_raised", {"signal": state.name, "value": state.value,
                                                      "severity": state.severity, "message": _message(state)}, now=now)
        for name in cleared:
            HealthWarning.objects.filter(pk=open_warnings[name].pk).update(cleared_at=now)
            activity_record("vitals.warning_cleared", {"signal": name}, now=now)
        keep = now - timedelta(days=S("HEALTH_RETENTION_DAYS"))
        Snapshot.objects.filter(created_at__lt=keep).delete()
        counters_forget(before=min(keep, window_start(now, max(WINDOWS))))
    alerts = [f for state in raised if (f := alert_soon(f"Flux Memory health warning: {_message(state)}"))]
    return SnapshotResult(snapshot, [s.name for s in raised], cleared, alerts)


def gauges_recount() -> dict[str, int]:
    """Set every gauge to the exact count of its table (one pass over grains and conduits).

    The triggers keep the gauges exact; this repairs them after anything that
    bypassed the triggers (a bulk delete of whole tables, rows edited by hand).
    """
    counts: dict[str, int] = {f"grains:{s.value}": 0 for s in Status} | {f"tier:{t.value}": 0 for t in Tier}
    counts |= {f"conduits:{k.value}": 0 for k in ConduitKind}
    for status, tier, n in Grain.objects.values_list("status", "tier").annotate(n=Count("id")).values_list(
            "status", "tier", "n"):
        counts[f"grains:{status}"] += n
        counts[f"tier:{tier}"] += n
    for kind, n in Conduit.objects.values_list("kind").annotate(n=Count("id")).values_list("kind", "n"):
        counts[f"conduits:{kind}"] = n
    counts["grains"] = sum(counts[f"grains:{s.value}"] for s in Status)
    counts["conduits"] = sum(counts[f"conduits:{k.value}"] for k in ConduitKind)
    with transaction.atomic():
        Gauge.objects.all().delete()
        Gauge.objects.bulk_create([Gauge(name=name, value=n) for name, n in counts.items()])
    return counts
