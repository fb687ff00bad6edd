"""The append-only activity log: every service that changes the graph writes here. A listener (the dashboard's
publisher, when the channel layer is Redis) hears of each event written, by id."""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.bulk import bulk_insert
from grains.models import ActivityEvent

_listeners: list[Callable[[list[int]], None]] = []


def activity_listen(listener: Callable[[list[int]], None]) -> None:
    """Call ``listener`` with the ids of the events each write adds (inside the writer's transaction)."""
    if listener not in _listeners:
        _listeners.append(listener)


def activity_record(kind: str, payload: dict, *, now: datetime) -> None:
    event = ActivityEvent.objects.create(kind=kind, payload=payload, created_at=now)
    _heard([event.pk])


def activity_record_many(rows: list[tuple[str, dict]], *, now: datetime) -> None:
    activity_record_at([(kind, payload, now) for kind, payload in rows])


def activity_record_at(rows: list[tuple[str, dict, datetime]]) -> None:
    """Events (kind, payload, when) in one insert, each at its own time."""
    made = [ActivityEvent(kind=k, payload=p, created_at=when) for k, p, when in rows]
    bulk_insert(ActivityEvent, made)
    _heard([e.pk for e in made])


def _heard(ids: list[int]) -> None:
    for listener in _listeners:
        listener(ids)
