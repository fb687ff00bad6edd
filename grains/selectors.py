"""Reads of grains for listings and detail views."""
from __future__ import annotations

from grains.errors import InvalidInput
from grains.models import Grain, Status

STATUSES = [s.value for s in Status]
LIST_FIELDS = ("id", "content", "provenance", "status", "tier", "confidence", "weight", "level", "retrievals",
               "useful_count", "not_useful_count", "context", "occurred_at", "created_at", "last_accessed_at")


def grain_list(*, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
    """Grains, newest first, optionally of one status."""
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"'status' {status!r} is not one of {', '.join(STATUSES)}", details={"field": "status"})
    for name, value, top in (("limit", limit, 1000), ("offset", offset, None)):
        low = 1 if name == "limit" else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (top and value > top):
            bound = f"from {low} to {top}" if top else f"of at least {low}"
            raise InvalidInput(f"'{name}' must be an integer {bound}, got {value!r}", details={"field": name})
    rows = Grain.objects.order_by("-id")
    if status:
        rows = rows.filter(status=status)
    return list(rows.values(*LIST_FIELDS)[offset : offset + limit])
