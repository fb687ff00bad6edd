"""Reads of the graph: the bridge from rows to the pure algorithms' input."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from django.db.models import Q

from graph.algorithms.decay import DecayPolicy, recency_factor
from graph.algorithms.propagation import Edge, RankInput
from graph.models import Conduit
from grains.models import Grain, Status

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
