"""flux_extracts mode: facts from a local LLM (a fake Ollama on loopback), nothing half-stored on failure."""
from __future__ import annotations

import json

import pytest

from core.errors import InvalidInput, LLMBadAnswer, LLMUnavailable
from core.net import free_port
from grains.extraction import BadAnswer, extraction_prompt, parse_facts
from grains.models import Grain, Source
from memory.store import grain_extract
from tests.servers import fake_ollama, raw_http_server

TEXT = "Hi! I'm Lena. I moved to Lisbon in March 2024 and I work as a nurse."
FACTS = ["Lena moved to Lisbon in March 2024.", "Lena works as a nurse."]


def answering(facts) -> callable:
    return lambda body: (200, {"model": body["model"], "response": json.dumps({"facts": facts}), "done": True})


def test_parse_facts_trims_and_drops_repeats():
    answer = json.dumps({"facts": [" Lena  is a nurse. ", "Lena is a nurse.", "", "Lena lives in Lisbon."]})
    assert parse_facts(answer, max_facts=10, max_chars=100) == ["Lena is a nurse.", "Lena lives in Lisbon."]


@pytest.mark.parametrize("answer,text", [
    ("Sure! Here are the facts", "did not answer JSON"),
    (json.dumps({"facts": "Lena is a nurse"}), "no list of strings"),
    (json.dumps(["Lena is a nurse"]), "no list of strings"),
    (json.dumps({"facts": [f"fact {i}" for i in range(5)]}), "at most 4"),
    (json.dumps({"facts": ["x" * 50]}), "longer than 40"),
])
def test_parse_facts_refuses_bad_answers(answer, text):
    with pytest.raises(BadAnswer, match=text):
        parse_facts(answer, max_facts=4, max_chars=40)


def test_the_prompt_carries_the_text_and_asks_for_json():
    prompt = extraction_prompt(TEXT)
    assert TEXT in prompt and '{"facts":' in prompt


@pytest.fixture
def llm(flux_settings):
    def serve(answer):
        server = fake_ollama(answer)
        url, received = server.__enter__()
        flux_settings(OLLAMA_URL=url, LLM_MODEL="tiny-test", LLM_TIMEOUT_SECONDS=5.0)
        servers.append(server)
        return received

    servers: list = []
    yield serve
    for server in servers:
        server.__exit__(None, None, None)


def counts() -> tuple[int, int]:
    return Grain.objects.count(), Source.objects.count()


@pytest.mark.django_db
def test_extracted_facts_become_inferred_grains_linked_to_their_source(llm, t0):
    received = llm(answering(FACTS))
    result = grain_extract(text=TEXT, caller="agent:chat", context="chat-1", now=t0)
    assert [r.grain.content for r in result.results] == FACTS
    assert {r.grain.provenance for r in result.results} == {"ai_inferred"}
    assert all(r.grain.source_id == result.source.pk and r.grain.context == "chat-1" for r in result.results)
    assert result.source.text == TEXT and result.warning is None
    assert received[0]["model"] == "tiny-test" and received[0]["format"] == "json"
    assert received[0]["stream"] is False and TEXT in received[0]["prompt"]


@pytest.mark.django_db
@pytest.mark.parametrize("answer,error,text", [
    (lambda body: (200, {"response": "not json at all"}), LLMBadAnswer, "did not answer JSON"),
    (lambda body: (200, "<html>oops</html>"), LLMBadAnswer, "without a 'response'"),
    (lambda body: (500, {"error": "model 'tiny-test' not found"}), LLMUnavailable, "ollama pull tiny-test"),
])
def test_a_bad_llm_answer_is_a_clear_error_and_stores_nothing(llm, answer, error, text, t0):
    llm(answer)
    with pytest.raises(error, match=text):
        grain_extract(text=TEXT, now=t0)
    assert counts() == (0, 0)


CUT_SHORT = [(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 73\r\n\r\n{\"response\": \"", 0)]
NOT_HTTP = [(b"GARBAGE\r\n\r\n", 0)]
ANSWER = json.dumps({"response": json.dumps({"facts": FACTS})}).encode()
DRIP = [(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ANSWER), 0),
        *((bytes([b]), 0.1) for b in ANSWER)]  # a byte every 0.1 s: each read is quick, the whole is not


@pytest.mark.django_db
@pytest.mark.parametrize("pieces,text", [(CUT_SHORT, "no whole HTTP answer"), (NOT_HTTP, "no whole HTTP answer"),
                                         (DRIP, r"did not finish its answer within 2 s")])
def test_a_reply_cut_short_not_http_or_too_slow_in_all_is_the_llm_unavailable(flux_settings, t0, pieces, text):
    """Unavailable, as a refused connection is (a cut reply was a 500 that skipped EXTRACT_FALLBACK), and
    LLM_TIMEOUT_SECONDS bounds the whole answer, not each read of it."""
    with raw_http_server(pieces) as url:
        flux_settings(OLLAMA_URL=url, LLM_TIMEOUT_SECONDS=2.0)
        with pytest.raises(LLMUnavailable, match=text):
            grain_extract(text=TEXT, now=t0)
        assert counts() == (0, 0)
        flux_settings(EXTRACT_FALLBACK="caller_extracts")
        kept = grain_extract(text=TEXT, now=t0)
        assert [r.grain.content for r in kept.results] == [TEXT] and "stored as given" in kept.warning


@pytest.mark.django_db
def test_facts_that_show_nothing_or_are_not_text_are_left_out(llm, t0):
    """The LLM's zero-width 'fact' or one with half a surrogate pair is no fact: the others are stored (it was
    the caller's 400 invalid_input), and with none left, nothing is, as with no facts."""
    llm(answering(["\u200b\ufeff", FACTS[0], "bad \ud800 text", "nul \u0000 byte"]))  # NUL: the store refuses it
    assert [r.grain.content for r in grain_extract(text=TEXT, now=t0).results] == [FACTS[0]]
    llm(answering(["\u200b"]))
    result = grain_extract(text="Hello again!", now=t0)
    assert result.results == [] and "no facts" in result.warning


@pytest.mark.django_db
def test_an_unreachable_llm_is_a_clear_error_and_stores_nothing(flux_settings, t0):
    flux_settings(OLLAMA_URL=f"http://127.0.0.1:{free_port()}", LLM_TIMEOUT_SECONDS=5.0)
    with pytest.raises(LLMUnavailable, match="cannot be reached.*start Ollama or set OLLAMA_URL"):
        grain_extract(text=TEXT, now=t0)
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_the_configured_fallback_stores_the_text_as_given_with_a_warning(flux_settings, t0):
    flux_settings(OLLAMA_URL=f"http://127.0.0.1:{free_port()}", EXTRACT_FALLBACK="caller_extracts")
    result = grain_extract(text=TEXT, provenance="user_stated", now=t0)
    assert [r.grain.content for r in result.results] == [TEXT]
    assert result.results[0].grain.provenance == "user_stated"
    assert "cannot be reached" in result.warning and "stored as given" in result.warning


@pytest.mark.django_db
def test_no_facts_store_nothing_and_say_so(llm, t0):
    llm(answering([]))
    result = grain_extract(text="Hello there!", now=t0)
    assert result.results == [] and "no facts" in result.warning
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_bad_text_is_refused_before_asking_the_llm(llm, t0):
    received = llm(answering(FACTS))
    with pytest.raises(InvalidInput):
        grain_extract(text="   ", now=t0)
    assert received == []
