"""Entry-point search ranks by BM25 as FTS5 computes it, on SQLite and on PostgreSQL alike."""
from __future__ import annotations

import math
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grains.models import Grain
from graph import search as search_module
from graph.search import entry_search, search_terms_fold
from memory.forgetting import grain_purge
from memory.store import grain_store

pytestmark = pytest.mark.django_db

# (content, learned cues). Every word is its own stem in both stemmers, no sentence ends in a stopword, and a
# grain's length in words is the same to FTS5 and to PostgreSQL, so the scores are BM25's exactly.
CORPUS = [
    ("The kettle whistles", None),
    ("The kettle on the old iron stove whistles every single morning", None),
    ("Mira waters the garden", None),
    ("The garden gate squeaks", None),
    ("Tom digs the garden beds", None),
    ("An orchid blooms indoors", None),
    ("The heron waits by the pond", None),
    ("A grey bird waits by the pond", "heron"),
    ("Rain falls on the roof", None),
    ("Snow covers the hills", None),
]


@pytest.fixture
def corpus(t0, flux_settings) -> list[int]:
    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=0)
    ids = [grain_store(content=content, now=t0).grain.pk for content, _ in CORPUS]
    for pk, (_, cues) in zip(ids, CORPUS, strict=True):
        if cues:
            Grain.objects.filter(pk=pk).update(cues=cues)
    return ids


def search(query: str) -> list[tuple[int, float]]:
    return entry_search().search(query, limit=10, statuses=["active"], max_terms=24)


def bm25(query: str, cue_weight: float) -> dict[int, float]:
    """BM25 of each matching document of CORPUS (by index), as FTS5's bm25() with weights (1, ``cue_weight``)."""
    docs = [([w.lower() for w in re.findall(r"\w+", c)], (cues or "").split()) for c, cues in CORPUS]
    avgdl = sum(len(c) + len(k) for c, k in docs) / len(docs)
    scores: dict[int, float] = {}
    for word in query.lower().split():
        n = sum(1 for c, k in docs if word in c or word in k)
        idf = max(math.log((len(docs) - n + 0.5) / (n + 0.5)), 0.0) or 1e-6
        for i, (c, k) in enumerate(docs):
            f = c.count(word) + cue_weight * k.count(word)
            if f:
                dl = len(c) + len(k)
                scores[i] = scores.get(i, 0.0) + idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * dl / avgdl))
    return scores


def test_the_shorter_grain_wins_on_equal_terms(corpus):
    assert [gid for gid, _ in search("kettle")] == [corpus[0], corpus[1]]


def test_a_common_word_left_alone_is_matched_until_it_is_in_half_the_grains(corpus, flux_settings, t0):
    """Common words are not matched unless nothing else is left; then the rarest is, while BM25 still weighs it
    (it ranks as before), and not once half the grains have it (it would rank every one of them by length)."""
    flux_settings(COMMON_TERM_FRACTION=0.2, COMMON_TERM_MIN_DOCS=0)
    assert search("garden zorblax") == search("garden") and len(search("garden")) == 2  # the bound: see below
    for n in range(8):
        grain_store(content=f"A garden row number {n}", now=t0)
    assert search("garden zorblax") == []
    assert search("garden snow") == search("snow")


def test_a_common_word_left_alone_is_ranked_among_its_newest_grains_only(corpus, flux_settings):
    """The last resort costs what any term may: its word is ranked among the newest grains that have it, as many
    as the bound, not among all of them (at 1,000,000 grains up to half a million); a grain of another status
    among those is passed over, and the search reaches no further back for it."""
    flux_settings(COMMON_TERM_FRACTION=0.2, COMMON_TERM_MIN_DOCS=0)  # the bound: 2 of the 10 grains
    assert [gid for gid, _ in search("garden")] == [corpus[3], corpus[4]]  # not the oldest, corpus[2]
    Grain.objects.filter(pk=corpus[3]).update(status="archived")
    assert [gid for gid, _ in search("garden")] == [corpus[4]]
    Grain.objects.filter(pk=corpus[4]).update(status="archived")
    assert entry_search().search("garden", limit=1, statuses=["active"], max_terms=24) == []
    assert [gid for gid, _ in entry_search().search("garden", limit=1, statuses=["archived"], max_terms=24)] \
        == [corpus[3]]


def test_the_stores_bound_on_common_words_has_no_last_resort(corpus):
    """A store's neighbour search never matches a term past its bound, however few are left: a grain of common
    words alone would otherwise score every grain that has its rarest (at 100,000 grains, thousands a grain,
    the writer waiting)."""
    store_search = entry_search(max_docs=2)  # as the store's, with STORE_LINK_MAX_DOCS 2
    assert [gid for gid, _ in store_search.search("orchid garden", limit=10, statuses=["active"], max_terms=5)] \
        == [corpus[5]]
    assert store_search.search("garden", limit=10, statuses=["active"], max_terms=5) == []
    assert len(search("garden")) == 3  # a retrieval still matches it, as its last resort


def test_a_rare_term_outweighs_a_common_one_and_ties_go_by_id(corpus):
    assert [gid for gid, _ in search("garden orchid")] == [corpus[5], corpus[2], corpus[3], corpus[4]]


def test_a_cue_word_counts_for_cue_weight(corpus, flux_settings):
    assert [gid for gid, _ in search("heron")] == [corpus[6], corpus[7]]  # CUE_WEIGHT 0.5
    flux_settings(CUE_WEIGHT=3.0)
    assert [gid for gid, _ in search("heron")] == [corpus[7], corpus[6]]


@pytest.mark.parametrize("query", ["kettle", "garden orchid", "heron", "heron pond kettle"])
@pytest.mark.parametrize("cue_weight", [0.5, 3.0])
def test_scores_are_bm25_as_fts5_computes_it(corpus, flux_settings, query, cue_weight):
    flux_settings(CUE_WEIGHT=cue_weight)
    expected = {corpus[i]: score for i, score in bm25(query, cue_weight).items()}
    found = dict(search(query))
    assert found.keys() == expected.keys()
    assert all(found[gid] == pytest.approx(score, rel=1e-9) for gid, score in expected.items()), (found, expected)


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_grains_of_other_statuses_are_passed_over_however_many_rank_first(corpus, limit):
    """The best matches are ranked before their statuses are looked up; when too few of them may be returned,
    the search still finds the next ones (the same answer as ranking only the grains of the wanted statuses)."""
    everyone = [gid for gid, _ in entry_search().search("garden orchid", limit=10, statuses=["active"],
                                                        max_terms=24)]
    Grain.objects.filter(pk__in=everyone[:3]).update(status="quarantined")  # the three best, of four
    found = entry_search().search("garden orchid", limit=limit, statuses=["active"], max_terms=24)
    assert [gid for gid, _ in found] == everyone[3:3 + limit]
    both = entry_search().search("garden orchid", limit=limit, statuses=["active", "quarantined"], max_terms=24)
    assert [gid for gid, _ in both] == everyone[:limit]


def test_search_many_answers_each_query_as_search_does_alone(corpus):
    """A store searches for all its grains at once (the statuses of every query's best looked up together)."""
    Grain.objects.filter(pk=corpus[2]).update(status="quarantined")
    queries = ["garden orchid", "kettle", "unheard-of words", "heron pond", "garden"]
    together = entry_search().search_many(queries, limit=2, statuses=["active"], max_terms=24)
    assert together == [entry_search().search(q, limit=2, statuses=["active"], max_terms=24) for q in queries]
    assert together[0] == search("garden orchid")[:2] and corpus[2] not in {gid for gid, _ in together[4]}


def test_a_word_is_stemmed_by_the_index_once(corpus):
    """The stems of a query's words are asked of the index's tokenizer the first time only; a stemmed form
    finds what its stem finds either way."""
    stems = search_module._stems
    stems._by_backend.clear()
    with CaptureQueriesContext(connection) as first:
        gardens = search("gardens kettles")
    with CaptureQueriesContext(connection) as again:
        assert search("gardens kettles") == gardens
    asked = [q["sql"] for q in first.captured_queries if "flux_probe" in q["sql"] or "to_tsvector" in q["sql"]]
    assert asked
    assert not [q for q in again.captured_queries if "flux_probe" in q["sql"] or "to_tsvector" in q["sql"]]
    assert {gid for gid, _ in gardens} == {gid for gid, _ in search("garden kettle")} == {
        corpus[0], corpus[1], corpus[2], corpus[3], corpus[4]}


def test_the_stems_remembered_are_bounded():
    stems = search_module._Stems()
    stems.limit = 3
    asked: list[list[str]] = []

    def look_up(words: list[str]) -> dict[str, str]:
        asked.append(words)
        return {w: w.rstrip("s") for w in words if w != "the"}  # "the" has no stem, as a stopword

    assert stems.of("fts5", ["cats", "the"], look_up) == {"cats": "cat"}
    assert stems.of("fts5", ["the", "cats"], look_up) == {"cats": "cat"} and asked == [["cats", "the"]]
    assert stems.of("fts5", ["dogs", "hens"], look_up) == {"dogs": "dog", "hens": "hen"}  # 4 > 3: starts again
    assert stems.of("fts5", ["cats", "dogs"], look_up) == {"cats": "cat", "dogs": "dog"}
    assert asked == [["cats", "the"], ["dogs", "hens"], ["cats"]]
    assert stems.of("postgresql", ["dogs"], look_up) == {"dogs": "dog"} and asked[-1] == ["dogs"]  # per backend


@pytest.mark.postgres_only  # FTS5 keeps its own vocabulary
def test_postgresqls_document_frequencies_and_postings_are_kept_in_step_through_every_write_and_fold(
        corpus, t0, monkeypatch):
    def kept() -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT lexeme, sum(docs) FROM grain_fts_terms GROUP BY lexeme HAVING sum(docs) <> 0")
            return {lexeme: int(docs) for lexeme, docs in cursor.fetchall()}

    def counted() -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT u.lexeme, count(*) FROM grains_grain g CROSS JOIN LATERAL "
                           "unnest(tsvector_to_array(g.fts_doc)) u(lexeme) GROUP BY u.lexeme")
            return dict(cursor.fetchall())

    def postings_in_step() -> bool:
        """The inverted index the triggers keep holds each grain's lexemes, counts and length as they are."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT lexeme, grain_id, content_tf, cue_tf, length FROM grain_fts_postings")
            kept_rows = sorted(cursor.fetchall())
            cursor.execute("SELECT u.lexeme, g.id, cardinality(array_positions(u.weights, 'A')), "
                           "cardinality(array_positions(u.weights, 'B')), g.fts_length "
                           "FROM grains_grain g CROSS JOIN LATERAL unnest(g.fts_doc) u")
            return kept_rows == sorted(cursor.fetchall()) and len(kept_rows) > 20

    assert kept() == counted() and counted()["garden"] == 3 and counted()["heron"] == 2  # a cue counts
    assert postings_in_step()
    Grain.objects.filter(pk=corpus[2]).update(cues="pond orchid")  # cues changed: lexemes gained
    Grain.objects.filter(pk=corpus[7]).update(cues="")  # and lost
    grain_purge(grain_id=corpus[3], reason="test", now=t0)
    Grain.objects.filter(pk__in=corpus[8:]).delete()
    grain_store(content="The heron fishes in the garden pond", now=t0)
    assert kept() == counted() and counted()["garden"] == 3 and counted()["heron"] == 2
    assert postings_in_step()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM grain_fts_terms")
        rows = cursor.fetchone()[0]
    before = search("heron pond garden")
    monkeypatch.setattr(search_module, "FOLD_CHUNK", 7)  # several transactions
    assert search_terms_fold() > 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM grain_fts_terms")
        assert cursor.fetchone()[0] < rows
    assert kept() == counted()
    search_module._common._by_db.clear()  # frequencies read anew
    assert search("heron pond garden") == before and len(before) == 5
