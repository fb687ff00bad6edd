"""The learned re-ranker: re-orders the best grains of a retrieval and learns from the feedback on them."""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from datetime import datetime

from django.db import connection

from core.bulk import marks
from core.conf import flux_setting as S
from graph.algorithms.propagation import Activation, Ranked, RankInput, rank
from graph.algorithms.ranker import (
    RankerSteps,
    adjustment,
    asks_when,
    grain_features,
    pair_updates,
    query_words,
    weight_keys,
)
from graph.models import RankerWeight, TraceItem
from graph.selectors import grain_contents
from graph.semantic import semantic_similarities


def ranker_weights(keys: list[str]) -> dict[str, float]:
    """The learned weights among ``keys`` (one query, plain SQL; weights never learned are absent, i.e. 0)."""
    if not keys:
        return {}
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, weight FROM {quote(RankerWeight._meta.db_table)} "
                       f"WHERE {quote('key')} IN ({marks(keys)})", keys)
        return dict(cursor.fetchall())


def ranker_rerank(query: str, ranked: list[Ranked], acts: Mapping[int, Activation], inputs: Mapping[int, RankInput],
                  limit: int, superseded_factor: float,
                  factors: Mapping[int, float] | None = None,
                  spoken: Collection[int] = ()) -> tuple[list[Ranked], dict[int, dict]]:
    """The best ``limit`` of ``ranked`` (the RERANK_WINDOW best by signal, already scaled by ``factors``) once
    the learned weights have re-scored them, and what the ranker saw of each (kept with the trace, to learn
    from its feedback). ``factors`` (e.g. the speaker boost) still apply after the learned ones; ``spoken``:
    the grains whose speaker the query names.

    Two reads: the window's contents and the weights of the query's words and the features.
    """
    if S("RERANK_WINDOW") <= 0 or not ranked:
        return ranked[:limit], {}
    words = query_words(query)
    texts = grain_contents([r.activation.grain_id for r in ranked])
    best, when = ranked[0].score, asks_when(query)
    meaning = semantic_similarities(query, list(texts))
    features = {r.activation.grain_id: grain_features(
        content=texts[r.activation.grain_id], query_words=words, hops=r.activation.hops, score=r.score, best=best,
        when=when, spoken=r.activation.grain_id in spoken, meaning=meaning.get(r.activation.grain_id, 0.0))
        for r in ranked if r.activation.grain_id in texts}
    weights = ranker_weights(weight_keys(words))
    if not any(weights.values()):
        return ranked[:limit], features
    learned = {gid: math.exp(adjustment(f, weights)) * (factors or {}).get(gid, 1.0) for gid, f in features.items()}
    window = {gid: acts[gid] for gid in features}
    return rank(window, inputs, limit, superseded_factor=superseded_factor, factors=learned), features


def ranker_learn(item: TraceItem, useful: bool, now: datetime) -> int:
    """Pair the rated grain with the grains of its trace already rated the other way and step the weights.

    Each pair of a trace is learned from once, when its second verdict is applied. Returns how many weights moved.
    """
    if not item.features:
        return 0
    others = [f for f in TraceItem.objects.filter(trace_id=item.trace_id, feedback__useful=not useful,
                                                  feedback__applied_at__isnull=False)
              .values_list("features", flat=True) if f]
    if not others:
        return 0
    good, bad = ([item.features], others) if useful else (others, [item.features])
    words = {w for f in [item.features, *others] for w in f.get("words", ())}
    rows = {r.key: r for r in RankerWeight.objects.filter(key__in=weight_keys(words))}
    steps = RankerSteps(rate=S("RANKER_RATE"), word_rate=S("RANKER_WORD_RATE"), bound=S("RANKER_MAX_WEIGHT"),
                        min_match=S("RANKER_MIN_MATCH_WEIGHT"))
    moved = pair_updates(good, bad, {k: r.weight for k, r in rows.items()}, steps)
    changed = []
    for key, weight in moved.items():
        row = rows.get(key) or RankerWeight(key=key, updates=0)
        row.weight, row.updates, row.updated_at = weight, row.updates + 1, now
        changed.append(row)
    RankerWeight.objects.bulk_create(changed, update_conflicts=True, unique_fields=["key"],
                                     update_fields=["weight", "updates", "updated_at"])
    return len(changed)
