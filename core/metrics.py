"""Counting what happens, for the health signals, without the services depending on the app that counts.

Services call ``count({...}, now=...)`` inside their own transaction, so a count is kept exactly when the work
it counts is. The vitals app installs the sink when Django starts (its ``tally``: one upsert into this hour's
counters); with no sink installed counts are dropped. This is the one inversion in the stack: vitals reads
the domain, the domain never imports vitals.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

Sink = Callable[..., None]
_sink: Sink | None = None


def install(sink: Sink) -> None:
    global _sink
    _sink = sink


def count(counts: Mapping[str, float], *, now: datetime) -> None:
    if _sink is not None:
        _sink(counts, now=now)
