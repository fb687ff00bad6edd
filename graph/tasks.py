"""Celery tasks of the graph: each loads what it needs, calls one service, and is safe to run twice."""
from __future__ import annotations

from celery import shared_task

from graph.services import decay_sweep


@shared_task(name="graph.decay_sweep")
def decay_sweep_task() -> dict:
    """Apply lazy decay everywhere and move idle grains to dormant (idempotent)."""
    result = decay_sweep()
    return {"examined": result.examined, "demoted": result.demoted}
