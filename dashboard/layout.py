"""Where the dashboard draws grains and clusters: a deterministic, O(n) layout, free of Django.

Clusters are discs packed in rows, largest first, each disc's area proportional to its size; a cluster's
members fill its disc on a smaller spiral, most connected first, so hubs sit at the centre. The same data
always gives the same picture, and a grain keeps its place while others come and go.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

GOLDEN_ANGLE = math.pi * (3 - math.sqrt(5))
MEMBER_SPACING = 1.0
CLUSTER_GAP = 1.15  # spacing between discs, relative to a tight packing


@dataclass(frozen=True)
class Disc:
    x: float
    y: float
    radius: float


def sunflower(index: int, spacing: float) -> tuple[float, float]:
    """The ``index``-th point of a sunflower spiral: even density, nearest points ``spacing`` apart."""
    r = spacing * math.sqrt(index + 0.5)
    angle = index * GOLDEN_ANGLE
    return r * math.cos(angle), r * math.sin(angle)


def disc_radius(size: int) -> float:
    """The radius of a disc holding ``size`` members on a spiral of MEMBER_SPACING."""
    return MEMBER_SPACING * math.sqrt(max(size, 1) + 0.5)


def cluster_discs(sizes: Sequence[int]) -> list[Disc]:
    """Discs for clusters of the given sizes, packed in shelves, largest first: each row is as tall as its
    first (largest) disc, rows are centred, and the whole is centred on the origin, so no two discs overlap."""
    if not sizes:
        return []
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    radii = [disc_radius(s) for s in sizes]
    width = max(CLUSTER_GAP * math.sqrt(sum(math.pi * r * r for r in radii)) * 1.3, 2 * CLUSTER_GAP * radii[order[0]])
    rows: list[list[int]] = [[]]
    used = 0.0
    for i in order:
        span = 2 * CLUSTER_GAP * radii[i]
        if rows[-1] and used + span > width:
            rows.append([])
            used = 0.0
        rows[-1].append(i)
        used += span
    placed: dict[int, Disc] = {}
    top = 0.0
    for row in rows:
        height = 2 * CLUSTER_GAP * radii[row[0]]
        x = -sum(2 * CLUSTER_GAP * radii[i] for i in row) / 2
        for i in row:
            x += CLUSTER_GAP * radii[i]
            placed[i] = Disc(x, top - height / 2, radii[i])
            x += CLUSTER_GAP * radii[i]
        top -= height
    return [Disc(d.x, d.y - top / 2, d.radius) for d in (placed[i] for i in range(len(sizes)))]


def member_positions(disc: Disc, count: int) -> list[tuple[float, float]]:
    """Places for ``count`` members inside ``disc``, in order (the first at the centre)."""
    return [(disc.x + dx, disc.y + dy) for dx, dy in (sunflower(j, MEMBER_SPACING) for j in range(count))]
