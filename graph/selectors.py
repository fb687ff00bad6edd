"""Reads of the graph: the bridge from rows to the pure algorithms' input."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from django.db.models import Q

from graph.algorithms.decay import DecayPolicy, recency_factor
from graph.algorithms.propagation import Edge, RankInput
from graph.models import Conduit, TraceItem
from grains.models import Caller, Grain, Status

# Statuses that take part in propagation (quarantined only when asked for).
RETRIEVABLE = (Status.ACTIVE, Status.DORMANT)
CHUNK = 900


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def conduit_neighbours(
    ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy, now: datetime
) -> dict[int, list[Edge]]:
    """Traversable conduits out of ``ids`` with their decayed weights.

    Undirected conduits are traversed both ways, directed ones source -> target;
    conduits leading to a grain whose status is not in ``statuses`` are left out.
    """
    wanted = list(ids)
    out: dict[int, list[Edge]] = defaultdict(list)
    fields = ("id", "source_id", "target_id", "directed", "weight", "created_at", "last_decayed_at",
              "source__status", "target__status")
    for chunk in _chunks(wanted):
        rows = Conduit.objects.filter(Q(source_id__in=chunk) | Q(target_id__in=chunk, directed=False)).values_list(*fields)
        members = set(chunk)
        for cid, src, dst, directed, weight, created, decayed_at, src_status, dst_status in rows:
            w = policy.conduit_weight(weight, created, decayed_at, now)
            if src in members and dst_status in statuses:
                out[src].append(Edge(dst, w, cid, dst_status))
            if not directed and dst in members and src_status in statuses:
                out[dst].append(Edge(src, w, cid, src_status))
    return out


def grain_rank_inputs(
    ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy, now: datetime,
    recency_half_life: float, recency_floor: float,
) -> tuple[dict[int, RankInput], dict[int, str]]:
    """Decayed weight, confidence and recency of the retrievable grains among ``ids``, and their statuses."""
    inputs: dict[int, RankInput] = {}
    status: dict[int, str] = {}
    fields = ("id", "status", "tier", "weight", "confidence", "last_decayed_at", "last_accessed_at")
    for chunk in _chunks(list(ids)):
        for gid, st, tier, weight, confidence, decayed_at, accessed_at in Grain.objects.filter(
            pk__in=chunk, status__in=statuses
        ).values_list(*fields):
            age = max(0.0, (now - accessed_at).total_seconds())
            inputs[gid] = RankInput(
                weight=policy.grain_weight(weight, tier, decayed_at, now),
                confidence=confidence,
                recency=recency_factor(age, half_life_seconds=recency_half_life, floor=recency_floor),
            )
            status[gid] = st
    return inputs, status


def grains_by_id(ids: Iterable[int]) -> Mapping[int, Grain]:
    return Grain.objects.in_bulk(list(ids))


def feedback_owed(
    caller: Caller, *, now: datetime, grace_seconds: float, max_block_seconds: float, limit: int = 50
) -> list[tuple[int, int]]:
    """(trace id, grain id) pairs the caller retrieved between ``max_block`` and ``grace`` ago and never rated."""
    return list(
        TraceItem.objects.filter(
            trace__caller=caller,
            trace__created_at__lte=now - timedelta(seconds=grace_seconds),
            trace__created_at__gt=now - timedelta(seconds=max_block_seconds),
            feedback__isnull=True,
        ).order_by("trace_id", "rank").values_list("trace_id", "grain_id")[:limit]
    )


def trace_detail(trace_id: int) -> dict:
    """A trace with every returned grain, its rank, score, path and feedback."""
    from graph.models import Trace
    from grains.errors import NotFound
    from grains.validate import require_id

    trace = Trace.objects.select_related("caller").filter(pk=require_id(trace_id, "trace_id")).first()
    if trace is None:
        raise NotFound(f"trace {trace_id} does not exist", details={"trace_id": trace_id})
    items = trace.items.select_related("grain", "feedback").order_by("rank")
    return {
        "id": trace.pk, "query": trace.query, "caller": str(trace.caller), "limit": trace.limit,
        "entry_count": trace.entry_count, "activated_count": trace.activated_count, "created_at": trace.created_at,
        "items": [
            {"grain_id": i.grain_id, "content": i.grain.content, "rank": i.rank, "score": round(i.score, 6),
             "signal": round(i.signal, 6), "hops": i.hops, "path": i.path, "conduits": i.conduits,
             "useful": getattr(getattr(i, "feedback", None), "useful", None)}
            for i in items
        ],
    }
