"""Retrieval by signal propagation, recorded as a trace."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import DatabaseError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from core import metrics
from core.booth import Booth, inline
from core.bulk import bulk_insert_rows, bulk_set, marks
from core.conf import flux_setting as S
from core.errors import FeedbackOwed, InvalidInput, storage_error
from core.validate import unicode_text
from grains.activity import activity_record_at
from grains.callers import caller_acting
from grains.content import visible
from grains.lifecycle import Changes
from grains.models import Caller, Grain, Status
from grains.selectors import successors_resolve
from graph.algorithms.fusion import boost, fuse_by_rank
from graph.algorithms.mirror import GraphMirror
from graph.algorithms.propagation import (
    Activation,
    Ranked,
    RankInput,
    Reach,
    WeightFloor,
    normalise_scores,
    propagate,
    rank,
    reach_all,
)
from graph.algorithms.speakers import named, speaker_factors, spoken_by
from graph.algorithms.when import date_spans
from graph.mirror import mirrors
from graph.models import ConduitKind, TraceItem
from graph.policy import DAY, decay_policy, grain_weight_now, propagation_params
from graph.results import RetrievedGrain, RetrieveResult
from graph.search import entry_search
from graph.selectors import (
    RETRIEVABLE,
    abstraction_sources,
    cluster_hub_edges,
    conduit_neighbours,
    contradictions_of,
    feedback_owed,
    grain_dates,
    grain_rank_inputs,
    grains_by_id,
    grains_in_status,
)
from graph.semantic import semantic_search
from graph.services.ranker import ranker_rerank
from graph.services.traces import MAX_UNWRITTEN, SCRUBBED_QUERY, pending_traces, trace_ids

# A trace item's fields, in the order _record gives them.
TRACE_ITEM_FIELDS = ("trace", "grain", "rank", "score", "signal", "hops", "origin_id", "path", "conduits", "features")
# What the answer shows of its grains and ``_touched`` reads (the other dates are not converted on every retrieval).
ANSWER_FIELDS = ("content", "provenance", "status", "tier", "confidence", "weight", "level", "retrievals", "context",
                 "last_decayed_at", "superseded_by")


def _check(query: object, limit: object) -> tuple[str, int]:
    if not isinstance(query, str) or not visible(query):  # nothing but spaces, zero-width or control characters
        raise InvalidInput("'query' must be a non-empty string: what to remember about", details={"field": "query"})
    if len(query) > S("MAX_QUERY_CHARS"):
        raise InvalidInput(
            f"'query' has {len(query)} characters; the limit is {S('MAX_QUERY_CHARS')} (MAX_QUERY_CHARS)",
            details={"field": "query"},
        )
    unicode_text(query, "query")
    limit = S("TOP_K") if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= S("MAX_TOP_K"):
        raise InvalidInput(f"'limit' must be an integer from 1 to {S('MAX_TOP_K')}, got {limit!r}",
                           details={"field": "limit"})
    return query.strip(), limit


def _entry_hits(query: str, *, statuses: tuple[str, ...], limit: int,
                view: GraphMirror | None = None) -> tuple[list[tuple[int, float]], bool]:
    """Entry points: lexical hits, fused by rank with semantic ones (when on), raised when dated within a
    date the query names; archived grains too when live ones give fewer than ``limit`` (ARCHIVE_SEARCH).
    Also says whether archived grains are among them (the fallback was needed). With ``view``, the best
    matches' statuses are read from it rather than the database."""
    search = entry_search(in_status=view.in_status if view is not None else None)
    hits = search.search(query, limit=S("ENTRY_POINTS"), statuses=statuses, max_terms=S("QUERY_MAX_TERMS"))
    near = semantic_search(query, limit=S("SEMANTIC_ENTRY_POINTS"), statuses=statuses)
    if near:
        hits = fuse_by_rank(hits, near, weight=S("SEMANTIC_WEIGHT"), rank_decay=S("SEMANTIC_RANK_DECAY"))
    spans = date_spans(query) if S("TEMPORAL_BOOST") > 0 else []
    if spans and hits:
        dates = grain_dates([gid for gid, _ in hits])
        dated = {gid for gid, when in dates.items() if any(span.holds(when) for span in spans)}
        hits = boost(hits, dated, 1.0 + S("TEMPORAL_BOOST"))
    if len(hits) >= limit or not S("ARCHIVE_SEARCH") or Status.ARCHIVED in statuses:
        return hits, False
    archived = search.search(query, limit=limit - len(hits), statuses=(Status.ARCHIVED,),
                             max_terms=S("QUERY_MAX_TERMS"))
    return hits + archived, bool(archived)


def activate(
    query: str, *, statuses: tuple[str, ...], now: datetime, limit: int, propagation: bool = True,
    view: GraphMirror | None = None,
) -> tuple[dict[int, Activation], dict[int, RankInput], bool]:
    """Entry points for ``query``, the signal they spread, the rank inputs of every grain reached
    (no writes; each grain's row is read once, from ``view`` when given, else from the database), and whether
    archived grains had to be brought in. Superseded grains carry their live successor."""
    hits, from_archive = _entry_hits(query, statuses=statuses, limit=limit, view=view)
    entries = normalise_scores(hits)
    params = propagation_params()
    if not propagation:
        params = replace(params, max_hops=0)
    policy = decay_policy()
    readable = statuses + ((Status.ARCHIVED,) if from_archive else ())
    recency = {"recency_half_life": S("RECENCY_HALF_LIFE_DAYS") * DAY, "recency_floor": S("RECENCY_FLOOR")}

    def rank_inputs(ids: list[int]) -> tuple[dict[int, RankInput], dict[int, str]]:
        if view is not None:
            return view.rank_inputs(ids, statuses=readable, policy=policy, now=now.timestamp(), **recency)
        return grain_rank_inputs(ids, statuses=readable, policy=policy, now=now, **recency)

    inputs, entry_status = rank_inputs(list(entries))
    relay_from = [gid for gid, _ in hits[: S("ENTRY_RELAY")]]
    # Entry grains also reach their cluster's hubs, over weak links.
    hub_edges = cluster_hub_edges({g: inputs[g].cluster_id for g in relay_from
                                   if g in inputs and inputs[g].cluster_id is not None},
                                  weight=S("CLUSTER_NEIGHBOUR_WEIGHT"), hubs=view.hubs if view is not None else None)

    def conduits(ids: list[int], floor: WeightFloor | None) -> dict[int, Reach]:
        if view is not None:
            return view.reach(ids, floor, statuses=statuses, policy=policy, now=now.timestamp())
        return reach_all(conduit_neighbours(ids, statuses=statuses, policy=policy, now=now))

    def neighbours(ids: Iterable[int], floor: WeightFloor) -> dict[int, Reach]:
        ids = list(ids)
        hubbed = hub_edges.keys() & set(ids)
        found = conduits([g for g in ids if g not in hubbed], floor)
        own = conduits(list(hubbed), None) if hubbed else {}  # all of them, to leave out hubs linked already
        for gid in hubbed:
            linked = own[gid].edges if gid in own else []
            targets = {e.target for e in linked}
            edges = [*linked, *(e for e in hub_edges[gid] if e.target not in targets)]
            found[gid] = Reach(len(edges), edges)
        return found

    acts = propagate(entries, entry_status, neighbours, params, relay_from=relay_from)
    inputs.update(rank_inputs([gid for gid in acts if gid not in entries])[0])
    return acts, _with_successors(inputs), from_archive


def _with_successors(inputs: dict[int, RankInput]) -> dict[int, RankInput]:
    """Point superseded grains at the live end of their supersession chain (through tombstones)."""
    pointers = {inp.superseded_by for inp in inputs.values() if inp.superseded_by is not None}
    if not pointers:
        return inputs
    live = successors_resolve(pointers)
    return {gid: replace(inp, superseded_by=live.get(inp.superseded_by)) if inp.superseded_by is not None else inp
            for gid, inp in inputs.items()}


def grain_retrieve(
    *,
    query: str,
    caller: str | Caller | None = None,
    limit: int | None = None,
    include_quarantined: bool = False,
    propagation: bool = True,
    enforce_feedback: bool | None = None,
    booth: Booth | None = None,
    now: datetime | None = None,
) -> RetrieveResult:
    """The ``limit`` grains most relevant to ``query``, found by signal propagation.

    Records a trace (the caller owes feedback on it) and touches the returned
    grains: retrieval count and last access (decay is lazy: nothing to write back),
    dormant grains woken. Quarantined grains surface only when asked for.
    With feedback enforcement on (FEEDBACK_ENFORCEMENT_ENABLED unless
    ``enforce_feedback`` says otherwise), a caller that owes feedback is
    refused with FeedbackOwed listing what it owes. With a ``booth`` (the
    service's) the trace is written by its writer after the answer, under an id
    reserved ahead (feedback on it waits for it: ``trace_written``; once
    MAX_UNWRITTEN traces of the process wait, a retrieval waits for the oldest
    first); else here, before the answer.
    """
    query, limit = _check(query, limit)
    now = now or timezone.now()
    write_now = inline if booth is None else (lambda job: booth.record(job).result())  # and wait for it
    # A caller's first act makes its row: on the booth's writer, like every write of the service (on a read
    # worker it waited for SQLite's lock behind the writer's open commit: seconds for 8 new callers at once).
    who = caller_acting(caller, now=now, write=write_now)
    if S("FEEDBACK_ENFORCEMENT_ENABLED") if enforce_feedback is None else enforce_feedback:
        _refuse_if_owed(who, now)
    statuses = RETRIEVABLE + ((Status.QUARANTINED,) if include_quarantined else ())
    view = mirrors.current()
    acts, inputs, from_archive = activate(query, statuses=statuses, now=now, limit=limit, propagation=propagation,
                                          view=view)
    factor = S("SUPERSEDED_RANK_FACTOR")
    grains_only = {g: i for g, i in inputs.items() if i.level == 0}
    spoken = spoken_by({g: i.speaker for g, i in grains_only.items()}, named(query))
    boosted = speaker_factors(spoken, S("SPEAKER_BOOST"))
    ranked, features = ranker_rerank(query, rank(acts, grains_only, max(limit, S("RERANK_WINDOW")),
                                                 superseded_factor=factor, factors=boosted),
                                     acts, grains_only, limit, factor, factors=boosted, spoken=spoken)
    abstract = {g: i for g, i in inputs.items() if i.level > 0}
    hubs = rank(acts, abstract, S("RETRIEVE_ABSTRACTIONS"), superseded_factor=factor) if abstract else []
    returned = [r.activation.grain_id for r in ranked + hubs]
    grains = _touched(grains_by_id(returned, ANSWER_FIELDS), Changes(now), now)  # as the trace's write leaves them
    trace = TraceRecord(None, query, who, limit, acts, ranked, hubs, from_archive, now, features)
    trace_id: int | None
    later = None  # the trace's write, queued once the answer is ready
    try:
        if booth is None or pending_traces.failing:
            trace_id = write_now(lambda: _record([trace])[0])
            pending_traces.failing = False
        else:
            pending_traces.wait_below(MAX_UNWRITTEN)
            trace_id = trace_ids.take(booth.ahead)
            later = replace(trace, trace_id=trace_id)
    except DatabaseError as exc:
        if storage_error(exc) is None:
            raise
        trace_id = None  # the storage is full or read-only: the answer still goes out, with no trace to rate
    if view is not None:
        view.touched(returned, now.timestamp())  # the trace's write of it is not logged for the mirror
        conflicts = view.related([r.activation.grain_id for r in ranked], ConduitKind.CONTRADICTS)
        sources = view.related([r.activation.grain_id for r in hubs], ConduitKind.ABSTRACTS, outgoing_only=True)
    else:
        conflicts = contradictions_of([r.activation.grain_id for r in ranked])
        sources = abstraction_sources([r.activation.grain_id for r in hubs])

    def shown(i: int, r: Ranked) -> RetrievedGrain:
        g = grains[r.activation.grain_id]
        return RetrievedGrain(
            id=g.pk, content=g.content, rank=i, score=round(r.score, 6), signal=round(r.activation.signal, 6),
            hops=r.activation.hops, path=list(r.activation.path), provenance=g.provenance, status=g.status,
            confidence=round(g.confidence, 4), weight=round(g.weight, 4), context=g.context,
            superseded_by=inputs[g.pk].superseded_by, contradicted_by=sorted(conflicts.get(g.pk, [])),
            level=g.level, sources=sources.get(g.pk, []),
        )

    result = RetrieveResult(trace_id, query, [shown(i, r) for i, r in enumerate(ranked, start=1)],
                            [shown(i, r) for i, r in enumerate(hubs, start=1)])
    if later is not None:  # on a read worker, after the answer is rendered too (feedback on it waits for it)
        pending_traces.add(trace_id, booth.record_after(_record, later), booth.flush)
    return result


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """What the trace of a retrieval writes: its row (under ``trace_id`` when one was reserved), its items (the
    ranked grains) and the touch of the grains and abstractions it returned."""

    trace_id: int | None
    query: str
    caller: Caller
    limit: int
    acts: Mapping[int, Activation]  # every grain the signal reached (counted when written, off the answer's path)
    ranked: list[Ranked]
    hubs: list[Ranked]
    from_archive: bool
    now: datetime
    features: dict[int, dict]


def _record(traces: list[TraceRecord]) -> list[int]:
    """Write ``traces`` together, in one short transaction and a few statements for all of them (the booth
    gathers those of a commit); their ids, in order.

    Abstractions are not trace items: no feedback is owed on them. The counts are kept in the hour of the
    newest trace.
    """
    traces = _without_purged(traces)
    callers: dict[int, list[int]] = {}
    touched: dict[int, list] = {}  # grain id -> [times returned, last returned at]
    for t in traces:
        calls = callers.setdefault(t.caller.pk, [0, 0])
        calls[0], calls[1] = calls[0] + 1, calls[1] + len(t.ranked)
        for r in t.ranked + t.hubs:
            seen = touched.setdefault(r.activation.grain_id, [0, t.now])
            seen[0], seen[1] = seen[0] + 1, max(seen[1], t.now)
    columns = 'query, caller_id, "limit", entry_count, activated_count, created_at'
    with transaction.atomic(), connection.cursor() as cursor:  # plain SQL: this runs on every retrieval
        cursor.executemany("UPDATE grains_caller SET retrievals = retrievals + %s, returned = returned + %s "
                           "WHERE id = %s", [(n, returned, pk) for pk, (n, returned) in callers.items()])
        ids, reserved, entries = [], [], [sum(1 for a in t.acts.values() if a.entry > 0) for t in traces]
        for t, entry_count in zip(traces, entries, strict=True):
            values = [t.query, t.caller.pk, t.limit, entry_count, len(t.acts), _when(t.now)]
            if t.trace_id is None:
                cursor.execute(f"INSERT INTO graph_trace ({columns}) VALUES ({marks(values)}) RETURNING id", values)
                ids.append(cursor.fetchone()[0])
            else:
                ids.append(t.trace_id)
                reserved.append([t.trace_id, *values])
        if reserved:
            rows, flat = ", ".join([f"({marks(reserved[0])})"] * len(reserved)), [v for row in reserved for v in row]
            cursor.execute(f"INSERT INTO graph_trace (id, {columns}) VALUES {rows}", flat)
        bulk_insert_rows(TraceItem, TRACE_ITEM_FIELDS, [
            (trace_id, r.activation.grain_id, i, r.score, r.activation.signal, r.activation.hops, r.activation.origin,
             list(r.activation.path), list(r.activation.conduits), t.features.get(r.activation.grain_id, {}))
            for trace_id, t in zip(ids, traces, strict=True) for i, r in enumerate(t.ranked, start=1)
        ])
        _touch(cursor, touched)
        newest = max(t.now for t in traces)
        ranked = [r for t in traces for r in t.ranked]
        metrics.count({"retrievals": len(traces), "returned": len(ranked),
                       "returned_hops": sum(r.activation.hops for r in ranked),
                       "fallbacks": sum(1 for t in traces if t.from_archive or not t.ranked)}, now=newest)
        activity_record_at([("graph.signal_propagated", {
            "trace_id": trace_id, "caller": str(t.caller), "entries": entry_count,
            "activated": len(t.acts), "returned": [r.activation.grain_id for r in t.ranked],
        }, t.now) for trace_id, t, entry_count in zip(ids, traces, entries, strict=True)])
    return ids


def _without_purged(traces: list[TraceRecord]) -> list[TraceRecord]:
    """``traces`` as the purge would have left them had they been written before it: a grain purged since the
    retrieval is no item of its trace (whose query is scrubbed), counted nowhere. Its row would have failed the
    commit, and with it every write committed together, other callers' traces among them. Read on the writer
    in its transaction: the rows found stay until the commit (on PostgreSQL locked against a purge)."""
    returned = sorted({r.activation.grain_id for t in traces for r in t.ranked + t.hubs})
    if not returned:
        return traces
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM grains_grain WHERE id IN ({marks(returned)}){lock}", returned)
        gone = set(returned) - {row[0] for row in cursor.fetchall()}
    if not gone:
        return traces

    def kept(items: list[Ranked]) -> list[Ranked]:
        return [r for r in items if r.activation.grain_id not in gone]

    return [replace(t, query=SCRUBBED_QUERY, ranked=kept(t.ranked), hubs=kept(t.hubs))
            if any(r.activation.grain_id in gone for r in t.ranked + t.hubs) else t for t in traces]


def _when(now: datetime) -> object:
    return connection.ops.adapt_datetimefield_value(now)


def _refuse_if_owed(caller: Caller, now: datetime) -> None:
    owed = feedback_owed(caller, now=now, grace_seconds=S("FEEDBACK_ENFORCEMENT_GRACE_SECONDS"),
                         max_block_seconds=S("FEEDBACK_ENFORCEMENT_MAX_BLOCK_SECONDS"))
    if owed:
        traces = sorted({t for t, _ in owed})
        raise FeedbackOwed(
            f"{caller} owes feedback on {len(owed)} retrieved grain(s) of {len(traces)} trace(s); rate each one "
            "(trace_id, grain_id, useful) before retrieving again: details.owed lists them",
            details={"trace_ids": traces, "owed": [{"trace_id": t, "grain_id": g} for t, g in owed]},
        )


def _touch(cursor: CursorWrapper, touched: Mapping[int, list]) -> None:
    """Count the retrievals of each grain (``touched``: grain id -> [times returned, last returned at]) and its
    last access; wake dormant and archived grains. A weight decays lazily and memorylessly, so it is not
    written back."""
    if not touched:
        return
    cursor.executemany("UPDATE grains_grain SET last_accessed_at = %s, retrievals = retrievals + %s WHERE id = %s",
                       [(_when(at), n, gid) for gid, (n, at) in touched.items()])
    asleep = grains_in_status(list(touched), (Status.DORMANT.value, Status.ARCHIVED.value))
    if asleep:
        now = max(touched[gid][1] for gid in asleep)
        changes = Changes(now)
        bulk_set(Grain, ["status", "status_changed_at"], _touched(grains_by_id(asleep), changes, now).values())
        changes.save()


def _touched(grains: Mapping[int, Grain], changes: Changes, now: datetime) -> Mapping[int, Grain]:
    """``grains`` as a retrieval leaves them (in memory): the decayed weight, this access counted, dormant and
    archived grains woken. A superseded grain stays asleep: finding it is no reason to believe it again."""
    policy = decay_policy()
    for grain in grains.values():
        grain.weight = grain_weight_now(grain, now, policy)
        grain.last_decayed_at = grain.last_accessed_at = now
        grain.retrievals += 1
        if grain.status == Status.ARCHIVED:
            changes.status(grain, Status.ACTIVE, "retrieved from the archive")
        elif grain.status == Status.DORMANT and grain.superseded_by is None:
            changes.status(grain, Status.ACTIVE, "retrieved")
    return grains
