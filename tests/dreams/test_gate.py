"""The hallucination gate, the extractive summary and clump selection, on literal examples (no database)."""
from __future__ import annotations

import pytest

from dreams.abstraction import BadAbstraction, abstraction_prompt, extractive, parse_abstraction
from dreams.candidates import ClumpRules, ClusterView, Member, select_clumps, signature
from dreams.gate import gate

SOURCES = ["Lena grows tomatoes in the greenhouse", "Lena waters the tomatoes each morning",
           "The greenhouse tomatoes ripen in July"]


def test_a_grounded_abstraction_passes():
    assert gate("Lena grows and waters tomatoes in her greenhouse; they ripen in July.", SOURCES,
                min_support=0.8).accepted


@pytest.mark.parametrize("abstraction,reason", [
    ("Lena grows 40 tomatoes in the greenhouse.", "number 40 is in no source grain"),
    ("Lena and Marco grow tomatoes in the greenhouse.", "name marco is in no source grain"),
    ("Lena grows tomatoes. She sells peppers at the market.", "only 0% of its content words"),
])
def test_an_added_number_name_or_claim_is_rejected_and_the_sentence_named(abstraction, reason):
    verdict = gate(abstraction, SOURCES, min_support=0.8)
    assert not verdict.accepted and verdict.reason.startswith(reason)
    assert verdict.failing_sentence and verdict.failing_sentence in abstraction


def test_speaker_names_count_as_known_names():
    sources = ["Caroline: I went to the pride parade", "Melanie: Caroline went to the parade with friends"]
    assert gate("Caroline went to the pride parade.", sources, min_support=0.8).accepted


def test_an_empty_abstraction_is_rejected():
    assert not gate("   ", SOURCES, min_support=0.8).accepted


def test_the_extractive_summary_merges_the_most_central_statements():
    assert extractive(SOURCES, statements=2) == \
        "Lena grows tomatoes in the greenhouse. Lena waters the tomatoes each morning."
    assert gate(extractive(SOURCES, statements=2), SOURCES, min_support=1.0).accepted


def test_the_extractive_summary_stays_within_what_a_grain_holds():
    """Two long central grains merged passed MAX_CONTENT_CHARS: the store refused it and the whole cycle ended."""
    assert extractive(SOURCES, statements=3, max_chars=80) == \
        "Lena grows tomatoes in the greenhouse. Lena waters the tomatoes each morning."
    assert extractive(["x" * 60, *SOURCES], statements=2, max_chars=50) == "Lena grows tomatoes in the greenhouse."
    assert extractive(SOURCES, statements=3, max_chars=20) == ""


def test_the_llm_answer_is_read_strictly():
    assert parse_abstraction('{"abstraction": "  Lena  grows tomatoes. "}', max_chars=100) == "Lena grows tomatoes."
    for bad in ("no json", '{"summary": "x"}', '{"abstraction": ""}', '{"abstraction": "' + "x" * 101 + '"}'):
        with pytest.raises(BadAbstraction):
            parse_abstraction(bad, max_chars=100)
    assert "- Lena waters the tomatoes each morning" in abstraction_prompt(SOURCES)


RULES = ClumpRules(min_sources=3, max_sources=2, min_internal_weight=0.2, recent_seconds=86400.0, per_cycle=2)


def members(*ids: int, accessed: float = 0.0) -> list[Member]:
    return [Member(i, f"grain {i}", f"h{i}", degree=float(10 - i), last_accessed=accessed) for i in ids]


def test_clumps_are_the_most_connected_members_of_dense_recent_clusters():
    now = 10 * 86400.0
    views = [ClusterView(1, members(1, 2, 3, accessed=now), density=0.9, internal_weight=0.5),
             ClusterView(2, members(4, 5, 6), density=0.9, internal_weight=0.5),          # not used recently
             ClusterView(3, members(7, 8), density=1.0, internal_weight=0.9),              # too small
             ClusterView(4, members(9, 10, 11, accessed=now), density=0.9, internal_weight=0.1)]  # too loose
    chosen = select_clumps(views, RULES, done=set(), now=now)
    assert [c.cluster_id for c in chosen] == [1, 2]
    assert [m.grain_id for m in chosen[0].sources] == [1, 2]  # max_sources of the most connected
    assert chosen[0].score == pytest.approx(2 * chosen[1].score)


def test_a_clump_dreamt_of_before_is_skipped_until_it_changes():
    view = ClusterView(1, members(1, 2, 3), density=0.9, internal_weight=0.5)
    (clump,) = select_clumps([view], RULES, done=set(), now=0.0)
    assert select_clumps([view], RULES, done={clump.signature}, now=0.0) == []
    changed = ClusterView(1, [Member(1, "grain 1, edited", "h1-new", 9.0, 0.0), *members(2, 3)], 0.9, 0.5)
    assert select_clumps([changed], RULES, done={clump.signature}, now=0.0)[0].signature != clump.signature
    assert signature(members(1, 2)) == signature(list(reversed(members(1, 2))))
