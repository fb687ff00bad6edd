"""Celery tasks of the epistemic layer."""
from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from epistemic.review import epistemic_pass


@shared_task(name="epistemic.epistemic_pass")
def epistemic_pass_task() -> dict:
    """Compare grains stored since the last pass with their nearest grains (resumes where it stopped)."""
    return asdict(epistemic_pass())
