"""The embedded Celery broker (kombu's SQLAlchemy transport on a SQLite file): preparation and cleanup."""
from __future__ import annotations

import os
import sqlite3
import time

from celery import current_app as app  # the project's app (fluxsite.celery), made current when Django starts
from django.conf import settings


def _broker_file() -> str | None:
    url = settings.CELERY_BROKER_URL
    return url.removeprefix("sqla+sqlite:///") if url.startswith("sqla+sqlite:///") else None


def broker_prepare() -> str | None:
    """Declare the queues once before any process sends (two first senders can collide on a fresh
    file and leave one unable to send), and switch the broker file to WAL. A broker file that is not a sound
    SQLite database is moved aside (queued maintenance tasks are only a schedule's next runs) and made anew;
    returns a warning saying so."""
    warning = None
    path = _broker_file()
    if path and os.path.exists(path) and not _sound(path):
        aside = f"{path}.corrupt-{int(time.time())}"
        os.replace(path, aside)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.replace(path + suffix, aside + suffix)
        warning = f"the task broker file {path} was damaged: moved to {aside} and made anew"
    with app.connection_for_write() as conn:
        for queue in app.amqp.queues.values():
            queue(conn.default_channel).declare()
    if path:
        with sqlite3.connect(path, timeout=30) as db:
            db.execute("PRAGMA journal_mode=WAL")
    return warning


def _sound(path: str) -> bool:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as db:
            return db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError:
        return False


def broker_cleanup() -> int:
    """Delete consumed messages, which the transport leaves behind; returns how many."""
    path = _broker_file()
    if not path:
        return 0
    with sqlite3.connect(path, timeout=30) as db:
        return db.execute("DELETE FROM kombu_message WHERE visible = 0").rowcount
