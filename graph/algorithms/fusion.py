"""Entry points from more than one search, fused by rank (pure, no Django)."""
from __future__ import annotations

from collections.abc import Collection, Sequence


def fuse_by_rank(
    lexical: Sequence[tuple[int, float]], semantic: Sequence[int], *, weight: float, rank_decay: float
) -> list[tuple[int, float]]:
    """Lexical hits with semantic hits added by rank, best first.

    Lexical scores are scaled so the best is 1.0 (the query's own words keep
    their weight); the semantic hit at rank r (0 = nearest) adds
    ``weight / (1 + r / rank_decay)``, whether or not the words matched too.
    Only ranks are taken from the semantic search: similarity scales differ
    between models and queries, ranks do not. Ties keep the lexical order.
    """
    best = max((score for _, score in lexical), default=0.0)
    fused = {gid: (score / best if best > 0 else 1.0) for gid, score in lexical}
    for rank, gid in enumerate(semantic):
        fused[gid] = fused.get(gid, 0.0) + weight / (1.0 + rank / rank_decay)
    order = {gid: i for i, gid in enumerate(dict.fromkeys([g for g, _ in lexical] + list(semantic)))}
    return sorted(fused.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def boost(hits: Sequence[tuple[int, float]], chosen: Collection[int], factor: float) -> list[tuple[int, float]]:
    """``hits`` with the scores of ``chosen`` grains multiplied by ``factor``, best first (stable)."""
    if not chosen or factor == 1.0:
        return list(hits)
    raised = [(gid, score * factor if gid in chosen else score) for gid, score in hits]
    return sorted(raised, key=lambda kv: -kv[1])
