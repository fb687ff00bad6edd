"""The dashboard layout (DB-free): clusters never overlap, members stay in their disc, same data same picture."""
from __future__ import annotations

import math
import random

from dashboard.layout import cluster_discs, member_positions


def _overlaps(discs) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(discs)) for j in range(i + 1, len(discs))
            if math.dist((discs[i].x, discs[i].y), (discs[j].x, discs[j].y)) < discs[i].radius + discs[j].radius]


def test_cluster_discs_do_not_overlap_for_mixed_sizes():
    rng = random.Random(7)
    for _ in range(20):
        sizes = [rng.choice([1, 2, 5, 20, 80, 400, 3000]) for _ in range(rng.randint(1, 120))]
        discs = cluster_discs(sizes)
        assert len(discs) == len(sizes)
        assert _overlaps(discs) == []
        by_size = sorted(zip(sizes, (d.radius for d in discs), strict=True))
        assert all(r1 < r2 for (s1, r1), (s2, r2) in zip(by_size, by_size[1:], strict=False) if s1 < s2)
        assert all(r1 == r2 for (s1, r1), (s2, r2) in zip(by_size, by_size[1:], strict=False) if s1 == s2)


def test_a_disc_holds_its_members_apart_and_grows_with_their_square_root():
    for size in (1, 7, 60, 900):
        disc = cluster_discs([size])[0]
        places = member_positions(disc, size)
        assert all(math.dist(p, (disc.x, disc.y)) <= disc.radius for p in places)
        if size > 1:
            assert min(math.dist(a, b) for i, a in enumerate(places) for b in places[i + 1:]) > 0.5
    assert 1.8 < cluster_discs([400])[0].radius / cluster_discs([100])[0].radius < 2.2  # area follows members


def test_the_picture_is_centred_and_deterministic():
    sizes = [3, 50, 7, 7, 1]
    discs = cluster_discs(sizes)
    assert cluster_discs(sizes) == discs
    xs = [d.x - d.radius for d in discs] + [d.x + d.radius for d in discs]
    ys = [d.y - d.radius for d in discs] + [d.y + d.radius for d in discs]
    assert abs(min(ys) + max(ys)) < 3.0 and abs(min(xs) + max(xs)) < 3.0 * max(d.radius for d in discs)
    assert cluster_discs([]) == []


def test_members_fill_their_disc_first_one_at_the_centre():
    disc = cluster_discs([200, 40])[1]
    places = member_positions(disc, 40)
    assert len(places) == 40 == len(set(places))
    assert math.dist(places[0], (disc.x, disc.y)) < 1.0
    assert all(math.dist(p, (disc.x, disc.y)) <= disc.radius for p in places)
    nearest = min(math.dist(a, b) for i, a in enumerate(places) for b in places[i + 1:])
    assert nearest > 0.5
