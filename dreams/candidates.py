"""Which dense clumps of grains the dream cycle consolidates (pure, no Django)."""
from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    grain_id: int
    content: str
    content_hash: str
    degree: float          # weighted degree inside the cluster
    last_accessed: float   # epoch seconds


@dataclass(frozen=True)
class ClusterView:
    cluster_id: int
    members: Sequence[Member]
    density: float
    internal_weight: float


@dataclass(frozen=True)
class Clump:
    cluster_id: int
    sources: tuple[Member, ...]   # most central first
    score: float
    signature: str                # changes when its members or their contents change


@dataclass(frozen=True)
class ClumpRules:
    min_sources: int
    max_sources: int
    min_internal_weight: float
    recent_seconds: float
    per_cycle: int


def signature(members: Iterable[Member]) -> str:
    """A hash of the clump's grains and their contents: the same clump, unchanged, has the same one."""
    text = ";".join(f"{m.grain_id}:{m.content_hash}" for m in sorted(members, key=lambda m: m.grain_id))
    return hashlib.sha256(text.encode()).hexdigest()


def clump_of(view: ClusterView, rules: ClumpRules, *, now: float) -> Clump | None:
    """The cluster's densest part: its ``max_sources`` most connected members, scored, or None.

    Score: mean internal conduit weight x sqrt(density) x log2(1 + sources),
    halved when no source was used within ``recent_seconds``. A cluster too
    small or too loosely linked gives None.
    """
    if len(view.members) < rules.min_sources or view.internal_weight < rules.min_internal_weight:
        return None
    ranked = sorted(view.members, key=lambda m: (-m.degree, m.grain_id))[: rules.max_sources]
    recent = any(now - m.last_accessed <= rules.recent_seconds for m in ranked)
    score = view.internal_weight * math.sqrt(max(view.density, 0.0)) * math.log2(1 + len(ranked))
    return Clump(view.cluster_id, tuple(ranked), round(score * (1.0 if recent else 0.5), 6), signature(ranked))


def select_clumps(views: Iterable[ClusterView], rules: ClumpRules, *, done: set[str], now: float) -> list[Clump]:
    """The best ``per_cycle`` clumps not dreamt of before in this exact form (``done`` signatures)."""
    clumps = [c for v in views if (c := clump_of(v, rules, now=now)) is not None and c.signature not in done]
    return sorted(clumps, key=lambda c: (-c.score, c.cluster_id))[: rules.per_cycle]
