"""Every rule that reads user text runs in linear time: pathological inputs finish quickly.

Each input is a run of one unit (commas, spaces, quotes, a 4,000-character word, dates...) long enough that a
quadratic rule takes seconds where a linear one takes milliseconds; the bound is generous (a linear rule stays
far below it on a loaded machine) and a backtracking regex blows through it by one to two orders of magnitude.
"""
from __future__ import annotations

import time

import pytest

from dreams.abstraction import extractive, parse_abstraction
from dreams.gate import gate
from epistemic import causes
from epistemic.judge import parse_verdict
from epistemic.rules import relation_between
from epistemic.words import sentences
from grains.content import normalise
from grains.extraction import parse_facts
from graph.algorithms.text import all_words, learned_cues, terms
from graph.algorithms.when import date_spans

LENGTH = 16_000  # characters: four times the longest grain (MAX_CONTENT_CHARS 4,000)
BOUND = 1.0  # seconds for one call; linear rules take well under a tenth of it here
UNITS = [",", " ", ", ", "'", '"', "a", "-", " - ", "\u2014 ", "1", "+1-", "1-", "Dr. ", "Dr.", "a.", ". ", "a@",
         "e.g.", "Ab ", "\n", "!", "?", ";", ":", "(", "x , so ", "a led ", "in may ", "because ", "no longer ",
         "12:00pm ", "march 3 ", "on may 2020 ", "because of the ", "which is why ", "Bob: ", "a'", "'s "]
RULES = {
    "relation_between": lambda s: relation_between(s, s + " more"),
    "sentences": sentences,
    "date_spans": date_spans,
    "terms": lambda s: terms(s, 10),
    "all_words": all_words,
    "learned_cues": lambda s: learned_cues("", s, s, max_terms=8),
    "normalise": normalise,
    "dream_gate": lambda s: gate(s, [s, s + " more"], min_support=0.5),
    "extractive": lambda s: extractive([s, s + " more"], statements=3),
    "parse_facts": lambda s: parse_facts(s, max_facts=100, max_chars=5000),
    "parse_abstraction": lambda s: parse_abstraction(s, max_chars=5000),
    "parse_verdict": parse_verdict,
}


def _inputs(unit: str) -> list[str]:
    run = unit * (LENGTH // len(unit))
    return [run, "because " + run + " zebra stripes", "Caroline: I moved " + run + " to Paris."]


@pytest.mark.parametrize("unit", UNITS, ids=repr)
@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_is_fast_on_pathological_text(rule, unit):
    for text in _inputs(unit):
        causes._causal_clauses.cache_clear()
        causes._stated.cache_clear()
        started = time.perf_counter()
        try:
            RULES[rule](text)
        except ValueError:  # a parser refusing garbage is fine; hanging on it is not
            pass
        took = time.perf_counter() - started
        assert took < BOUND, f"{rule} took {took:.2f} s on {len(text)} characters of {unit!r}"


def test_the_reported_comma_run_is_read_in_milliseconds():
    """The case that once stalled the writer: 3,960 commas after "because" took 2.2 s per pair."""
    text = "because " + "," * 3960 + " zebra stripes"
    started = time.perf_counter()
    relation_between(text, "Zebra stripes confuse flies.")
    assert time.perf_counter() - started < 0.1
