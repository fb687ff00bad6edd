"""Creating and strengthening conduits."""
from __future__ import annotations

from datetime import datetime, timedelta

from fluxsite.conf import flux_setting as S
from graph.algorithms.learning import clamp, reinforce
from graph.models import DIRECTED_KINDS, Conduit, ConduitKind
from graph.policy import conduit_weight_now
from graph.search import entry_search
from graph.selectors import RETRIEVABLE
from grains.models import Grain


def _ends(a: int, b: int, kind: str) -> tuple[int, int]:
    """Symmetric kinds are stored with source < target, so a pair has one row per kind."""
    return (a, b) if kind in DIRECTED_KINDS or a < b else (b, a)


def _lexical_neighbours(grain: Grain) -> dict[int, float]:
    """Grains most similar in wording to ``grain``: id -> similarity in (0, 1]."""
    want = S("STORE_LINK_NEIGHBOURS")
    if want <= 0:
        return {}
    hits = entry_search().search(grain.content, limit=want + 1, statuses=RETRIEVABLE, max_terms=S("STORE_LINK_TERMS"))
    if not hits:
        return {}
    reference = dict(hits).get(grain.pk) or hits[0][1]
    floor = S("STORE_LINK_MIN_SIMILARITY")
    found = {gid: min(1.0, score / reference) for gid, score in hits if gid != grain.pk}
    return {gid: sim for gid, sim in list(found.items())[:want] if sim >= floor}


def _context_neighbours(grain: Grain) -> list[int]:
    """The previous CONTEXT_LINKS grains stored in the same context, close enough in time."""
    count = S("CONTEXT_LINKS")
    if not grain.context or count <= 0:
        return []
    gap = timedelta(hours=S("CONTEXT_MAX_GAP_HOURS"))
    when = grain.occurred_at or grain.created_at
    rows = (
        Grain.objects.filter(context=grain.context, pk__lt=grain.pk, status__in=RETRIEVABLE)
        .order_by("-pk")
        .values_list("pk", "occurred_at", "created_at")[:count]
    )
    return [pk for pk, occurred, created in rows if abs(when - (occurred or created)) <= gap]


def conduits_link_new_grains(grains: list[Grain], *, now: datetime) -> dict[int, int]:
    """Association conduits from new grains to their lexical and context neighbours, in one insert.

    Returns how many links each grain got. A pair found twice keeps its strongest weight.
    """
    lo, hi = S("WEIGHT_MIN"), S("WEIGHT_MAX")
    pairs: dict[tuple[int, int], float] = {}
    linked: dict[int, int] = {}
    for grain in grains:
        weights = {gid: S("LEXICAL_CONDUIT_WEIGHT") * sim for gid, sim in _lexical_neighbours(grain).items()}
        for gid in _context_neighbours(grain):
            weights[gid] = max(weights.get(gid, 0.0), S("CONTEXT_CONDUIT_WEIGHT"))
        for gid, weight in weights.items():
            key = _ends(grain.pk, gid, ConduitKind.ASSOCIATION)
            pairs[key] = max(pairs.get(key, 0.0), clamp(weight, lo, hi))
        linked[grain.pk] = len(weights)
    Conduit.objects.bulk_create(
        [Conduit(source_id=a, target_id=b, kind=ConduitKind.ASSOCIATION, weight=w, created_at=now, last_decayed_at=now)
         for (a, b), w in pairs.items()],
        ignore_conflicts=True,
    )
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
    current = conduit_weight_now(conduit, now)
    conduit.weight = reinforce(current, rate=S("LEARNING_RATE"), upper=S("WEIGHT_MAX"))
    conduit.last_decayed_at = conduit.last_used_at = now
    conduit.save(update_fields=["weight", "last_decayed_at", "last_used_at"])
    return conduit, False
