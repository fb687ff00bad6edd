"""Prepare the Celery broker before the instance's processes start (used by `flux start`)."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError
from kombu.exceptions import OperationalError

from core.broker import broker_prepare
from core.commands import FluxCommand
from core.env import masked_url


class Command(FluxCommand):
    help = "Declare the Celery queues and set up the embedded broker file."

    def handle(self, *args: object, **opts: object) -> None:
        try:
            warning = broker_prepare()
        except OperationalError as exc:
            if not settings.REDIS_URL:
                raise
            raise CommandError(f"cannot reach Redis at {masked_url(settings.REDIS_URL)}: {exc}; check that it runs "
                               "and REDIS_URL (host, port, password)") from None
        if warning:
            self.stdout.write(f"warning: {warning}")
