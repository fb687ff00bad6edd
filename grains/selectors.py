"""Reads of grains: listings, callers, supersession chains."""
from __future__ import annotations

from collections.abc import Iterable

from core.errors import InvalidInput
from core.validate import MAX_OFFSET
from grains.models import Caller, Grain, Tombstone, require_status

LIST_FIELDS = ("id", "content", "provenance", "status", "tier", "confidence", "weight", "level", "retrievals",
               "useful_count", "not_useful_count", "context", "occurred_at", "created_at", "last_accessed_at",
               "superseded_by", "cluster_id")


def grain_list(*, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
    """Grains, newest first, optionally of one status."""
    if status is not None:
        require_status(status)
    for name, value, low, top in (("limit", limit, 1, 1000), ("offset", offset, 0, MAX_OFFSET)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
            raise InvalidInput(f"'{name}' must be an integer from {low} to {top}, got {value!r}",
                               details={"field": name})
    rows = Grain.objects.order_by("-id")
    if status:
        rows = rows.filter(status=status)
    return list(rows.values(*LIST_FIELDS)[offset : offset + limit])


def caller_list() -> list[dict]:
    """Every caller with its counts and feedback compliance (rated / returned)."""
    rows = Caller.objects.order_by("client", "role").values("client", "role", "stored", "retrievals", "returned",
                                                            "rated", "created_at")
    return [{**r, "feedback_compliance": round(r["rated"] / r["returned"], 4) if r["returned"] else None}
            for r in rows]


MAX_CHAIN = 32


def successors_resolve(ids: Iterable[int]) -> dict[int, int | None]:
    """For each grain id a successor pointer names, the live grain at the end of its chain, or None.

    A chain may pass through tombstones: a forgotten grain's tombstone keeps
    what superseded it. A chain that ends in a forgotten grain with no
    successor, or loops, resolves to None. One or two queries per step.
    """
    final: dict[int, int | None] = {}
    pending = {gid: gid for gid in set(ids)}  # start id -> current link of its chain
    for _ in range(MAX_CHAIN):
        if not pending:
            break
        current = set(pending.values())
        live = dict(Grain.objects.filter(pk__in=current).values_list("pk", "superseded_by"))
        gone = set(current) - set(live)
        forgotten = dict(Tombstone.objects.filter(grain_id__in=gone).values_list("grain_id", "superseded_by"))
        for start, link in list(pending.items()):
            nxt = live[link] if link in live else forgotten.get(link)
            if link in live and nxt is None:
                final[start] = link
                del pending[start]
            elif nxt is None or nxt == start:
                final[start] = None
                del pending[start]
            else:
                pending[start] = nxt
    final.update({start: None for start in pending})
    return final


def superseded_through(grain: Grain) -> set[int]:
    """The grains ``grain`` is superseded by, directly or along its chain of successors (live grains; at most
    MAX_CHAIN steps): none of them may be superseded by it, or the chain would loop. A query a step."""
    found: set[int] = set()
    link = grain.superseded_by
    while link is not None and link not in found and len(found) < MAX_CHAIN:
        found.add(link)
        link = Grain.objects.filter(pk=link).values_list("superseded_by", flat=True).first()
    return found
