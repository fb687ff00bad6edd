"""The learned re-ranker: its pure updates, and what feedback teaches it through the services."""
from __future__ import annotations

import math

import pytest

from graph.algorithms.ranker import (
    RankerSteps,
    adjustment,
    asks_when,
    grain_features,
    learned_score,
    pair_updates,
    query_words,
)
from graph.models import RankerWeight, TraceItem
from graph.services import feedback_record, grain_retrieve
from memory.store import grain_store

STEPS = RankerSteps(rate=0.1, word_rate=0.2, bound=1.0, min_match=-0.5)


def features(content: str, query: str = "Where does Ana ride her horse?", hops: int = 0, score: float = 1.0,
             best: float = 1.0, **more: object) -> dict:
    return grain_features(content=content, query_words=query_words(query), hops=hops, score=score, best=best,
                          **more)


def test_features_of_a_grain_and_its_match():
    f = features("Ana: Do you ride?", hops=1, score=0.5, best=2.0)
    assert f["question"] == 1.0 and f["entry"] == 0.0
    assert f["length"] == pytest.approx(math.log1p(4)) and f["match"] == pytest.approx(math.log(0.25))
    assert f["words"] == ["ana", "ride"]  # the query's words the content states


def test_a_question_about_time_marks_the_grains_that_place_something_in_time():
    assert asks_when("When did Ana buy her horse?") and asks_when("What year did she move?")
    assert asks_when("How long has Ana ridden?") and not asks_when("Where does Ana ride her horse?")
    assert not asks_when("Whenever Ana rides, who comes?")  # a word that only starts like one
    timed = ("Ana: I bought him last spring.", "Ana: We moved in 2019.", "Ana: I rode yesterday!")
    assert all(features(c, when=True)["when"] == 1.0 for c in timed)
    assert features("Ana: I bought him from a farmer.", when=True)["when"] == 0.0  # nothing about time
    assert features(timed[0], when=False)["when"] == 0.0  # the query does not ask when


def test_the_speaker_self_and_meaning_features():
    f = features("Ana: My horse is called Comet.", spoken=True, meaning=0.42)
    assert f["speaker"] == 1.0 and f["self"] == 1.0 and f["meaning"] == 0.42
    f = features("Jon: That horse looks fast.")
    assert f["speaker"] == 0.0 and f["self"] == 0.0 and f["meaning"] == 0.0
    assert features("Jon: Mine is older, we've had him for years.")["self"] == 1.0


def test_nothing_learned_changes_nothing():
    assert adjustment(features("Ana rides her horse at dawn."), {}) == 0.0


def test_a_pair_moves_the_weights_toward_the_useful_grain_and_stays_bounded():
    good = features("Ana will ride her grey horse along the beach every morning before work.", score=0.6)
    bad = features("Thanks, Ana!", score=1.0)
    moved = pair_updates([good], [bad], {}, STEPS)
    assert moved["feature:length"] > 0 and moved["feature:match"] < 0
    assert moved["word:horse"] > 0 and moved["word:ride"] > 0  # only the useful grain has them
    assert "word:ana" not in moved  # both have it: it tells them apart no more than before
    assert learned_score(good, moved) - learned_score(bad, moved) > learned_score(good, {}) - learned_score(bad, {})
    weights: dict[str, float] = {}
    for _ in range(200):
        weights.update(pair_updates([good], [bad], weights, STEPS))
    assert all(-1.0 <= w <= 1.0 for w in weights.values()) and weights["feature:match"] >= -0.5


def test_the_step_shrinks_once_the_pair_is_well_ordered():
    good, bad = features("Ana will ride her grey horse at dawn."), features("Thanks, Ana!")
    first = pair_updates([good], [bad], {}, STEPS)["word:horse"]
    later = pair_updates([good], [bad], {"word:horse": 0.9, "word:ride": 0.9}, STEPS)["word:horse"] - 0.9
    assert 0 < later < first


CHATTY = ["Thanks, Ana! See you at the stables.", "Hey Ana, the stables look great!", "Ana, the stables? Cool!"]
FACTS = ["Ana keeps her horse Comet at the old stables by the river and rides him every morning before work.",
         "Ana moved her horse to the stables because the old field flooded twice last winter, she told me."]


@pytest.fixture
def stables(t0, flux_settings):
    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=0)
    return {c: grain_store(content=c, now=t0).grain.pk for c in CHATTY + FACTS}


def ids(result) -> list[int]:
    return [g.id for g in result.grains]


@pytest.mark.django_db
def test_the_ranker_changes_no_order_until_feedback_teaches_it(stables, t0, flux_settings):
    first = grain_retrieve(query="Ana stables", limit=5, now=t0)
    assert all(item.features["words"] for item in TraceItem.objects.filter(trace_id=first.trace_id))  # to learn from
    flux_settings(RERANK_WINDOW=0)
    assert ids(grain_retrieve(query="Ana stables", limit=5, now=t0)) == ids(first)
    assert not RankerWeight.objects.exists()


@pytest.mark.django_db
def test_feedback_on_one_query_teaches_the_ranker_for_another(stables, t0, flux_settings):
    flux_settings(RANKER_RATE=0.5)  # a fast learner, so that one retrieval's feedback shows
    other = "Who is at the stables with Ana?"
    before = ids(grain_retrieve(query=other, limit=5, now=t0))
    assert before.index(stables[FACTS[1]]) > max(before.index(stables[c]) for c in CHATTY)
    first = grain_retrieve(query="Ana stables", limit=5, now=t0)
    for g in first.grains:
        feedback_record(trace_id=first.trace_id, grain_id=g.id, useful=g.id == stables[FACTS[0]], now=t0)
    assert RankerWeight.objects.get(key="feature:length").weight > 0
    # The same feedback again (idempotent) teaches nothing more.
    weights = dict(RankerWeight.objects.values_list("key", "weight"))
    feedback_record(trace_id=first.trace_id, grain_id=stables[FACTS[0]], useful=True, now=t0)
    assert dict(RankerWeight.objects.values_list("key", "weight")) == weights
    # Another grain, never rated, that states facts at length, now comes before the chatty ones on another query.
    after = ids(grain_retrieve(query=other, limit=5, now=t0))
    assert after.index(stables[FACTS[1]]) < min(after.index(stables[c]) for c in CHATTY)


@pytest.mark.django_db
def test_a_useful_grain_ranks_at_least_as_high_for_the_same_query_next_time(stables, t0):
    query = "Ana stables"
    first = grain_retrieve(query=query, limit=5, now=t0)
    target = stables[FACTS[1]]
    for g in first.grains:
        feedback_record(trace_id=first.trace_id, grain_id=g.id, useful=g.id == target, now=t0)
    assert ids(grain_retrieve(query=query, limit=5, now=t0)).index(target) <= ids(first).index(target)


@pytest.mark.django_db
def test_feedback_on_a_when_question_teaches_that_times_answer_when_questions(t0, flux_settings):
    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=0, RANKER_RATE=0.5, SPEAKER_BOOST=1.0, SEMANTIC_ENTRY="off")
    bought = {c: grain_store(content=c, now=t0).grain.pk for c in
              ("Ana bought the saddle last week at the market.", "Ana bought the saddle at the market by the river.")}
    painted = {c: grain_store(content=c, now=t0).grain.pk for c in
               ("Jon painted the fence yesterday with Ana.", "Jon painted the fence slowly with Ana.")}
    timed, untimed = painted.values()
    other = "When did Jon paint the fence?"
    assert ids(grain_retrieve(query=other, limit=2, now=t0)) == [untimed, timed]  # a tie: the newer first
    first = grain_retrieve(query="When did Ana buy the saddle?", limit=2, now=t0)
    for g in first.grains:
        feedback_record(trace_id=first.trace_id, grain_id=g.id, useful=g.id == list(bought.values())[0], now=t0)
    assert RankerWeight.objects.get(key="feature:when").weight > 0
    assert ids(grain_retrieve(query=other, limit=2, now=t0)) == [timed, untimed]
