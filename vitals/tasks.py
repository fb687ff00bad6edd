"""Celery tasks of the health monitor."""
from __future__ import annotations

from celery import shared_task

from vitals.services import vitals_snapshot


@shared_task(name="vitals.vitals_snapshot")
def vitals_snapshot_task() -> dict:
    """Snapshot every signal, raise and clear warnings (alerts go out in the background)."""
    result = vitals_snapshot()
    for alert in result.alerts:
        alert.result()  # a worker process may exit right after its task: let the alerts finish first
    return {"status": result.snapshot.status, "raised": result.raised, "cleared": result.cleared}
