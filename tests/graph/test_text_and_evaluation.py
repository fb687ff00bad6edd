"""DB-free tests of query terms, content hashing and evaluation scoring."""
from __future__ import annotations

from bench.evaluation import Scores, questions, session_time, turns
from grains.content import content_hash, normalise
from graph.algorithms.text import fts5_or, learned_cues, rare_terms, terms


def test_terms_drop_stopwords_possessives_and_repeats():
    assert terms("What is Caroline's favourite book? The book!", 10) == ["caroline", "favourite", "book"]


def test_terms_keep_stopwords_when_nothing_else_is_left():
    assert terms("Who is she?", 10) == ["who", "is", "she"]


def test_fts5_or_quotes_every_term_so_no_syntax_survives():
    assert fts5_or(terms('NEAR(a "b") OR c*', 10)) == '"near" OR "b" OR "c"'
    assert fts5_or(['say"hi']) == '"say""hi"'


def test_rare_terms_keep_the_rarest_known_words_and_drop_common_ones():
    words = ["caroline", "support", "group", "zebra"]
    stems = {"caroline": "carolin", "support": "support", "group": "group", "zebra": "zebra"}
    freq = {"carolin": 900, "support": 12, "group": 40}
    assert rare_terms(words, stems, freq, max_terms=5, max_docs=100) == ["support", "group"]
    assert rare_terms(words, stems, freq, max_terms=1, max_docs=100) == ["support"]
    assert rare_terms(["caroline"], stems, freq, max_terms=5, max_docs=100) == ["caroline"]
    assert rare_terms(["zebra"], stems, freq, max_terms=5, max_docs=100) == []


def test_a_common_word_left_alone_is_matched_only_while_bm25_still_weighs_it():
    """The fallback to the single rarest word stops at words in half the grains or more: BM25 gives them no
    weight, and matching one would score every grain that has it to rank them by length alone."""
    stems = {"note": "note", "caroline": "carolin", "truxol": "truxol"}
    freq = {"note": 100_000, "carolin": 49_999}
    assert rare_terms(["note", "caroline"], stems, freq, max_terms=5, max_docs=5_000, grains=100_000) == ["caroline"]
    assert rare_terms(["note", "truxol"], stems, freq, max_terms=5, max_docs=5_000, grains=100_000) == []
    freq["carolin"] = 50_000
    assert rare_terms(["note", "caroline"], stems, freq, max_terms=5, max_docs=5_000, grains=100_000) == []
    assert rare_terms(["note"], stems, {"note": 2_000}, max_terms=5, max_docs=2_000, grains=2_500) == ["note"]


def test_without_a_last_resort_no_word_past_the_bound_is_matched():
    """The store's neighbour search: a text of common words alone matches nothing, at any count."""
    stems = {"plan": "plan", "visit": "visit", "orchid": "orchid"}
    freq = {"plan": 201, "visit": 15_000, "orchid": 3}
    assert rare_terms(["plan", "visit"], stems, freq, max_terms=5, max_docs=200, grains=100_000) == ["plan"]
    assert rare_terms(["plan", "visit"], stems, freq, max_terms=5, max_docs=200, grains=100_000,
                      last_resort=False) == []
    assert rare_terms(["plan", "orchid"], stems, freq, max_terms=5, max_docs=200, grains=100_000,
                      last_resort=False) == ["orchid"]


def test_learned_cues_add_only_the_query_words_the_grain_lacks_and_keep_the_newest():
    content = "Mel adopted a greyhound called Pixel."
    assert learned_cues("", content, "What dog did Mel adopt?", max_terms=8) == "dog adopt"
    assert learned_cues("dog adopt", content, "Which pet does Mel have, a dog?", max_terms=8) == "dog adopt pet"
    assert learned_cues("dog adopt", content, "greyhound Pixel", max_terms=8) == "dog adopt"
    assert learned_cues("a b c", content, "pet dog", max_terms=3) == "c pet dog"
    assert learned_cues("dog", content, "pet", max_terms=0) == ""


def test_content_hash_ignores_case_and_spacing():
    assert content_hash("Paris  is the\ncapital") == content_hash(" paris is the capital ")
    assert normalise("  a \t b ") == "a b"


SAMPLE = {
    "sample_id": "s1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely!"}],
    },
    "qa": [
        {"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
        {"question": "joined", "answer": "x", "evidence": ["D1:1; D1:2", "D9:9", "D"], "category": 1},
        {"question": "none left", "answer": "x", "evidence": ["D9:9"], "category": 2},
        {"question": "adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
    ],
}


def test_turns_carry_speaker_context_and_session_time():
    found = list(turns([SAMPLE]))
    assert [t.content for t in found] == ["Ann: I adopted a cat.", "Bo: Lovely!"]
    assert found[0].context == "s1/session_1"
    assert found[0].occurred_at == session_time("1:56 pm on 8 May, 2023")
    assert session_time("not a date") is None


def test_questions_normalise_evidence_and_skip_the_unanswerable():
    known = {("s1", "D1:1"), ("s1", "D1:2")}
    asked = list(questions([SAMPLE], known))
    assert [(q.text, q.evidence) for q in asked] == [("What did Ann adopt?", ("D1:1",)),
                                                    ("joined", ("D1:1", "D1:2"))]


def test_scores_count_any_evidence_hit_and_reciprocal_rank():
    scores = Scores()
    scores.add([5, 6, 7, 8, 9, 1], {1}, category=4)  # rank 6: in top 10, not top 5
    scores.add([1, 2], {2, 3}, category=1)  # rank 2; one of its two evidence turns found
    scores.add([4], {1}, category=4)  # miss
    figures = scores.as_dict()
    categories = figures.pop("categories")
    assert figures == {"recall@5": round(1 / 3, 4), "recall@10": round(2 / 3, 4),
                       "mrr": round((1 / 6 + 1 / 2) / 3, 4), "evidence@10": round((1 + 1 / 2 + 0) / 3, 4)}
    assert categories["1"] == {"questions": 1, "recall@5": 1.0, "recall@10": 1.0, "mrr": 0.5, "evidence@10": 0.5}
    assert categories["4"]["questions"] == 2 and categories["4"]["recall@10"] == 0.5


def test_split_by_sample_is_seeded_disjoint_and_per_conversation():
    from bench.evaluation import Question, split_by_sample

    asked = [Question(s, f"{s}-{i}", 1, ("D1:1",)) for s in ("a", "b") for i in range(5)]
    train, test = split_by_sample(asked, seed=3)
    assert {q.text for q in train}.isdisjoint({q.text for q in test})
    assert len(train) + len(test) == 10 and sum(q.sample == "a" for q in train) == 2
    assert split_by_sample(asked, seed=3) == (train, test)
    assert split_by_sample(asked, seed=4) != (train, test)
