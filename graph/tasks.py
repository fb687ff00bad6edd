"""Celery tasks of the graph: each calls one service and is safe to run twice."""
from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from graph.semantic import embed_missing
from graph.services import cluster_rebuild, decay_sweep


@shared_task(name="graph.decay_sweep")
def decay_sweep_task() -> dict:
    """Apply lazy decay and the lifecycle moves everywhere (idempotent)."""
    result = decay_sweep()
    return {"examined": result.examined, "moved": result.moved}


@shared_task(name="graph.cluster_rebuild")
def cluster_rebuild_task() -> dict:
    """Re-cluster the active graph (deterministic; a concurrent second run is skipped)."""
    return asdict(cluster_rebuild())


@shared_task(name="graph.embed_missing")
def embed_missing_task() -> dict:
    """Embed grains that have no vector yet (a no-op when semantic entry is off)."""
    return {"embedded": embed_missing()}
