"""Reads of the graph: the bridge from rows to the pure algorithms' input."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Q

from core.bulk import bulk_fetch, marks
from core.errors import NotFound
from core.validate import require_id
from grains.content import split_speaker
from grains.models import HAPPENED_AT, Caller, Grain, Status
from graph.algorithms.decay import DecayPolicy
from graph.algorithms.mirror import GrainRow
from graph.algorithms.propagation import Edge, RankInput
from graph.models import Cluster, Conduit, ConduitKind, Trace, TraceItem

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
            f"WHERE g.id = c.target_id AND c.source_id IN ({marks(chunk)}) AND g.status IN ({marks(statuses)}) "
            f"UNION ALL {head} c.target_id, c.source_id FROM graph_conduit c CROSS JOIN grains_grain g "
            f"WHERE g.id = c.source_id AND c.target_id IN ({marks(chunk)}) AND c.directed = %s "
            f"AND g.status IN ({marks(statuses)})"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*chunk, *statuses, *chunk, False, *statuses])
            for cid, weight, created, decayed_at, status, here, there in cursor.fetchall():
                w = policy.conduit_weight(weight, float(created), float(decayed_at), now_ts)
                out[here].append(Edge(there, w, cid, status))
    return out


SPEAKER_PREFIX = 80  # characters of a grain's content read to find who speaks in it


def grain_rows_sql() -> str:
    """SELECT of what retrieval reads of grains (one ``grain_row`` each); add a WHERE clause."""
    return (f"SELECT id, status, tier, weight, confidence, {_epoch('last_decayed_at')}, "
            f"{_epoch('last_accessed_at')}, superseded_by, cluster_id, level, substr(content, 1, {SPEAKER_PREFIX}) "
            "FROM grains_grain")


def grain_row(row: tuple) -> tuple[int, GrainRow]:
    """A row of ``grain_rows_sql`` as (grain id, its GrainRow)."""
    gid, status, tier, weight, confidence, decayed, accessed, successor, cluster, level, head = row
    return gid, GrainRow(status, tier, weight, confidence, float(decayed), float(accessed), successor, cluster, level,
                         split_speaker(head)[0])


def grain_rank_inputs(
    ids: Iterable[int], *, statuses: Sequence[str], policy: DecayPolicy, now: datetime,
    recency_half_life: float, recency_floor: float,
) -> tuple[dict[int, RankInput], dict[int, str]]:
    """Decayed weight, confidence, recency and speaker of the retrievable grains among ``ids``, and their
    statuses."""
    inputs: dict[int, RankInput] = {}
    status: dict[int, str] = {}
    now_ts = now.timestamp()
    for chunk in _chunks(list(ids)):
        with connection.cursor() as cursor:
            cursor.execute(f"{grain_rows_sql()} WHERE id IN ({marks(chunk)}) AND status IN ({marks(statuses)})",
                           [*chunk, *statuses])
            for gid, row in map(grain_row, cursor.fetchall()):
                inputs[gid] = row.rank_input(policy, now_ts, recency_half_life, recency_floor)
                status[gid] = row.status
    return inputs, status


def grain_dates(ids: Sequence[int]) -> dict[int, datetime]:
    """When each of ``ids`` happened: its occurred_at, else when it was stored (one query per 900 ids)."""
    dates: dict[int, datetime] = {}
    for chunk in _chunks(list(ids)):
        dates.update(Grain.objects.filter(pk__in=chunk).values_list("pk", HAPPENED_AT))
    return dates


def grain_texts_at(ids: Iterable[int]) -> dict[int, tuple[str, float]]:
    """The content of each of ``ids`` that exists and when it happened (``Grain.happened_at``, as epoch seconds),
    in plain SQL: every store reads its new grains' neighbours so, for the relation rules."""
    out: dict[int, tuple[str, float]] = {}
    with connection.cursor() as cursor:
        for chunk in _chunks(list(ids)):
            cursor.execute("SELECT id, content, COALESCE(occurred_at, created_at) FROM grains_grain "
                           f"WHERE id IN ({marks(chunk)})", chunk)
            out.update((gid, (content, _timestamp(at))) for gid, content, at in cursor.fetchall())
    return out


def _timestamp(value: datetime | str) -> float:
    """Epoch seconds of a stored timestamp: a datetime (PostgreSQL) or SQLite's text of one, in UTC."""
    at = datetime.fromisoformat(value) if isinstance(value, str) else value
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).timestamp()


def contradictions_of(ids: Sequence[int]) -> dict[int, list[int]]:
    """For each of ``ids``, the grains it has a ``contradicts`` relation with (one query)."""
    out: dict[int, list[int]] = defaultdict(list)
    if not ids:
        return out
    rows = Conduit.objects.filter(kind=ConduitKind.CONTRADICTS).filter(
        Q(source_id__in=ids) | Q(target_id__in=ids)).values_list("source_id", "target_id")
    wanted = set(ids)
    for a, b in rows:
        if a in wanted:
            out[a].append(b)
        if b in wanted:
            out[b].append(a)
    return out


def abstraction_sources(ids: Sequence[int]) -> dict[int, list[int]]:
    """For each abstraction of ``ids``, the grains it abstracts (its ``abstracts`` conduits)."""
    out: dict[int, list[int]] = defaultdict(list)
    for source, target in Conduit.objects.filter(kind=ConduitKind.ABSTRACTS, source_id__in=ids).values_list(
            "source_id", "target_id").order_by("target_id"):
        out[source].append(target)
    return out


CAUSE_STEPS = 32  # how far back a chain of causes is followed, a query a step
CAUSES_SEEN = 10_000  # and at most this many causes in all


def causes_of(grain_id: int) -> set[int]:
    """The grains ``grain_id`` is caused by, directly or through their own causes (caused_by relations): none of
    them may be caused by it, or the causes would loop."""
    found: set[int] = set()
    step = {grain_id}
    for _ in range(CAUSE_STEPS):
        step = set(Conduit.objects.filter(kind=ConduitKind.CAUSED_BY, source_id__in=step)
                   .values_list("target_id", flat=True)) - found
        found |= step
        if not step or len(found) >= CAUSES_SEEN:
            break
    return found


def grains_by_id(ids: Iterable[int], fields: Sequence[str] = ()) -> Mapping[int, Grain]:
    """The grains of ``ids`` that exist, by id (plain SQL: every retrieval reads its answer's rows); with
    ``fields``, only those are read."""
    out: dict[int, Grain] = {}
    for chunk in _chunks(list(ids)):
        out.update((g.pk, g) for g in bulk_fetch(Grain, f"id IN ({marks(chunk)})", chunk, fields=fields))
    return out


def grain_contents(ids: Sequence[int]) -> dict[int, str]:
    """The content of each of ``ids`` that exists (plain SQL: the re-ranker reads its window's on every retrieval)."""
    out: dict[int, str] = {}
    with connection.cursor() as cursor:
        for chunk in _chunks(list(ids)):
            cursor.execute(f"SELECT id, content FROM grains_grain WHERE id IN ({marks(chunk)})", chunk)
            out.update(cursor.fetchall())
    return out


def grains_in_status(ids: Sequence[int], statuses: Sequence[str]) -> set[int]:
    """Those of ``ids`` whose status is in ``statuses`` (plain SQL: entry search and every retrieval's trace
    ask it)."""
    out: set[int] = set()
    if not ids or not statuses:
        return out
    with connection.cursor() as cursor:
        for chunk in _chunks(list(ids)):
            cursor.execute(f"SELECT id FROM grains_grain WHERE id IN ({marks(chunk)}) "
                           f"AND status IN ({marks(statuses)})", [*chunk, *statuses])
            out.update(gid for (gid,) in cursor.fetchall())
    return out


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


def active_graph(*, policy: DecayPolicy, now: datetime) -> tuple[list[int], list[tuple[int, int, float]]]:
    """Every active grain id and every conduit between two active grains, with its decayed weight.

    Two streaming queries; the rows never become model instances. Cost: O(grains + conduits).
    """
    now_ts = now.timestamp()
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM grains_grain WHERE status = %s ORDER BY id", [Status.ACTIVE])
        nodes = [gid for (gid,) in cursor.fetchall()]
        cursor.execute(
            f"SELECT c.source_id, c.target_id, c.weight, {_epoch('c.created_at')}, {_epoch('c.last_decayed_at')} "
            "FROM graph_conduit c CROSS JOIN grains_grain s CROSS JOIN grains_grain t "
            "WHERE s.id = c.source_id AND t.id = c.target_id AND s.status = %s AND t.status = %s",
            [Status.ACTIVE, Status.ACTIVE],
        )
        edges = [(a, b, policy.conduit_weight(w, float(created), float(decayed), now_ts))
                 for a, b, w, created, decayed in cursor.fetchall()]
    return nodes, edges


def grain_texts(ids: Sequence[int]) -> dict[int, tuple[str, int | None]]:
    """Content and current cluster of each grain of ``ids``."""
    out: dict[int, tuple[str, int | None]] = {}
    for chunk in _chunks(list(ids)):
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, content, cluster_id FROM grains_grain WHERE id IN ({marks(chunk)})", chunk)
            out.update({gid: (content, cluster) for gid, content, cluster in cursor.fetchall()})
    return out


class _HubCache:
    """Each cluster's hubs, per database, read again only when the clusters changed (a rebuild).

    Checking costs one aggregate over the small cluster table.
    """

    def __init__(self) -> None:
        self._by_db: dict[str, tuple[tuple, dict[int, tuple[int, ...]]]] = {}

    def get(self) -> dict[int, tuple[int, ...]]:
        key = connection.settings_dict["NAME"]
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*), max(id), max(updated_at) FROM graph_cluster")
            version = tuple(cursor.fetchone())
        hit = self._by_db.get(key)
        if hit is None or hit[0] != version:
            hit = (version, {cid: tuple(h) for cid, h in Cluster.objects.values_list("pk", "hubs")})
            self._by_db[key] = hit
        return hit[1]


cluster_hubs = _HubCache()


def cluster_hub_edges(members: Mapping[int, int | None], *, weight: float,
                      hubs: Callable[[Iterable[int]], Mapping[int, tuple[int, ...]]] | None = None,
                      ) -> dict[int, list[Edge]]:
    """Weak edges from each grain of ``members`` (grain id -> its cluster id) to its cluster's hubs.

    Edges carry the negated cluster id in place of a conduit id: they are not
    conduits, and learning leaves them alone. ``hubs`` gives some clusters' hubs (a retrieval asks its
    mirror); else no query but a cache refresh.
    """
    out: dict[int, list[Edge]] = {}
    if weight <= 0:
        return out
    table = cluster_hubs.get() if hubs is None else hubs(set(members.values()))
    for gid, cluster in members.items():
        found = [Edge(h, weight, -cluster, Status.ACTIVE) for h in table.get(cluster, ()) if h != gid]
        if found:
            out[gid] = found
    return out


def cluster_list(*, limit: int = 100, offset: int = 0) -> list[dict]:
    """Clusters, largest first, with label, size, density, mean internal weight and hubs."""
    rows = Cluster.objects.order_by("-size", "id").values(
        "id", "label", "terms", "size", "density", "internal_weight", "hubs", "created_at", "updated_at")
    return list(rows[offset: offset + limit])


def cluster_exists(cluster_id: int) -> bool:
    return Cluster.objects.filter(pk=cluster_id).exists()
