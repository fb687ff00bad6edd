"""Prepare the Celery broker before the instance's processes start (used by `flux start`)."""
from __future__ import annotations

from core.broker import broker_prepare
from core.commands import FluxCommand


class Command(FluxCommand):
    help = "Declare the Celery queues and set up the embedded broker file."

    def handle(self, *args: object, **opts: object) -> None:
        warning = broker_prepare()
        if warning:
            self.stdout.write(f"warning: {warning}")
