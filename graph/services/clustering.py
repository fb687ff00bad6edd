"""Re-clustering the active graph with Louvain, keeping cluster identities across runs."""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.db import transaction
from django.utils import timezone

from core.booth import inline
from core.conf import flux_setting as S
from grains.activity import activity_record
from grains.locks import exclusive
from grains.models import ActivityEvent, Grain, Status
from grains.services import grains_cluster_clear, grains_cluster_set
from graph.algorithms.clustering import cluster_shape, inherit_identity, internal_edges, label_terms, louvain
from graph.algorithms.text import terms
from graph.models import Cluster
from graph.policy import decay_policy
from graph.selectors import active_graph, grain_texts

LOCK = "cluster_rebuild"
REBUILT = "graph.clusters_rebuilt"
T = TypeVar("T")
WRITE_CHUNK = 2000


@dataclass(frozen=True)
class ClusterResult:
    clusters: int
    clustered: int
    created: int
    kept: int
    removed: int
    seconds: float
    skipped: bool = False


def _labels(communities: list[set[int]], texts: dict[int, tuple[str, int | None]]) -> list[list[str]]:
    words = {gid: terms(content, max_terms=64) for gid, (content, _) in texts.items()}
    doc_freq = Counter(t for ws in words.values() for t in ws)
    count = S("CLUSTER_LABEL_TERMS")
    return [label_terms([words[g] for g in members], doc_freq, len(words), count=count) for members in communities]


def cluster_rebuild(*, now: datetime | None = None, write: Callable[[Callable[[], T]], T] = inline) -> ClusterResult:
    """Louvain over the weighted active graph; clusters stored with members, size, density, hubs, label.

    A community of at least CLUSTER_MIN_SIZE grains continues the old cluster
    it overlaps by CLUSTER_MIN_OVERLAP, else becomes a new one; clusters left
    with no community are removed (their grains' cluster is cleared). The
    graph is read without a transaction and written in short ones, so the
    REST service keeps writing meanwhile; grains stored during a run join a
    cluster at the next run. One run at a time (a lock shared by the instance's processes); a second
    concurrent call returns ``skipped``. Deterministic for a given graph. The writes go through ``write``
    (the booth's writer when the REST service re-clusters).
    Cost: O(grains + conduits) in Python plus Louvain in C (seconds at 100,000 grains).
    """
    with exclusive(LOCK, seconds=3600, write=write) as other:
        if other is not None:
            return ClusterResult(0, 0, 0, 0, 0, 0.0, skipped=True)
        return _rebuild(now or timezone.now(), write)


def cluster_rebuild_if_grown(*, grains: int, fraction: float, now: datetime | None = None,
                             write: Callable[[Callable[[], T]], T] = inline) -> ClusterResult | None:
    """Re-cluster when at least ``grains`` grains, or ``fraction`` of the graph clustered last time, were
    stored since the last clustering (or there was none and enough grains for a cluster exist); None when not.
    Cost: one indexed count."""
    last = ActivityEvent.objects.filter(kind=REBUILT).order_by("-id").values_list("payload", flat=True).first()
    active = Grain.objects.filter(status=Status.ACTIVE)
    if last is None or "last_grain" not in last:
        grown = active.count() >= S("CLUSTER_MIN_SIZE")
    else:
        new = active.filter(pk__gt=last["last_grain"]).count()
        grown = new > 0 and (new >= grains or new >= fraction * last["grains"])
    return cluster_rebuild(now=now, write=write) if grown else None


def _rebuild(now: datetime, write: Callable[[Callable[[], T]], T]) -> ClusterResult:
    started = time.monotonic()
    nodes, edges = active_graph(policy=decay_policy(), now=now)
    found = louvain(nodes, edges, resolution=S("CLUSTER_RESOLUTION"), seed=S("CLUSTER_SEED"))
    communities = [c for c in found if len(c) >= S("CLUSTER_MIN_SIZE")]
    texts = grain_texts(nodes)
    previous = {gid: cluster for gid, (_, cluster) in texts.items() if cluster is not None}
    identities = inherit_identity(communities, previous, min_overlap=S("CLUSTER_MIN_OVERLAP"))
    shapes = [cluster_shape(c, e, hubs=S("CLUSTER_HUBS"))
              for c, e in zip(communities, internal_edges(communities, edges), strict=False)]
    labels = _labels(communities, texts)
    clusters = write(lambda: _save_clusters(communities, identities, shapes, labels, now))
    target = {g: c.pk for members, c in zip(communities, clusters, strict=False) for g in members}
    changed = [(target.get(g), g) for g in nodes if target.get(g) != previous.get(g)]
    for start in range(0, len(changed), WRITE_CHUNK):
        write(lambda start=start: _assign(changed[start: start + WRITE_CHUNK]))
    kept_ids = {c.pk for c in clusters}
    removed = write(lambda: _remove_others(kept_ids))
    result = ClusterResult(
        clusters=len(clusters), clustered=len(target), created=sum(i is None for i in identities),
        kept=sum(i is not None for i in identities), removed=removed, seconds=round(time.monotonic() - started, 3))
    write(lambda: activity_record(REBUILT, {**result.__dict__, "grains": len(nodes), "conduits": len(edges),
                                                    "last_grain": max(nodes, default=0)},
                                  now=now))
    return result


def _save_clusters(communities: list[set[int]], identities: list[int | None], shapes: list, labels: list[list[str]],
                   now: datetime) -> list[Cluster]:
    with transaction.atomic():
        existing = Cluster.objects.in_bulk([i for i in identities if i is not None])
        clusters = []
        for members, old_id, shape, label in zip(communities, identities, shapes, labels, strict=False):
            cluster = existing.get(old_id) or Cluster(created_at=now)
            cluster.label, cluster.terms, cluster.size = " / ".join(label), label, len(members)
            cluster.density, cluster.internal_weight = round(shape.density, 6), round(shape.internal_weight, 6)
            cluster.hubs, cluster.updated_at = list(shape.hubs), now
            cluster.save()
            clusters.append(cluster)
        return clusters


def _assign(changed: list[tuple[int | None, int]]) -> None:
    with transaction.atomic():
        for cluster_id, ids in _by_cluster(changed).items():
            grains_cluster_set(ids, cluster_id)


def _remove_others(kept_ids: set[int]) -> int:
    """Delete the clusters no community continues, their grains taken out of them first."""
    with transaction.atomic():
        gone = list(Cluster.objects.exclude(pk__in=kept_ids).values_list("pk", flat=True))
        grains_cluster_clear(gone)
        removed, _ = Cluster.objects.filter(pk__in=gone).delete()
        return removed


def _by_cluster(pairs: list[tuple[int | None, int]]) -> dict[int | None, list[int]]:
    out: dict[int | None, list[int]] = {}
    for cluster_id, gid in pairs:
        out.setdefault(cluster_id, []).append(gid)
    return out
