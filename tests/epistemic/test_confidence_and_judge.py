"""Confidence rules and the LLM judge's strict reading, on literal values (no database)."""
from __future__ import annotations

import pytest

from epistemic.judge import BadVerdict, judge_prompt, parse_verdict
from grains.confidence import ConfidenceRules, contradiction_loser

DAY = 86400.0
RULES = ConfidenceRules(upper=0.99, corroboration=0.05, contradiction=0.1, useful=0.02, not_useful=0.01,
                        neutral=0.5, half_life_seconds=180 * DAY, floor=0.2)


def test_evidence_moves_confidence_within_bounds():
    assert RULES.raised(0.97, RULES.corroboration) == 0.99
    assert RULES.lowered(0.05, RULES.contradiction) == 0.0
    assert RULES.after_feedback(0.7, True) == pytest.approx(0.72)
    assert RULES.after_feedback(0.7, False) == pytest.approx(0.69)


def test_age_drifts_confidence_down_toward_neutral_never_up():
    assert RULES.aged(0.9, 180 * DAY) == pytest.approx(0.7)
    assert RULES.aged(RULES.aged(0.9, 60 * DAY), 120 * DAY) == pytest.approx(0.7)  # memoryless
    assert RULES.aged(0.3, 1000 * DAY) == 0.3
    assert RULES.aged(0.9, 0) == 0.9


def test_only_a_clearly_less_believed_grain_loses_a_contradiction():
    assert contradiction_loser((1, 0.8), (2, 0.4), margin=0.3) == 2
    assert contradiction_loser((1, 0.3), (2, 0.7), margin=0.3) == 1
    assert contradiction_loser((1, 0.6), (2, 0.5), margin=0.3) is None


def test_the_judge_prompt_names_both_statements_in_order():
    prompt = judge_prompt("Alice moved to Berlin", "Alice lives in Paris")
    assert prompt.index("A: Alice lives in Paris") < prompt.index("B: Alice moved to Berlin")


@pytest.mark.parametrize("answer,kind,source", [
    ('{"relation": "supersedes", "reason": "she moved"}', "supersedes", "new"),
    ('{"relation": "causes"}', "caused_by", "old"),
    ('{"relation": "supports", "reason": ""}', "supports", "new"),
])
def test_a_verdict_names_a_relation_and_its_direction(answer, kind, source):
    relation = parse_verdict(answer)
    assert (relation.kind, relation.source) == (kind, source) and relation.reason.startswith("llm")


def test_none_is_no_relation_and_anything_else_is_a_bad_verdict():
    assert parse_verdict('{"relation": "none"}') is None
    for answer in ("not json", '{"relation": "maybe"}', '["supports"]', '{"kind": "supports"}'):
        with pytest.raises(BadVerdict):
            parse_verdict(answer)
