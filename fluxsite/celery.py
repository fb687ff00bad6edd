"""The Celery app. Embedded default: kombu's SQLAlchemy transport on its own SQLite file."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")

app = Celery("fluxsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.broker_transport_options = {"connect_args": {"timeout": 30}}
app.autodiscover_tasks()
