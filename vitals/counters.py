"""Counting what happens, in hourly buckets, for the health signals. Services call ``tally``."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Sum

from vitals.models import Counter

_UPSERT = ("INSERT INTO vitals_counter (name, bucket, value) VALUES (%s, %s, %s) "
           "ON CONFLICT (name, bucket) DO UPDATE SET value = vitals_counter.value + excluded.value")


def bucket_of(when: datetime) -> datetime:
    return when.replace(minute=0, second=0, microsecond=0)


def tally(counts: Mapping[str, float], *, now: datetime) -> None:
    """Add ``counts`` to this hour's counters, in one statement; zero counts are skipped."""
    bucket = connection.ops.adapt_datetimefield_value(bucket_of(now))
    rows = [(name, bucket, float(value)) for name, value in counts.items() if value]
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(_UPSERT, rows)


def counter_sums(*, since: datetime) -> dict[str, float]:
    """Each counter summed over the hours from ``since`` (its hour included) on: a few rows per hour."""
    rows = Counter.objects.filter(bucket__gte=bucket_of(since)).values("name").annotate(total=Sum("value"))
    return {r["name"]: r["total"] for r in rows}


def counters_forget(*, before: datetime) -> int:
    deleted, _ = Counter.objects.filter(bucket__lt=bucket_of(before)).delete()
    return deleted


def window_start(now: datetime, days: float) -> datetime:
    return now - timedelta(days=days)
