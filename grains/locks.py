"""Locks shared by every process of an instance, in the database: one clustering, one dream run at a time.

Taking a lock inserts its row (unique name), so of two takers at once exactly one succeeds, on SQLite and on
PostgreSQL alike; a holder that died leaves a row that expires. Each take and release is its own short
transaction.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.booth import inline
from grains.models import Lock


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _holder_gone(holder: str) -> bool:
    """Whether ``holder`` ("host:pid") was a process of this machine that no longer runs (killed mid-run)."""
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def lock_take(name: str, *, seconds: float, now: datetime | None = None) -> tuple[Lock, bool]:
    """(the lock's row, whether this call took it); a row past its expiry, or held by a process of this machine
    that died (a worker killed mid-run), is taken over."""
    now = now or timezone.now()
    held = Lock.objects.filter(name=name).values_list("holder", flat=True).first()
    try:
        with transaction.atomic():
            Lock.objects.filter(name=name, expires_at__lt=now).delete()
            if held is not None and _holder_gone(held):
                Lock.objects.filter(name=name, holder=held).delete()
            return Lock.objects.create(name=name, holder=_holder(), acquired_at=now,
                                       expires_at=now + timedelta(seconds=seconds)), True
    except IntegrityError:
        held = Lock.objects.filter(name=name).first()
        if held is None:  # released between the insert and this read: try once more
            return lock_take(name, seconds=seconds, now=now)
        return held, False


def lock_hold(name: str, *, seconds: float, now: datetime | None = None) -> bool:
    """Keep ``name`` for another ``seconds`` if this process holds it, else take it if it is free or expired (a
    lease: the holder renews it before it runs out, and another process takes over once it has)."""
    now = now or timezone.now()
    if Lock.objects.filter(name=name, holder=_holder()).update(expires_at=now + timedelta(seconds=seconds)):
        return True
    return lock_take(name, seconds=seconds, now=now)[1]


def lock_release(lock: Lock) -> None:
    Lock.objects.filter(pk=lock.pk, holder=lock.holder).delete()


@contextmanager
def exclusive(name: str, *, seconds: float, write: Callable = inline) -> Iterator[Lock | None]:
    """Hold ``name`` for the block: yields None when taken, or the other holder's row (the block should then
    do nothing). Released at the end either way it ends. The take and the release go through ``write`` (the
    booth's writer in the REST service)."""
    lock, taken = write(lambda: lock_take(name, seconds=seconds))
    if not taken:
        yield lock
        return
    try:
        yield None
    finally:
        write(lambda: lock_release(lock))
