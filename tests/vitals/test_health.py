"""Health through the services: scripted use drives the signals, warnings are raised, cleared and alerted once."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import Count

from grains.models import ActivityEvent, Grain
from graph.models import Conduit, TraceItem
from graph.services import decay_sweep, feedback_record, grain_retrieve
from memory.forgetting import grain_forget
from memory.store import grain_store, grain_store_batch
from tests.servers import fake_telegram, raw_http_server
from vitals.models import Gauge, HealthWarning, Snapshot
from vitals.selectors import health_history, vitals_states
from vitals.services import vitals_snapshot

pytestmark = pytest.mark.django_db
TOPICS = ["harbour", "lighthouse", "ferry", "anchor", "tide"]


@pytest.fixture
def memory(t0):
    grain_store_batch(items=[{"content": f"The {t} log says entry {i} was calm", "context": t}
                             for t in TOPICS for i in range(4)], now=t0)


def state(name: str, now) -> tuple[float | None, str]:
    found = next(s for s in vitals_states(now=now) if s.name == name)
    return found.value, found.state


def retrieve(n: int, now, rate=None):
    for i in range(n):
        found = grain_retrieve(query=f"{TOPICS[i % 5]} log", caller="agent:chat", enforce_feedback=False, now=now)
        for g in found.grains if rate else ():
            feedback_record(trace_id=found.trace_id, grain_id=g.id, useful=rate(i, g), caller="agent:chat", now=now)


def test_without_feedback_compliance_warns_once_warmed_up(memory, t0):
    retrieve(19, t0)
    assert state("feedback_compliance_rate", t0) == (0.0, "warming_up")
    retrieve(1, t0)
    assert state("feedback_compliance_rate", t0) == (0.0, "warning")
    result = vitals_snapshot(now=t0)
    assert "feedback_compliance_rate" in result.raised and result.snapshot.status == "critical"
    warning = HealthWarning.objects.get(signal="feedback_compliance_rate")
    assert warning.cleared_at is None and "flux_feedback" in warning.message
    assert ActivityEvent.objects.filter(kind="vitals.warning_raised", payload__signal="feedback_compliance_rate")


def test_a_run_of_not_useful_feedback_makes_retrieval_success_fall(memory, t0, flux_settings):
    # Every grain here is a direct hit; with the grains' own weights lowered by not-useful feedback, grains
    # reached over conduits come up too, and their paths lose weight.
    flux_settings(NOT_USEFUL_GRAIN_FACTOR=0.85)
    retrieve(10, t0, rate=lambda i, g: True)
    first, _ = state("retrieval_success_rate", t0)
    retrieve(50, t0, rate=lambda i, g: False)
    value, where = state("retrieval_success_rate", t0)
    assert first == 1.0 and value < 0.25 and where == "warning"
    assert state("feedback_compliance_rate", t0) == (1.0, "ok")
    assert state("avg_weight_drop_on_failure", t0)[0] > 0


def test_a_new_warning_alerts_once_and_clearing_sends_nothing(memory, t0, flux_settings):
    with fake_telegram() as (url, received):
        flux_settings(TELEGRAM_BOT_TOKEN="123:abc", TELEGRAM_CHAT_ID="42", TELEGRAM_API_URL=url)
        retrieve(20, t0)
        first = vitals_snapshot(now=t0)
        assert [a.result(timeout=30) for a in first.alerts] == [True]
        assert vitals_snapshot(now=t0 + timedelta(minutes=5)).alerts == []  # still warning: no new alert
        for item in TraceItem.objects.all():
            feedback_record(trace_id=item.trace_id, grain_id=item.grain_id, useful=True, caller="agent:chat", now=t0)
        cleared = vitals_snapshot(now=t0 + timedelta(minutes=10))
        assert "feedback_compliance_rate" in cleared.cleared and cleared.alerts == []
    assert len(received) == 1
    path, body = received[0]
    assert path == "/bot123:abc/sendMessage" and body["chat_id"] == "42"
    assert body["text"].startswith("Flux Memory health warning: feedback_compliance_rate = 0")
    assert HealthWarning.objects.get(signal="feedback_compliance_rate").cleared_at == t0 + timedelta(minutes=10)
    assert ActivityEvent.objects.filter(kind="vitals.warning_cleared", payload__signal="feedback_compliance_rate")


def test_a_failing_alert_is_retried_then_given_up_without_raising(memory, t0, flux_settings):
    flux_settings(TELEGRAM_BOT_TOKEN="t", TELEGRAM_CHAT_ID="c", ALERT_BACKOFF_SECONDS=0.01, ALERT_RETRIES=3)
    retrieve(20, t0)
    with fake_telegram(failures=1) as (url, received):
        flux_settings(TELEGRAM_API_URL=url)
        assert [a.result(timeout=30) for a in vitals_snapshot(now=t0).alerts] == [True]
    assert len(received) == 2  # one failure, then sent
    HealthWarning.objects.all().delete()
    with fake_telegram(failures=99) as (url, received):
        flux_settings(TELEGRAM_API_URL=url)
        assert [a.result(timeout=30) for a in vitals_snapshot(now=t0).alerts] == [False]
    assert len(received) == 3


@pytest.mark.parametrize("pieces", [
    [(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ok\"", 0)],  # cut short
    [(b"GARBAGE\r\n\r\n", 0)],  # not HTTP
    [(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n[1,2,3]", 0)],  # JSON, but no object
    [(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 0), *((bytes([b]), 0.3) for b in b'{"ok":true}')],
])
def test_an_alert_answered_wrongly_is_retried_and_logged_never_raised(pieces, monkeypatch, caplog):
    """Whatever the Bot API answers, short of ok, is retried ALERT_RETRIES times in bounded attempts and logged,
    without the token; a drip counts as no answer once the attempt's time is up."""
    import vitals.alerts as alerts

    monkeypatch.setattr(alerts, "ATTEMPT_SECONDS", 1.0)
    with raw_http_server(pieces) as url:
        sent = alerts.telegram_send("a warning", token="123:secret", chat_id="42", api_url=url, retries=2,
                                    backoff=0.01)
    assert sent is False
    assert "not sent after 2 attempts" in caplog.text and "secret" not in caplog.text


def test_gauges_stay_exact_through_stores_moves_and_forgetting(t0):
    grains = [r.grain for r in grain_store_batch(items=[{"content": f"Gauge probe {i}", "context": "g"}
                                                          for i in range(8)], now=t0)]
    grain_forget(grain_id=grains[0].pk, reason="test", now=t0)
    decay_sweep(now=t0 + timedelta(days=40))
    grain_store(content="Gauge probe 3", caller="someone:chat", now=t0 + timedelta(days=41))  # wakes one up
    decay_sweep(now=t0 + timedelta(days=200))
    gauges = dict(Gauge.objects.values_list("name", "value"))
    for status, n in Grain.objects.values_list("status").annotate(n=Count("id")):
        assert gauges[f"grains:{status}"] == n
    assert gauges["grains"] == Grain.objects.count() == 7
    assert gauges["conduits"] == Conduit.objects.count()
    assert (gauges["grains:archived"], gauges["grains:dormant"]) == (6, 1)  # the one woken at day 41 sleeps again


def test_snapshots_make_a_history_and_old_ones_are_dropped(memory, t0, flux_settings):
    flux_settings(HEALTH_RETENTION_DAYS=1.0)
    retrieve(5, t0)
    for hours in (0, 20, 30):
        vitals_snapshot(now=t0 + timedelta(hours=hours))
    history = health_history(signal="avg_hops_per_retrieval")
    assert [h["created_at"] for h in history] == [t0 + timedelta(hours=20), t0 + timedelta(hours=30)]
    assert Snapshot.objects.count() == 2
    assert health_history(signal="avg_hops_per_retrieval", since=(t0 + timedelta(hours=21)).isoformat())[0][
        "created_at"] == t0 + timedelta(hours=30)


def test_checking_health_costs_the_same_queries_however_long_the_history(memory, t0):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from vitals.selectors import health_summary

    counts = []
    for more in (5, 60):
        retrieve(more, t0, rate=lambda i, g: i % 2 == 0)
        vitals_snapshot(now=t0)
        with CaptureQueriesContext(connection) as queries:
            health = health_summary(write_depth=0, now=t0)
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 15
    assert health["grains"]["active"] == 20
    assert not any("graph_trace" in q["sql"] or "activityevent" in q["sql"] for q in queries.captured_queries)
