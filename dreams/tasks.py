"""Celery tasks of the dream cycle."""
from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from dreams.services import dream_run
from grains.errors import Conflict


@shared_task(name="dreams.dream_run")
def dream_run_task() -> dict:
    """Consolidate the best clumps not dreamt of yet (an unchanged clump is never dreamt of twice); skipped while
    another run (e.g. one asked for through REST) is going."""
    try:
        return asdict(dream_run())
    except Conflict as exc:
        return {"skipped": exc.message}
