"""DB-free tests of entry fusion, the date spans a query names, and the vector table."""
from __future__ import annotations

import importlib.util
from datetime import UTC, datetime

import pytest

from graph.algorithms.fusion import boost, fuse_by_rank
from graph.algorithms.when import Span, date_spans
from tests.servers import require


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_fusion_scales_lexical_hits_and_adds_semantic_ones_by_rank():
    fused = dict(fuse_by_rank([(1, 8.0), (2, 4.0)], [3, 2], weight=0.5, rank_decay=10.0))
    assert fused[1] == 1.0 and fused[2] == pytest.approx(0.5 + 0.5 / 1.1)
    assert fused[3] == 0.5  # the nearest semantic hit, which shares no word
    assert [g for g, _ in fuse_by_rank([(1, 8.0), (2, 4.0)], [3, 2], weight=0.5, rank_decay=10.0)] == [1, 2, 3]


def test_fusion_without_lexical_hits_ranks_by_meaning_alone():
    assert [g for g, _ in fuse_by_rank([], [7, 5, 9], weight=0.5, rank_decay=10.0)] == [7, 5, 9]


def test_fusion_breaks_ties_by_lexical_order():
    assert [g for g, _ in fuse_by_rank([(4, 2.0), (5, 2.0)], [], weight=0.5, rank_decay=1.0)] == [4, 5]


def test_boost_raises_only_the_chosen_and_reorders():
    assert boost([(1, 1.0), (2, 0.6)], {2}, 2.0) == [(2, 1.2), (1, 1.0)]
    assert boost([(1, 1.0), (2, 0.6)], set(), 2.0) == [(1, 1.0), (2, 0.6)]


@pytest.mark.parametrize("text, spans", [
    ("What did Gina find on 1 February, 2023?", [Span(utc(2023, 2, 1), utc(2023, 2, 2))]),
    ("What painting did Melanie show on October 13, 2023?", [Span(utc(2023, 10, 13), utc(2023, 10, 14))]),
    ("the 13th of Oct 2023", [Span(utc(2023, 10, 13), utc(2023, 10, 14))]),
    ("logged 2023-10-13", [Span(utc(2023, 10, 13), utc(2023, 10, 14))]),
    ("What did they paint in July 2023?", [Span(utc(2023, 7, 1), utc(2023, 8, 1))]),
    ("a party in December, 2022", [Span(utc(2022, 12, 1), utc(2023, 1, 1))]),
    ("When did Melanie go camping in June?", [Span(month=6)]),
    ("Where did we go in 2022?", [Span(utc(2022, 1, 1), utc(2023, 1, 1))]),
    ("May I ask what we decided? Will they march?", []),
    ("on February 30, 2023", []),
    ("what happened last week", []),
])
def test_date_spans_read_days_months_and_years(text, spans):
    assert date_spans(text) == spans


def test_a_day_is_read_once_and_several_dates_are_all_read():
    assert date_spans("on May 23, 2023 and in June") == [Span(utc(2023, 5, 23), utc(2023, 5, 24)), Span(month=6)]


def test_span_holds_a_moment_within_it():
    day = Span(utc(2023, 5, 23), utc(2023, 5, 24))
    assert day.holds(utc(2023, 5, 23, 13, 56)) and not day.holds(utc(2023, 5, 24))
    assert Span(month=6).holds(utc(2019, 6, 30)) and not Span(month=6).holds(utc(2019, 7, 1))


def test_vector_table_grows_and_returns_each_id_once_nearest_first():
    require(importlib.util.find_spec("numpy") is not None, "numpy is not installed (pip install -e .)")
    import numpy as np

    from graph.algorithms.vectors import VectorTable

    table = VectorTable(2)
    assert table.nearest(np.array([1.0, 0.0]), 3) == []
    for start in range(0, 3000, 1000):  # past the first capacity
        angles = np.arange(start, start + 1000) / 3000 * np.pi / 2
        table.append(np.arange(start, start + 1000), np.stack([np.cos(angles), np.sin(angles)], axis=1))
    table.append(np.array([2999]), np.array([[1.0, 0.0]]))  # 2999 embedded again, now along x
    found = table.nearest(np.array([1.0, 0.0]), 3)
    assert [gid for gid, _ in found] == [0, 2999, 1]
    assert found[0][1] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        table.append(np.array([1]), np.zeros((1, 3)))


def test_named_people_are_the_capitalised_words_and_their_grains_are_boosted():
    from graph.algorithms.speakers import named, speaker_factors, spoken_by

    people = named("What did Ana's and Bo Li's kids paint in May?")
    assert people == {"What", "Ana", "Bo", "Li", "May"}
    speakers = {1: "Ana", 2: "Bo Li", 3: "Cy", 4: None}
    assert speaker_factors(spoken_by(speakers, people), 2.0) == {1: 2.0, 2: 2.0}
    assert speaker_factors(spoken_by(speakers, people), 1.0) == {}
    assert speaker_factors(spoken_by(speakers, frozenset()), 2.0) == {}


def test_a_grain_spoken_by_the_person_asked_about_ranks_first(db, t0, flux_settings):
    from memory.retrieval import grain_retrieve
    from memory.store import grain_store

    said = grain_store(content="Ana: I painted the lake at sunrise.", context="c", now=t0).grain
    praised = grain_store(content="Bo: Ana, your lake painting at sunrise is the best painting Ana ever made!",
                          context="c", now=t0).grain
    top = lambda: grain_retrieve(query="What did Ana paint?", now=t0, enforce_feedback=False).grains[0].id  # noqa: E731
    flux_settings(SPEAKER_BOOST=1.0)
    assert top() == praised.pk  # on words alone, the other speaker's praise matches best
    flux_settings(SPEAKER_BOOST=2.0)
    assert top() == said.pk


def test_the_approximate_index_finds_nearly_all_of_the_exact_nearest_and_round_trips_a_file(tmp_path):
    require(importlib.util.find_spec("usearch") is not None, "usearch is not installed (pip install -e .)")
    import numpy as np

    from graph.algorithms.vectors import ApproximateIndex, VectorTable

    rng = np.random.default_rng(7)
    centres = rng.normal(size=(200, 64)).astype(np.float32)
    rows = centres[rng.integers(0, 200, 6000)] + 0.5 * rng.normal(size=(6000, 64)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    ids = np.arange(6000) * 7 + 3  # any ids
    exact, approx = VectorTable(64), ApproximateIndex(64)
    for start in range(0, 6000, 1500):  # incrementally, as grains arrive
        exact.append(ids[start:start + 1500], rows[start:start + 1500])
        approx.append(ids[start:start + 1500], rows[start:start + 1500])
    queries = rows[rng.integers(0, 6000, 100)] + 0.1 * rng.normal(size=(100, 64)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    overlap = [len({i for i, _ in exact.nearest(q, 30)} & {i for i, _ in approx.nearest(q, 30)}) / 30
               for q in queries]
    assert np.mean(overlap) >= 0.9
    first = approx.nearest(queries[0], 5)
    assert [s for _, s in first] == sorted((s for _, s in first), reverse=True)
    assert first[0][1] == pytest.approx(exact.nearest(queries[0], 1)[0][1], abs=0.02)  # int8: cosine to 2 decimals

    approx.append(ids[:1], -rows[:1])  # an id embedded again: its new vector replaces the old one
    assert approx.size == 6000
    assert approx.nearest(-rows[0], 1)[0][0] == ids[0]
    path = tmp_path / "index.usearch"
    path.write_bytes(approx.dump())
    loaded = ApproximateIndex.load(str(path), 64)
    assert loaded.size == 6000 and loaded.nearest(queries[0], 5) == approx.nearest(queries[0], 5)
    with pytest.raises(ValueError, match="not a vector index of 32 dimensions"):
        ApproximateIndex.load(str(path), 32)
    path.write_bytes(b"damaged")
    with pytest.raises(ValueError, match="not a readable vector index"):
        ApproximateIndex.load(str(path), 64)
