"""Celery tasks of the grains app."""
from __future__ import annotations

from celery import shared_task

from grains.broker import broker_cleanup
from grains.tombstones import tombstones_expire


@shared_task(name="grains.broker_cleanup")
def broker_cleanup_task() -> int:
    return broker_cleanup()


@shared_task(name="grains.tombstones_expire")
def tombstones_expire_task() -> int:
    """Clear the restore data of tombstones whose restore window has ended (idempotent)."""
    return tombstones_expire()
