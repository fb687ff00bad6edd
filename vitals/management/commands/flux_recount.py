"""manage.py flux_recount: set the health gauges to the exact counts of their tables."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from vitals.services import gauges_recount


class Command(BaseCommand):
    help = "Recount grains by status and tier and conduits by kind into the health gauges (repairs drift)."

    def handle(self, *args: object, **opts: object) -> None:
        counts = gauges_recount()
        self.stdout.write(f"grains {counts['grains']}, conduits {counts['conduits']}")
