"""Reads of the epistemic layer: supersession chains and typed relations."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from graph.models import RELATION_KINDS, Conduit
from grains.errors import InvalidInput
from grains.models import Grain, Tombstone

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


def relation_list(*, kind: str | None = None, grain_id: int | None = None, limit: int = 50,
                  offset: int = 0) -> list[dict]:
    """Typed relations, newest first, optionally of one kind or touching one grain."""
    if kind is not None and kind not in RELATION_KINDS:
        raise InvalidInput(f"'kind' {kind!r} is not one of {', '.join(RELATION_KINDS)}", details={"field": "kind"})
    rows = Conduit.objects.filter(kind__in=[kind] if kind else RELATION_KINDS)
    if grain_id is not None:
        rows = rows.filter(Q(source_id=grain_id) | Q(target_id=grain_id))
    rows = rows.select_related("source", "target").order_by("-id")[offset: offset + limit]
    return [
        {"id": c.pk, "kind": c.kind, "asserted_by": c.asserted_by, "note": c.note, "weight": round(c.weight, 4),
         "created_at": c.created_at,
         "source": {"id": c.source_id, "content": c.source.content, "status": c.source.status,
                    "confidence": round(c.source.confidence, 4)},
         "target": {"id": c.target_id, "content": c.target.content, "status": c.target.status,
                    "confidence": round(c.target.confidence, 4)}}
        for c in rows
    ]
