"""The periodic epistemic pass, with the LLM judge played by a fake Ollama server on loopback."""
from __future__ import annotations

import json

import pytest

from core.net import free_port
from epistemic.review import epistemic_pass
from graph.models import Conduit
from memory.store import grain_store
from tests.servers import fake_ollama

pytestmark = pytest.mark.django_db


def verdict(relation: str) -> object:
    return lambda body: (200, {"model": body["model"], "response": json.dumps({"relation": relation,
                                                                                "reason": "the judge says so"})})


def store_pair(t0):
    old = grain_store(content="The bakery on Elm Street closed for good", now=t0).grain
    new = grain_store(content="Nina lost her job at the Elm Street bakery", now=t0).grain
    return old, new


def test_the_judge_decides_pairs_the_rules_leave_unrelated(t0, flux_settings):
    old, new = store_pair(t0)
    assert not Conduit.objects.exclude(kind="association").exists()
    with fake_ollama(verdict("caused_by")) as (url, received):
        flux_settings(EPISTEMIC_LLM_JUDGE=True, OLLAMA_URL=url)
        result = epistemic_pass(now=t0)
    assert (result.found, result.judged, result.error) == (1, 1, "")
    relation = Conduit.objects.get(kind="caused_by")
    assert (relation.source_id, relation.target_id, relation.asserted_by) == (new.pk, old.pk, "llm")
    assert relation.note == "llm: the judge says so"
    assert "A: The bakery on Elm Street closed for good" in received[0]["prompt"]
    assert epistemic_pass(now=t0).examined == 0, "a rerun starts after the last grain it examined"


def test_without_the_judge_setting_no_llm_is_asked(t0, flux_settings):
    store_pair(t0)
    with fake_ollama(verdict("contradicts")) as (url, received):
        flux_settings(OLLAMA_URL=url)
        result = epistemic_pass(now=t0)
    assert (result.examined, result.judged, received) == (2, 0, [])


def test_an_unreachable_llm_stops_the_pass_and_the_next_one_resumes(t0, flux_settings):
    store_pair(t0)
    flux_settings(EPISTEMIC_LLM_JUDGE=True, OLLAMA_URL=f"http://127.0.0.1:{free_port()}")
    failed = epistemic_pass(now=t0)
    assert "cannot be reached" in failed.error and failed.found == 0
    with fake_ollama(verdict("caused_by")) as (url, _):
        flux_settings(OLLAMA_URL=url)
        assert epistemic_pass(now=t0).found == 1


def test_a_bad_verdict_is_counted_and_skipped(t0, flux_settings):
    store_pair(t0)
    with fake_ollama(verdict("probably")) as (url, _):
        flux_settings(EPISTEMIC_LLM_JUDGE=True, OLLAMA_URL=url)
        result = epistemic_pass(now=t0)
    assert (result.found, result.bad_verdicts) == (0, 1)
    assert not Conduit.objects.exclude(kind="association").exists()
