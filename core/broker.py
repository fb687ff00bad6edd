"""The embedded Celery broker (kombu's SQLAlchemy transport on a SQLite file): preparation and cleanup."""
from __future__ import annotations

import sqlite3

from celery import current_app as app  # the project's app (fluxsite.celery), made current when Django starts
from django.conf import settings


def _broker_file() -> str | None:
    url = settings.CELERY_BROKER_URL
    return url.removeprefix("sqla+sqlite:///") if url.startswith("sqla+sqlite:///") else None


def broker_prepare() -> None:
    """Declare the queues once before any process sends (two first senders can collide on a fresh
    file and leave one unable to send), and switch the broker file to WAL."""
    with app.connection_for_write() as conn:
        for queue in app.amqp.queues.values():
            queue(conn.default_channel).declare()
    path = _broker_file()
    if path:
        with sqlite3.connect(path, timeout=30) as db:
            db.execute("PRAGMA journal_mode=WAL")


def broker_cleanup() -> int:
    """Delete consumed messages, which the transport leaves behind; returns how many."""
    path = _broker_file()
    if not path:
        return 0
    with sqlite3.connect(path, timeout=30) as db:
        return db.execute("DELETE FROM kombu_message WHERE visible = 0").rowcount
