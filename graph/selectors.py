"""Reads of the graph: the bridge from rows to the pure algorithms' input."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from django.db import connection

from graph.algorithms.decay import DecayPolicy, recency_factor
from graph.algorithms.propagation import Edge, RankInput
from graph.models import Trace, TraceItem
from grains.errors import NotFound
from grains.models import Caller, Grain, Status
from grains.validate import require_id

# Statuses that take part in propagation (quarantined only when asked for).
RETRIEVABLE = (Status.ACTIVE, Status.DORMANT)
CHUNK = 900


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def _epoch(column: str) -> str:
    """SQL for a timestamp column as epoch seconds, so hot paths never build datetimes."""
    if connection.vendor == "postgresql":
        return f"extract(epoch from {column})"
    return f"((julianday({column}) - 2440587.5) * 86400.0)"


def _marks(values: Sequence[object]) -> str:
    return ",".join(["%s"] * len(values))


def conduit_neighbours(
    ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy, now: datetime
) -> dict[int, list[Edge]]:
    """Traversable conduits out of ``ids`` with their decayed weights.

    Undirected conduits are traversed both ways, directed ones source -> target;
    conduits leading to a grain whose status is not in ``statuses`` are left out.
    One query per 900 ids, each half served by an index on its end.
    """
    out: dict[int, list[Edge]] = defaultdict(list)
    now_ts = now.timestamp()
    head = f"SELECT c.id, c.weight, {_epoch('c.created_at')}, {_epoch('c.last_decayed_at')}, g.status, "
    for chunk in _chunks(list(ids)):
        # CROSS JOIN keeps SQLite from driving the join from the status index (a scan of every grain).
        sql = (
            f"{head} c.source_id, c.target_id FROM graph_conduit c CROSS JOIN grains_grain g "
            f"WHERE g.id = c.target_id AND c.source_id IN ({_marks(chunk)}) AND g.status IN ({_marks(statuses)}) "
            f"UNION ALL {head} c.target_id, c.source_id FROM graph_conduit c CROSS JOIN grains_grain g "
            f"WHERE g.id = c.source_id AND c.target_id IN ({_marks(chunk)}) AND c.directed = %s "
            f"AND g.status IN ({_marks(statuses)})"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*chunk, *statuses, *chunk, False, *statuses])
            for cid, weight, created, decayed_at, status, here, there in cursor.fetchall():
                w = policy.conduit_weight(weight, float(created), float(decayed_at), now_ts)
                out[here].append(Edge(there, w, cid, status))
    return out


def grain_rank_inputs(
    ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy, now: datetime,
    recency_half_life: float, recency_floor: float,
) -> tuple[dict[int, RankInput], dict[int, str]]:
    """Decayed weight, confidence and recency of the retrievable grains among ``ids``, and their statuses."""
    inputs: dict[int, RankInput] = {}
    status: dict[int, str] = {}
    now_ts = now.timestamp()
    for chunk in _chunks(list(ids)):
        sql = (
            f"SELECT id, status, tier, weight, confidence, {_epoch('last_decayed_at')}, {_epoch('last_accessed_at')} "
            f"FROM grains_grain WHERE id IN ({_marks(chunk)}) AND status IN ({_marks(statuses)})"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*chunk, *statuses])
            for gid, st, tier, weight, confidence, decayed_at, accessed_at in cursor.fetchall():
                inputs[gid] = RankInput(
                    weight=policy.grain_weight(weight, tier, float(decayed_at), now_ts),
                    confidence=confidence,
                    recency=recency_factor(max(0.0, now_ts - float(accessed_at)), half_life_seconds=recency_half_life,
                                           floor=recency_floor),
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
