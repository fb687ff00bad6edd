"""Traces after a purge: the queries that found a purged grain are scrubbed of their text."""
from __future__ import annotations

from graph.models import Trace

SCRUBBED_QUERY = "[removed: this retrieval returned a purged grain]"


def traces_scrub(grain_id: int) -> int:
    """Replace the query of every trace that returned ``grain_id`` (call before the grain is deleted, inside the
    purge's transaction); how many traces were scrubbed."""
    return Trace.objects.filter(items__grain_id=grain_id).exclude(query=SCRUBBED_QUERY).update(query=SCRUBBED_QUERY)
