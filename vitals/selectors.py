"""Health of the memory: counts by status and kind, queue depths."""
from __future__ import annotations

from django.db.models import Count

from graph.models import Conduit, Feedback
from grains.models import Grain, Status


def health_summary(*, write_depth: int) -> dict:
    grains = dict.fromkeys([s.value for s in Status], 0)
    grains.update(dict(Grain.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")))
    conduits = dict(Conduit.objects.values_list("kind").annotate(n=Count("id")).values_list("kind", "n"))
    return {
        "status": "ok",
        "grains": {**grains, "total": sum(grains.values())},
        "conduits": {**conduits, "total": sum(conduits.values())},
        "queues": {"write": write_depth, "feedback_pending": Feedback.objects.filter(applied_at__isnull=True).count()},
    }
