"""Reads of the epistemic layer: typed relations."""
from __future__ import annotations

from django.db.models import Q

from core.errors import InvalidInput
from graph.models import RELATION_KINDS, Conduit


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
