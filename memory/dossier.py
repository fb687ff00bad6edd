"""A grain as a person or an agent asks about it: its detail (conduits, confidence history, traces) and its
dossier (also its typed relations and the dreams it took part in). Reads across the domain apps, for the
REST API, the dashboard, the admin's export and the SDK."""
from __future__ import annotations

from django.db.models import Q

from core.errors import NotFound
from core.validate import require_id
from dreams.models import Dream
from epistemic.selectors import relation_list
from grains.models import ConfidenceEvent, Grain
from grains.selectors import LIST_FIELDS, successors_resolve
from graph.models import Conduit, TraceItem


def grain_detail(grain_id: int, *, traces: int = 20) -> dict:
    """A grain with its conduits, confidence history and latest traces."""
    grain = (Grain.objects.filter(pk=require_id(grain_id, "grain_id"))
             .values(*LIST_FIELDS, "content_hash", "cues").first())
    if grain is None:
        raise NotFound(f"grain {grain_id} does not exist", details={"grain_id": grain_id})
    gid = grain["id"]
    if grain["superseded_by"] is not None:
        grain["current_successor"] = successors_resolve([grain["superseded_by"]])[grain["superseded_by"]]
    conduits = Conduit.objects.filter(Q(source_id=gid) | Q(target_id=gid)).order_by("-weight")
    grain["conduits"] = [
        {"id": c.pk, "kind": c.kind, "weight": round(c.weight, 4), "directed": c.directed,
         "asserted_by": c.asserted_by, "note": c.note,
         "other_grain_id": c.target_id if c.source_id == gid else c.source_id,
         "direction": "out" if c.source_id == gid else "in", "uses": c.uses, "useful_uses": c.useful_uses,
         "created_at": c.created_at}
        for c in conduits[:200]
    ]
    grain["confidence_history"] = [
        {"confidence": e.confidence, "reason": e.reason, "created_at": e.created_at,
         "related_grain_id": e.related_grain_id, "caller_name": str(e.caller) if e.caller else None}
        for e in ConfidenceEvent.objects.filter(grain_id=gid).select_related("caller").order_by("created_at", "pk")]
    items = TraceItem.objects.filter(grain_id=gid).select_related("trace", "feedback").order_by("-trace_id")
    grain["traces"] = [
        {"trace_id": i.trace_id, "query": i.trace.query, "rank": i.rank, "score": round(i.score, 6), "hops": i.hops,
         "created_at": i.trace.created_at, "useful": getattr(getattr(i, "feedback", None), "useful", None)}
        for i in items[:traces]
    ]
    return grain


def grain_dossier(grain_id: int) -> dict:
    """Everything about one grain, for export: its detail (conduits, confidence history, traces), its typed
    relations with both grains, and the dreams it took part in."""
    dossier = grain_detail(grain_id, traces=200)
    dossier["relations"] = relation_list(grain_id=grain_id, limit=1000)
    # Dreams are few (a handful per cycle) and SQLite cannot search inside their JSON list of sources.
    dreams = Dream.objects.order_by("-id").values("id", "status", "text", "grain_id", "sources", "created_at")
    dossier["dreams"] = [d for d in dreams if d["grain_id"] == grain_id or grain_id in d["sources"]][:100]
    return dossier
