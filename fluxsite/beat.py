"""Celery beat once per instance, however many run: every worker of every machine may embed a beat (`flux start`
starts one with its first worker), and only the one holding the ``beat`` lease in the database sends the
periodic tasks. It renews the lease at each tick; when it stops or dies, another takes over once the lease has
run out (BEAT_LEASE_SECONDS), so a beat task is sent by one beat per interval, never by two."""
from __future__ import annotations

import logging

from celery.beat import Scheduler
from django.db import DatabaseError, close_old_connections

from core.conf import flux_setting as S
from grains.locks import lock_hold

LEASE = "beat"
log = logging.getLogger("flux.beat")


class SingleBeat(Scheduler):
    leading = False

    def tick(self, *args: object, **kwargs: object) -> float:
        pause = S("BEAT_LEASE_SECONDS") / 4  # the lease renewed several times before it runs out
        if not self._lead():
            return pause
        return min(super().tick(*args, **kwargs), pause)

    def _lead(self) -> bool:
        try:
            close_old_connections()
            leading = lock_hold(LEASE, seconds=S("BEAT_LEASE_SECONDS"))
        except DatabaseError as exc:  # the database is away: send nothing until it is back
            log.warning("beat cannot reach the database (%s); no periodic task is sent meanwhile", exc)
            leading = False
        if leading != self.leading:
            log.info("this beat %s", "now sends the periodic tasks" if leading else
                     "stands by: another beat of the instance sends the periodic tasks")
            self.leading = leading
        return leading
