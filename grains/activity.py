"""The append-only activity log: every service that changes the graph writes here."""
from __future__ import annotations

from datetime import datetime

from grains.models import ActivityEvent


def activity_record(kind: str, payload: dict, *, now: datetime) -> None:
    ActivityEvent.objects.create(kind=kind, payload=payload, created_at=now)


def activity_record_many(rows: list[tuple[str, dict]], *, now: datetime) -> None:
    ActivityEvent.objects.bulk_create([ActivityEvent(kind=k, payload=p, created_at=now) for k, p in rows])
