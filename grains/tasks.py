"""Celery tasks of the grains app."""
from __future__ import annotations

from celery import shared_task

from grains.broker import broker_cleanup


@shared_task(name="grains.broker_cleanup")
def broker_cleanup_task() -> int:
    return broker_cleanup()
