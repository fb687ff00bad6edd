"""manage.py flux_recount: set the health gauges to the exact counts of their tables."""
from __future__ import annotations

from core.commands import FluxCommand
from vitals.services import gauges_recount


class Command(FluxCommand):
    help = "Recount grains by status and tier and conduits by kind into the health gauges (repairs drift)."

    def handle(self, *args: object, **opts: object) -> None:
        counts = gauges_recount()
        self.stdout.write(f"grains {counts['grains']}, conduits {counts['conduits']}")
