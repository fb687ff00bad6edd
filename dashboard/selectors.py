"""What the dashboard reads: the graph by level of detail, search, activity events, vitals timelines.

Nothing here writes: a dashboard search is a plain lexical lookup (no trace, no feedback owed), and opening a
grain's dossier does not touch it.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from django.db import connection
from django.db.models import Count, Q

from core.bulk import marks
from core.conf import flux_setting as S
from core.errors import InvalidInput, NotFound
from dashboard.layout import Disc, cluster_discs, member_positions
from grains.models import ActivityEvent, Grain, Status
from graph.models import Cluster, Conduit, Trace, TraceItem
from graph.search import entry_search
from vitals.models import Snapshot
from vitals.signals import SIGNALS

SHOWN = (Status.ACTIVE, Status.DORMANT, Status.QUARANTINED)  # archived grains are out of sight
UNCLUSTERED = 0  # the pseudo-cluster of grains stored since the last clustering
LABEL_CHARS = 80
EVENT_PAGE_MAX = 1000


def _cluster_sizes() -> dict[int, int]:
    rows = Grain.objects.filter(status__in=SHOWN).values("cluster_id").annotate(n=Count("id"))
    return {r["cluster_id"] or UNCLUSTERED: r["n"] for r in rows}


def _discs(sizes: dict[int, int]) -> dict[int, Disc]:
    ids = sorted(sizes)
    return dict(zip(ids, cluster_discs([sizes[i] for i in ids]), strict=False))


def _labels(ids: Iterable[int]) -> dict[int, str]:
    labels = dict(Cluster.objects.filter(pk__in=[i for i in ids if i]).values_list("id", "label"))
    labels[UNCLUSTERED] = "not yet clustered"
    return labels


def _grain_nodes(rows: Sequence[dict], disc: Disc) -> list[dict]:
    places = member_positions(disc, len(rows))
    return [{"key": f"g{r['id']}", "role": "grain", "id": r["id"], "label": r["content"][:LABEL_CHARS],
             "status": r["status"], "weight": round(r["weight"], 4), "cluster": r["cluster_id"] or UNCLUSTERED,
             "level": r["level"], "x": round(x, 3), "y": round(y, 3)} for r, (x, y) in zip(rows, places, strict=False)]


def _grain_rows(queryset, limit: int) -> list[dict]:  # noqa: ANN001 - a Grain queryset
    return list(queryset.order_by("-weight", "id").values("id", "content", "status", "weight", "cluster_id",
                                                           "level")[:limit])


def _edges(queryset, limit: int) -> list[dict]:  # noqa: ANN001 - a Conduit queryset
    rows = queryset.order_by("-weight").values_list("id", "source_id", "target_id", "kind", "weight")[:limit]
    return [{"key": f"e{i}", "source": f"g{s}", "target": f"g{t}", "kind": k, "weight": round(w, 4)}
            for i, s, t, k, w in rows]


def _cluster_summaries(sizes: dict[int, int], discs: dict[int, Disc]) -> list[dict]:
    labels = _labels(sizes)
    return [{"key": f"c{cid}", "role": "cluster", "id": cid, "label": labels.get(cid, f"cluster {cid}"),
             "members": n, "x": round(discs[cid].x, 3), "y": round(discs[cid].y, 3),
             "radius": round(discs[cid].radius, 3)} for cid, n in sorted(sizes.items(), key=lambda kv: -kv[1])]


def graph_overview() -> dict:
    """The graph for a first render. Up to DASHBOARD_FULL_GRAPH_MAX grains: every grain and the strongest
    DASHBOARD_MAX_EDGES conduits. Above it: one node per cluster with the conduits between clusters summed,
    and members fetched per cluster (``cluster_graph``) as the viewer zooms in."""
    sizes = _cluster_sizes()
    discs = _discs(sizes)
    total = sum(sizes.values())
    clusters = _cluster_summaries(sizes, discs)
    base = {"grains": total, "clusters": clusters, "full_graph_max": S("DASHBOARD_FULL_GRAPH_MAX")}
    if total <= S("DASHBOARD_FULL_GRAPH_MAX"):
        by_cluster: dict[int, list[dict]] = defaultdict(list)
        for row in _grain_rows(Grain.objects.filter(status__in=SHOWN), total):
            by_cluster[row["cluster_id"] or UNCLUSTERED].append(row)
        nodes = [n for cid, rows in by_cluster.items() for n in _grain_nodes(rows, discs[cid])]
        edges = _edges(Conduit.objects.filter(source__status__in=SHOWN, target__status__in=SHOWN),
                       S("DASHBOARD_MAX_EDGES"))
        return {**base, "mode": "grains", "nodes": nodes, "edges": edges}
    return {**base, "mode": "clusters", "nodes": clusters, "edges": _cluster_edges()}


def _cluster_edges() -> list[dict]:
    """Conduits between clusters, summed: one edge per pair of clusters with the count and mean weight."""
    sql = ("SELECT COALESCE(s.cluster_id, 0), COALESCE(t.cluster_id, 0), COUNT(*), AVG(c.weight) "
           "FROM graph_conduit c JOIN grains_grain s ON s.id = c.source_id JOIN grains_grain t ON t.id = c.target_id "
           "WHERE COALESCE(s.cluster_id, 0) <> COALESCE(t.cluster_id, 0) "
           f"AND s.status IN ({marks(SHOWN)}) AND t.status IN ({marks(SHOWN)}) "
           "GROUP BY 1, 2")
    pairs: Counter = Counter()
    weights: dict[tuple[int, int], float] = defaultdict(float)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*SHOWN, *SHOWN])
        for a, b, n, mean in cursor.fetchall():
            pair = (min(a, b), max(a, b))
            pairs[pair] += n
            weights[pair] += n * mean
    best = pairs.most_common(S("DASHBOARD_MAX_EDGES"))
    return [{"key": f"k{a}-{b}", "source": f"c{a}", "target": f"c{b}", "kind": "between", "count": n,
             "weight": round(weights[(a, b)] / n, 4)} for (a, b), n in best]


def cluster_overview() -> dict:
    """The clusters alone (the globe): id, label, members and place."""
    sizes = _cluster_sizes()
    return {"grains": sum(sizes.values()), "clusters": _cluster_summaries(sizes, _discs(sizes))}


def cluster_graph(cluster_id: int) -> dict:
    """One cluster's members (the DASHBOARD_FULL_GRAPH_MAX heaviest), placed in its disc, and the conduits
    among them. Cluster 0 holds the grains stored since the last clustering."""
    sizes = _cluster_sizes()
    if cluster_id not in sizes:
        raise NotFound(f"cluster {cluster_id} has no grains to show; GET /api/graph lists the clusters",
                       details={"cluster_id": cluster_id})
    disc = _discs(sizes)[cluster_id]
    cluster = None if cluster_id == UNCLUSTERED else cluster_id
    limit = S("DASHBOARD_FULL_GRAPH_MAX")
    rows = _grain_rows(Grain.objects.filter(status__in=SHOWN, cluster_id=cluster), limit)
    edges = Conduit.objects.filter(source__cluster_id=cluster, target__cluster_id=cluster,
                                   source__status__in=SHOWN, target__status__in=SHOWN)
    return {"cluster": cluster_id, "members": sizes[cluster_id], "shown": len(rows),
            "nodes": _grain_nodes(rows, disc), "edges": _edges(edges, S("DASHBOARD_MAX_EDGES"))}


def grain_search(query: str, *, limit: int = 20) -> list[dict]:
    """Grains whose words match ``query`` (the retrieval's lexical entry search, nothing recorded)."""
    query = (query or "").strip()
    if not query:
        raise InvalidInput("'q' is empty: give words to search the grains for", details={"field": "q"})
    if len(query) > S("MAX_QUERY_CHARS"):
        raise InvalidInput(f"'q' is longer than MAX_QUERY_CHARS ({S('MAX_QUERY_CHARS')} characters)",
                           details={"field": "q"})
    hits = entry_search().search(query, limit=limit, statuses=SHOWN, max_terms=S("QUERY_MAX_TERMS"))
    rows = Grain.objects.in_bulk([gid for gid, _ in hits])
    return [{"id": gid, "key": f"g{gid}", "content": rows[gid].content, "status": rows[gid].status,
             "cluster": rows[gid].cluster_id or UNCLUSTERED, "score": round(score, 4)}
            for gid, score in hits if gid in rows]


# --- the activity log, as the dashboard shows it -------------------------------------------------------------

def last_event_id() -> int:
    return ActivityEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def events_after(after: int, *, late: Sequence[tuple[int, int]] = (), limit: int = EVENT_PAGE_MAX) -> list[dict]:
    """Events with an id above ``after`` or within one of the ``late`` (low, high) ranges, oldest first, each
    with what a page needs to draw it."""
    wanted = Q(id__gt=after)
    for low, high in late:
        wanted |= Q(id__range=(low, high))
    rows = list(ActivityEvent.objects.filter(wanted).order_by("id")[:min(limit, EVENT_PAGE_MAX)])
    return events_describe(rows)


def events_before(before: int | None, *, limit: int = EVENT_PAGE_MAX) -> list[dict]:
    """The ``limit`` events before ``before`` (the latest when None), oldest first."""
    rows = ActivityEvent.objects.order_by("-id")
    if before is not None:
        rows = rows.filter(id__lt=before)
    return events_describe(list(rows[:min(limit, EVENT_PAGE_MAX)])[::-1])


def events_describe(rows: Sequence[ActivityEvent]) -> list[dict]:
    """Events as JSON; a stored grain comes with its content and place, a retrieval with its query and the
    paths its signal took (entry grains have hops 0)."""
    grain_ids = {e.payload.get("grain_id") for e in rows if e.kind == "grains.grain_stored"}
    trace_ids = {e.payload.get("trace_id") for e in rows if e.kind == "graph.signal_propagated"}
    grains = {g["id"]: g for g in Grain.objects.filter(pk__in=[g for g in grain_ids if g]).values(
        "id", "content", "status", "weight", "cluster_id", "level")}
    queries = dict(Trace.objects.filter(pk__in=[t for t in trace_ids if t]).values_list("id", "query"))
    paths: dict[int, list[dict]] = defaultdict(list)
    for item in TraceItem.objects.filter(trace_id__in=list(queries)).order_by("trace_id", "rank").values(
            "trace_id", "grain_id", "rank", "hops", "path", "conduits"):
        paths[item.pop("trace_id")].append(item)
    out = []
    for e in rows:
        event = {"id": e.pk, "kind": e.kind, "at": e.created_at.isoformat(), "payload": e.payload}
        grain = grains.get(e.payload.get("grain_id")) if e.kind == "grains.grain_stored" else None
        if grain:
            event["grain"] = {"id": grain["id"], "key": f"g{grain['id']}", "label": grain["content"][:LABEL_CHARS],
                              "status": grain["status"], "weight": round(grain["weight"], 4),
                              "cluster": grain["cluster_id"] or UNCLUSTERED, "level": grain["level"]}
        if e.kind == "graph.signal_propagated" and e.payload.get("trace_id") in queries:
            trace_id = e.payload["trace_id"]
            event["trace"] = {"id": trace_id, "query": queries[trace_id], "items": paths.get(trace_id, [])}
        out.append(event)
    return out


def live_snapshot(*, recent: int = 50) -> dict:
    """What a websocket sends first: counts, the last event id, the most recent events."""
    by_status = dict(Grain.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    return {"last_event_id": last_event_id(), "grains": by_status, "conduits": Conduit.objects.count(),
            "clusters": Cluster.objects.count(), "recent": events_before(None, limit=recent)}


# --- vitals -------------------------------------------------------------------------------------------------

WARNING_KINDS = ("vitals.warning_raised", "vitals.warning_cleared")


def vitals_timeline(*, limit: int = 500) -> dict:
    """Every signal with its healthy band and its value in the last ``limit`` snapshots (oldest first), and
    the warnings raised and cleared in that time."""
    snapshots = list(Snapshot.objects.order_by("-created_at").values_list("created_at", "status", "signals")[:limit])
    snapshots.reverse()
    since = snapshots[0][0] if snapshots else None
    warnings = ActivityEvent.objects.filter(kind__in=WARNING_KINDS).order_by("id")
    if since is not None:
        warnings = warnings.filter(created_at__gte=since)
    return {
        "snapshots": [{"at": at.isoformat(), "status": status} for at, status, _ in snapshots],
        "signals": [{"name": s.name, "measures": s.measures, "low": s.low, "high": s.high, "severity": s.severity,
                     "values": [values.get(s.name, {}).get("value") for _, _, values in snapshots],
                     "states": [values.get(s.name, {}).get("state", "no_data") for _, _, values in snapshots]}
                    for s in SIGNALS],
        "warnings": [{"id": w.pk, "at": w.created_at.isoformat(), "signal": w.payload.get("signal"),
                      "change": "raised" if w.kind.endswith("raised") else "cleared", "value": w.payload.get("value")}
                     for w in warnings[:1000]],
    }
