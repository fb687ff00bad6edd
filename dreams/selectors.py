"""Reads of the dream cycle: the clusters worth dreaming of, with their members; past dreams."""
from __future__ import annotations

import math

from core.errors import InvalidInput
from dreams.candidates import ClusterView, Member
from dreams.models import Dream
from grains.models import Grain, Status
from graph.models import Cluster
from graph.policy import decay_policy
from graph.selectors import conduit_neighbours

DREAM_FIELDS = ("id", "cluster_id", "signature", "sources", "text", "method", "status", "reason",
                "failing_sentence", "score", "grain_id", "created_at")


def cluster_views(*, limit: int, min_size: int, now) -> list[ClusterView]:  # noqa: ANN001 - a datetime
    """The ``limit`` most tightly knit clusters of at least ``min_size``, with their active stored grains
    (abstractions left out) and each member's weighted degree inside its cluster."""
    rows = Cluster.objects.filter(size__gte=min_size).values_list("pk", "density", "internal_weight")
    best = sorted(rows, key=lambda r: (-(r[2] * math.sqrt(max(r[1], 0.0))), r[0]))[:limit]
    members: dict[int, list[tuple]] = {cid: [] for cid, _, _ in best}
    for row in Grain.objects.filter(cluster_id__in=list(members), status=Status.ACTIVE, level=0).values_list(
            "pk", "cluster_id", "content", "content_hash", "last_accessed_at"):
        members[row[1]].append(row)
    cluster_of = {row[0]: row[1] for rows in members.values() for row in rows}
    edges = conduit_neighbours(list(cluster_of), statuses=(Status.ACTIVE,), policy=decay_policy(), now=now)
    views = []
    for cid, density, internal in best:
        view_members = [
            Member(gid, content, chash, sum(e.weight for e in edges.get(gid, ()) if cluster_of.get(e.target) == cid),
                   accessed.timestamp())
            for gid, _, content, chash, accessed in members[cid]
        ]
        views.append(ClusterView(cid, view_members, density, internal))
    return views


def dream_list(*, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
    """Dreams, newest first, optionally only accepted or rejected ones."""
    if status is not None and status not in ("accepted", "rejected"):
        raise InvalidInput(f"'status' {status!r} is not accepted or rejected", details={"field": "status"})
    rows = Dream.objects.order_by("-id")
    if status:
        rows = rows.filter(status=status)
    return list(rows.values(*DREAM_FIELDS)[offset: offset + limit])
