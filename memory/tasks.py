"""The Celery tasks: one per periodic action, each safe to run twice (fluxsite/celery.py schedules them)."""
from __future__ import annotations

from concurrent import futures
from dataclasses import asdict

from celery import shared_task

from core.errors import Conflict
from memory import upkeep
from memory.dreaming import dream_run
from memory.forgetting import tombstones_expire
from memory.retrieval import feedback_apply_pending

ALERT_GRACE_SECONDS = 5.0  # how long a snapshot waits for its alerts before the worker moves on


@shared_task(name="graph.decay_sweep")
def decay_sweep_task() -> dict:
    """Apply lazy decay and the lifecycle moves everywhere (idempotent)."""
    result = upkeep.decay_sweep()
    return {"examined": result.examined, "moved": result.moved}


@shared_task(name="graph.cluster_rebuild")
def cluster_rebuild_task() -> dict:
    """Re-cluster the active graph (deterministic; a concurrent second run is skipped)."""
    return asdict(upkeep.cluster_rebuild())


@shared_task(name="graph.cluster_refresh")
def cluster_refresh_task() -> dict:
    """Re-cluster now when CLUSTER_GROWTH_GRAINS grains, or CLUSTER_GROWTH_FRACTION of the graph, were stored since
    the last clustering (a cheap count otherwise)."""
    result = upkeep.cluster_refresh()
    return asdict(result) if result else {"grown": False}


@shared_task(name="graph.feedback_apply_pending")
def feedback_apply_pending_task() -> int:
    """Apply feedback accepted but not applied: the REST service applies it right after the 202, so this finds
    only what a service killed in between, or a full write queue, left behind."""
    return feedback_apply_pending()


@shared_task(name="graph.embed_missing")
def embed_missing_task() -> dict:
    """Embed grains that have no vector yet (a no-op when semantic entry is off)."""
    return {"embedded": upkeep.embed_missing()}


@shared_task(name="graph.changes_prune")
def changes_prune_task() -> int:
    """Trim the graph mirror's change log to its last rows."""
    return upkeep.changes_prune()


@shared_task(name="graph.search_terms_fold")
def search_terms_fold_task() -> int:
    """PostgreSQL: fold the counts of each search term into one row per term (nothing on SQLite)."""
    return upkeep.search_terms_fold()


@shared_task(name="epistemic.epistemic_pass")
def epistemic_pass_task() -> dict:
    """Compare grains stored since the last pass with their nearest grains (resumes where it stopped)."""
    return asdict(upkeep.epistemic_pass())


@shared_task(name="dreams.dream_run")
def dream_run_task() -> dict:
    """Consolidate the best clumps not dreamt of yet (an unchanged clump is never dreamt of twice); skipped while
    another run (e.g. one asked for through REST) is going."""
    try:
        return asdict(dream_run())
    except Conflict as exc:
        return {"skipped": exc.message}


@shared_task(name="vitals.vitals_snapshot")
def vitals_snapshot_task() -> dict:
    """Snapshot every signal, raise and clear warnings (alerts go out in the background)."""
    result = upkeep.vitals_snapshot()
    # Alerts get a moment to go out before the task returns; then they go on in their thread (which the process
    # waits for at exit) while the worker runs the next task: a slow chat service never holds maintenance up.
    futures.wait(result.alerts, timeout=ALERT_GRACE_SECONDS)
    return {"status": result.snapshot.status, "raised": result.raised, "cleared": result.cleared}


@shared_task(name="grains.backup_daily")
def backup_daily_task() -> dict:
    """A backup kept among the newest BACKUP_KEEP (nothing when BACKUP_KEEP is 0)."""
    made = upkeep.backup_daily()
    return {"path": str(made.path), "bytes": made.bytes, "seconds": made.seconds} if made else {"kept": 0}


@shared_task(name="grains.broker_cleanup")
def broker_cleanup_task() -> int:
    return upkeep.broker_cleanup()


@shared_task(name="grains.tombstones_expire")
def tombstones_expire_task() -> int:
    """Clear the restore data of tombstones whose restore window has ended (idempotent)."""
    return tombstones_expire()
