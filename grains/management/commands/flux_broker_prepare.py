"""Prepare the Celery broker before the instance's processes start (used by `flux start`)."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from grains.broker import broker_prepare


class Command(BaseCommand):
    help = "Declare the Celery queues and set up the embedded broker file."

    def handle(self, *args, **opts) -> None:
        broker_prepare()
