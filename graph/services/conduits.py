"""Creating and strengthening conduits."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q

from core import metrics
from core.bulk import bulk_fetch, bulk_insert_rows, marks
from core.conf import flux_setting as S
from core.rows import model_rebuilt, model_row
from grains.models import Grain
from graph.algorithms.learning import clamp, reinforce
from graph.models import DIRECTED_KINDS, Conduit, ConduitKind
from graph.policy import conduit_weight_now
from graph.search import entry_search
from graph.selectors import RETRIEVABLE


def _ends(a: int, b: int, kind: str) -> tuple[int, int]:
    """Symmetric kinds are stored with source < target, so a pair has one row per kind."""
    return (a, b) if kind in DIRECTED_KINDS or a < b else (b, a)


def lexical_neighbours(grains: list[Grain], *, limit: int) -> dict[int, list[tuple[int, float]]]:
    """For each grain, up to ``limit`` other retrievable grains most similar in wording, best first.

    Similarity is the neighbour's match score over the grain's own (in (0, 1]);
    one search per grain on its STORE_LINK_TERMS rarest terms.
    """
    if limit <= 0 or not grains:
        return {}
    found = entry_search(max_docs=S("STORE_LINK_MAX_DOCS")).search_many(
        [g.content for g in grains], limit=limit + 1, statuses=RETRIEVABLE, max_terms=S("STORE_LINK_TERMS"))
    out = {}
    for grain, hits in zip(grains, found, strict=False):
        if not hits:
            continue
        reference = dict(hits).get(grain.pk) or hits[0][1]
        out[grain.pk] = [(gid, min(1.0, score / reference)) for gid, score in hits if gid != grain.pk][:limit]
    return out


def _context_neighbours(grains: list[Grain]) -> dict[int, list[int]]:
    """For each new grain, the previous CONTEXT_LINKS grains of its context that are close enough in time.

    Grains earlier in the same batch come first; one query per context reaches
    back to grains stored before the batch.
    """
    count = S("CONTEXT_LINKS")
    if count <= 0:
        return {}
    gap = timedelta(hours=S("CONTEXT_MAX_GAP_HOURS"))
    earlier: dict[str, list[tuple[int, datetime]]] = {}
    found: dict[int, list[int]] = {}
    for grain in grains:
        if not grain.context:
            continue
        if grain.context not in earlier:  # plain SQL: every store with a context asks
            rows = bulk_fetch(Grain, f"context = %s AND id < %s AND status IN ({marks(RETRIEVABLE)}) "
                              "ORDER BY id DESC LIMIT %s", [grain.context, grain.pk, *RETRIEVABLE, count],
                              fields=("occurred_at", "created_at"))
            earlier[grain.context] = [(g.pk, g.happened_at) for g in reversed(rows)]
        when = grain.happened_at
        chain = earlier[grain.context]
        found[grain.pk] = [pk for pk, at in chain[-count:] if abs(when - at) <= gap]
        chain.append((grain.pk, when))
    return found


def conduits_link_new_grains(
    grains: list[Grain], *, now: datetime, lexical: dict[int, list[tuple[int, float]]] | None = None
) -> dict[int, int]:
    """Association conduits from new grains to their lexical and context neighbours, in one insert.

    ``lexical`` is ``lexical_neighbours`` of the grains when already known.
    Returns how many links each grain has once they are made: to earlier grains, and from grains of the same
    batch stored after it. A pair found twice keeps its strongest weight.
    """
    lo, hi = S("WEIGHT_MIN"), S("WEIGHT_MAX")
    want, floor = S("STORE_LINK_NEIGHBOURS"), S("STORE_LINK_MIN_SIMILARITY")
    pairs: dict[tuple[int, int], float] = {}
    context = _context_neighbours(grains)
    if lexical is None:
        lexical = lexical_neighbours(grains, limit=want)
    for grain in grains:
        near = [(gid, sim) for gid, sim in lexical.get(grain.pk, [])[:want] if sim >= floor]
        weights = {gid: S("LEXICAL_CONDUIT_WEIGHT") * sim for gid, sim in near}
        for gid in context.get(grain.pk, ()):
            weights[gid] = max(weights.get(gid, 0.0), S("CONTEXT_CONDUIT_WEIGHT"))
        for gid, weight in weights.items():
            key = _ends(grain.pk, gid, ConduitKind.ASSOCIATION)
            pairs[key] = max(pairs.get(key, 0.0), clamp(weight, lo, hi))
    linked = {grain.pk: 0 for grain in grains}
    for pair in pairs:
        for end in pair:
            if end in linked:
                linked[end] += 1
    bulk_insert_rows(Conduit, ("source", "target", "kind", "weight", "created_at", "last_decayed_at"),
                     [(a, b, ConduitKind.ASSOCIATION, w, now, now) for (a, b), w in pairs.items()],
                     ignore_conflicts=True)
    return linked


def conduit_strengthen(a: int, b: int, *, kind: str, initial: float, now: datetime) -> tuple[Conduit, bool]:
    """Create the conduit a-b of ``kind`` at ``initial`` weight, or reinforce it by LEARNING_RATE.

    Returns the conduit and whether it was created.
    """
    source, target = _ends(a, b, kind)
    conduit = Conduit.objects.filter(source_id=source, target_id=target, kind=kind).first()
    if conduit is None:
        conduit = Conduit.objects.create(
            source_id=source, target_id=target, kind=kind, directed=kind == ConduitKind.SHORTCUT,
            weight=clamp(initial, S("WEIGHT_MIN"), S("WEIGHT_MAX")), created_at=now, last_decayed_at=now,
            last_used_at=now,
        )
        return conduit, True
    stored, current = conduit.weight, conduit_weight_now(conduit, now)
    conduit.weight = reinforce(current, rate=S("LEARNING_RATE"), upper=S("WEIGHT_MAX"))
    conduit.last_decayed_at = conduit.last_used_at = now
    conduit.save(update_fields=["weight", "last_decayed_at", "last_used_at"])
    metrics.count(highway_counts(stored, conduit.weight), now=now)
    return conduit, False


def highway_counts(before: float, after: float) -> dict[str, int]:
    """A conduit whose stored weight crosses HIGHWAY_WEIGHT forms (up) or loses (down) a highway."""
    line = S("HIGHWAY_WEIGHT")
    if before < line <= after:
        return {"highways_formed": 1}
    if after < line <= before:
        return {"highways_lost": 1}
    return {}


def conduit_relate(source: int, target: int, *, kind: str, asserted_by: str, note: str,
                   now: datetime, weight: float | None = None) -> tuple[Conduit, bool]:
    """The typed relation ``source -kind-> target`` (``weight``, default RELATION_CONDUIT_WEIGHT), created once.

    Symmetric kinds (supports, contradicts) are stored with source < target.
    Signal flows both ways along every relation: a query that finds an old
    statement must reach the one that superseded it, and the reverse.
    Returns the conduit and whether it was created; an existing one is left as it is.
    """
    source, target = _ends(source, target, kind)
    conduit, created = Conduit.objects.get_or_create(
        source_id=source, target_id=target, kind=kind,
        defaults={"weight": clamp(S("RELATION_CONDUIT_WEIGHT") if weight is None else weight, S("WEIGHT_MIN"),
                                  S("WEIGHT_MAX")),
                  "created_at": now, "last_decayed_at": now, "asserted_by": asserted_by, "note": note[:200]},
    )
    return conduit, created


def conduits_snapshot(grain_id: int) -> list[dict]:
    """Every conduit of a grain as plain rows (what a tombstone keeps for a restore)."""
    return [model_row(c) for c in Conduit.objects.filter(Q(source_id=grain_id) | Q(target_id=grain_id))]


def conduits_put_back(rows: list[dict]) -> int:
    """Recreate conduits from ``conduits_snapshot`` rows, those whose two grains both exist; how many."""
    ends = {r["source_id"] for r in rows} | {r["target_id"] for r in rows}
    alive = set(Grain.objects.filter(pk__in=ends).values_list("pk", flat=True))
    back = [model_rebuilt(Conduit, r) for r in rows if r["source_id"] in alive and r["target_id"] in alive]
    Conduit.objects.bulk_create(back, ignore_conflicts=True)
    return len(back)
