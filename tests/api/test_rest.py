"""Every endpoint, header form, limit and error of the REST API."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from core.booth import get_booth
from grains.models import ActivityEvent, Caller, Grain
from graph.models import Feedback, Trace
from graph.services import grain_retrieve
from graph.services.traces import SCRUBBED_QUERY, trace_written
from memory.forgetting import grain_purge
from tests.windows import clock_minute, in_one_window


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


# --- store -------------------------------------------------------------------------------------------

def test_store_creates_then_corroborates(api):
    first = api.post("/store", {"content": "Paris is the capital of France", "provenance": "user_stated"})
    assert first.status_code == 201
    assert first.json()["grain"]["provenance"] == "user_stated" and first.json()["created"] is True
    again = api.post("/store", {"content": "paris is the capital of france"})
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["grain"]["id"] == first.json()["grain"]["id"]


@pytest.mark.parametrize("headers,expected", [
    ({"HTTP_X_FLUX_CLIENT": "codex", "HTTP_X_FLUX_ROLE": "chat"}, "codex:chat"),
    ({"HTTP_X_CALLER_ID": "claude:memory_writer"}, "claude:memory_writer"),
    ({}, "anonymous:unknown"),
])
def test_caller_identity_from_either_header_form_or_anonymous(api, headers, expected):
    grain_id = api.post("/store", {"content": "Lena grows tomatoes"}, caller=None, **headers).json()["grain"]["id"]
    assert str(Grain.objects.get(pk=grain_id).caller) == expected
    listed = {f"{c['client']}:{c['role']}": c for c in api.get("/callers").json()["callers"]}
    assert listed[expected]["stored"] == 1


@pytest.mark.parametrize("headers,text", [
    ({"HTTP_X_FLUX_CLIENT": "codex", "HTTP_X_FLUX_ROLE": "overlord"}, "role 'overlord' is not one of"),
    ({"HTTP_X_FLUX_CLIENT": "codex"}, "send both X-Flux-Client and X-Flux-Role"),
    ({"HTTP_X_CALLER_ID": "codex"}, "not of the form 'client:role'"),
    ({"HTTP_X_CALLER_ID": "bad client!:chat"}, "client 'bad client!'"),
])
def test_bad_caller_headers_are_refused(api, headers, text):
    response = api.post("/store", {"content": "x"}, caller=None, **headers)
    assert response.status_code == 400 and text in error_of(response)["message"]
    assert not Grain.objects.exists()


@pytest.mark.parametrize("body,code,status,text", [
    ({"content": ""}, "invalid_input", 400, "'content' is empty"),
    ({"content": " \u200b\ufeff\u2060 "}, "invalid_input", 400, "'content' is empty"),  # nothing that shows
    ({"content": "x" * 4001}, "invalid_input", 400, "the limit is 4000"),
    ({"content": 3}, "invalid_input", 400, "'content' must be a string"),
    ({}, "invalid_input", 400, "missing field(s) content"),
    ({"content": "x", "colour": "red"}, "invalid_input", 400, "unknown field(s) colour"),
    (["content"], "invalid_input", 400, "must be a JSON object"),
    ({"content": "x", "provenance": "rumour"}, "invalid_input", 400, "'provenance'"),
    # stored on SQLite, a 500 on PostgreSQL (no text holds one): a memory could not move to it
    ({"content": "nul\u0000byte"}, "invalid_input", 400, "NUL character (U+0000 at character 3)"),
    ({"content": "x", "context": "a\u0000"}, "invalid_input", 400, "'context' holds a NUL"),
])
def test_bad_store_bodies_get_the_error_contract(api, body, code, status, text):
    response = api.post("/store", body)
    assert response.status_code == status
    err = error_of(response)
    assert err["code"] == code and text in err["message"]
    assert not Grain.objects.exists()


def test_malformed_json_wrong_type_and_wrong_method(api):
    bad = api.client.post("/store", "{not json", content_type="application/json")
    assert bad.status_code == 400 and error_of(bad)["code"] == "invalid_json"
    form = api.client.post("/store", {"content": "x"})
    assert form.status_code == 415 and error_of(form)["code"] == "unsupported_media_type"
    get = api.get("/store")
    assert get.status_code == 405 and error_of(get)["code"] == "method_not_allowed"
    options = api.client.options("/store")  # it answered with the view's docstring
    assert options.status_code == 405 and error_of(options)["code"] == "method_not_allowed"
    missing = api.get("/nowhere")
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    # A key given twice (the last one was stored, unseen) and a body said to be in another charset than JSON's
    # (decoded so: stored garbled).
    twice = api.client.post("/store", '{"content": "Lena", "content": "Bob"}', content_type="application/json")
    assert twice.status_code == 400 and "the key 'content' is given twice" in error_of(twice)["message"]
    body = '{"content": "caf\u00e9"}'.encode()
    latin = api.client.post("/store", body, content_type="application/json; charset=latin-1")
    assert latin.status_code == 400 and "must be UTF-8" in error_of(latin)["message"]
    utf8 = api.client.post("/store", body, content_type="application/json; charset=UTF-8")
    assert utf8.status_code == 201 and utf8.json()["grain"]["content"] == "caf\u00e9"
    assert Grain.objects.count() == 1


def test_tombstoned_content_is_a_conflict(api):
    from memory.forgetting import grain_forget

    gid = api.post("/store", {"content": "old phone 555-0100"}).json()["grain"]["id"]
    grain_forget(grain_id=gid, reason="user request")
    response = api.post("/store", {"content": "old phone 555-0100"})
    assert response.status_code == 409 and error_of(response)["code"] == "tombstoned"
    assert api.post("/store", {"content": "old phone 555-0100", "restore": True}).status_code == 201


# --- batch and rate limits ---------------------------------------------------------------------------

def test_batch_stores_all_in_order(api):
    response = api.post("/store/batch", {"items": [{"content": f"fact number {i}"} for i in range(3)]})
    assert response.status_code == 201 and response.json()["created"] == 3
    assert [i["grain"]["content"] for i in response.json()["items"]] == [f"fact number {i}" for i in range(3)]


def test_batch_with_a_bad_item_is_refused_whole_with_its_index(api):
    items = [{"content": "good one"}, {"content": "good two"}, {"content": "  "}]
    response = api.post("/store/batch", {"items": items})
    assert response.status_code == 400 and error_of(response)["details"]["index"] == 2
    assert not Grain.objects.exists()


def test_batch_of_101_is_refused_whole(api):
    response = api.post("/store/batch", {"items": [{"content": f"fact {i}"} for i in range(101)]})
    assert response.status_code == 400
    assert error_of(response)["details"] == {"field": "items", "count": 101, "limit": 100}
    assert not Grain.objects.exists()


def test_the_501st_grain_in_a_minute_is_refused_and_other_callers_are_not(api):
    def burst(attempt: int) -> tuple[list[int], object, str]:
        caller = f"busy{attempt}:memory_writer"
        statuses = [api.post("/store/batch", {"items": [{"content": f"try {attempt} batch {b} grain {i}"}
                                                        for i in range(100)]}, caller=caller).status_code
                    for b in range(5)]
        extra = f"one too many {attempt}"
        return statuses, api.post("/store", {"content": extra}, caller=caller), extra

    # An attempt that crossed a minute may have stored its extra grain (a new minute): only the kept one counts.
    statuses, refused, extra = in_one_window(burst, clock_minute)
    assert statuses == [201] * 5 and refused.status_code == 429
    err = error_of(refused)
    assert err["code"] == "rate_limited" and "500 grains per minute" in err["message"]
    assert err["details"]["limit"] == 500 and 1 <= int(refused["Retry-After"]) <= 61
    assert not Grain.objects.filter(content=extra).exists()
    assert api.post("/store", {"content": "someone else"}, caller="calm:chat").status_code == 201


def test_a_refused_batch_does_not_use_up_the_limit(api, flux_settings):
    flux_settings(MAX_GRAINS_PER_MINUTE=5)

    def burst(attempt: int) -> list[int]:
        caller = f"tester{attempt}:test"
        return [api.post("/store/batch", {"items": [{"content": f"g{attempt}-{i}"} for i in range(n)]},
                         caller=caller).status_code for n in (6, 5)]

    assert in_one_window(burst, clock_minute) == [429, 201]


# --- retrieve, feedback, enforcement -----------------------------------------------------------------

def _store_and_retrieve(api, caller="agent:chat"):
    api.post("/store/batch", {"items": [{"content": "Kai drinks oat milk", "context": "k"},
                                        {"content": "Kai is allergic to peanuts", "context": "k"}]})
    response = api.post("/retrieve", {"query": "What does Kai drink?", "limit": 5}, caller=caller)
    assert response.status_code == 200
    trace_written(response.json()["trace_id"])  # the answer comes before its trace is written; tests read it
    return response.json()


def test_retrieve_returns_ranked_grains_with_a_trace(api):
    result = _store_and_retrieve(api)
    assert result["grains"][0]["content"] == "Kai drinks oat milk"
    assert [g["rank"] for g in result["grains"]] == list(range(1, len(result["grains"]) + 1))
    trace = api.get(f"/traces/{result['trace_id']}").json()
    assert trace["caller"] == "agent:chat" and trace["items"][0]["path"] == result["grains"][0]["path"]


@pytest.mark.parametrize("body,field", [({"query": ""}, "query"), ({"query": " \u200b\ufeff "}, "query"),
                                        ({"query": "\u0000"}, "query"), ({"query": "x", "limit": 0}, "limit"),
                                        ({"query": "x", "limit": "3"}, "limit"),
                                        ({"query": "x", "include_quarantined": "no"}, "include_quarantined"),
                                        ({"q": "x"}, "q")])
def test_bad_retrieve_bodies(api, body, field):
    """A query that shows nothing (spaces, zero-width characters, a control) asks for nothing: refused as an
    empty one is, with no trace left to owe feedback on."""
    response = api.post("/retrieve", body)
    assert response.status_code == 400 and error_of(response)["details"]["field"] == field
    assert not Trace.objects.exists()


def test_feedback_is_accepted_at_once_and_applied_in_the_background(api):
    result = _store_and_retrieve(api)
    top = result["grains"][0]["id"]
    response = api.post("/feedback", {"trace_id": result["trace_id"], "grain_id": top, "useful": True},
                        caller="agent:chat")
    assert response.status_code == 202 and response.json()["status"] == "accepted"
    get_booth().drain()
    assert Feedback.objects.get().applied_at is not None
    assert Grain.objects.get(pk=top).useful_count == 1
    again = api.post("/feedback", {"trace_id": result["trace_id"], "grain_id": top, "useful": True},
                     caller="agent:chat")
    assert again.status_code == 202 and again.json()["status"] == "already_recorded"
    flip = api.post("/feedback", {"trace_id": result["trace_id"], "grain_id": top, "useful": False},
                    caller="agent:chat")
    assert flip.status_code == 409 and error_of(flip)["code"] == "conflict"


@pytest.mark.parametrize("change,status,code", [
    ({"trace_id": 99999}, 404, "not_found"),
    ({"grain_id": 99999}, 400, "invalid_input"),
    ({"useful": "yes"}, 400, "invalid_input"),
    ({"trace_id": None}, 400, "invalid_input"),
    # digits int() does not take (a 500 before), of other scripts, past int()'s limit, padded: refused
    ({"trace_id": "\u00b2"}, 400, "invalid_input"),
    ({"grain_id": "\u2460"}, 400, "invalid_input"),
    ({"trace_id": "\u0666"}, 400, "invalid_input"),
    ({"trace_id": "1" * 5000}, 400, "invalid_input"),
    ({"trace_id": " 1 "}, 400, "invalid_input"),
])
def test_bad_feedback(api, change, status, code):
    result = _store_and_retrieve(api)
    body = {"trace_id": result["trace_id"], "grain_id": result["grains"][0]["id"], "useful": True, **change}
    response = api.post("/feedback", body, caller="agent:chat")
    assert response.status_code == status and error_of(response)["code"] == code
    assert not Feedback.objects.exists()


def test_feedback_enforcement_blocks_one_caller_not_another_and_lifts_after_feedback(api, flux_settings):
    flux_settings(FEEDBACK_ENFORCEMENT_GRACE_SECONDS=0)
    result = _store_and_retrieve(api, caller="forgetful:chat")
    blocked = api.post("/retrieve", {"query": "Kai"}, caller="forgetful:chat")
    assert blocked.status_code == 409
    err = error_of(blocked)
    assert err["code"] == "feedback_owed" and err["details"]["trace_ids"] == [result["trace_id"]]
    assert {o["grain_id"] for o in err["details"]["owed"]} == {g["id"] for g in result["grains"]}
    assert api.post("/retrieve", {"query": "Kai"}, caller="diligent:chat").status_code == 200
    for grain in result["grains"]:
        api.post("/feedback", {"trace_id": result["trace_id"], "grain_id": grain["id"], "useful": True},
                 caller="forgetful:chat")
    assert api.post("/retrieve", {"query": "Kai"}, caller="forgetful:chat").status_code == 200


def test_feedback_enforcement_lifts_after_the_max_block_time(api, flux_settings):
    flux_settings(FEEDBACK_ENFORCEMENT_GRACE_SECONDS=0, FEEDBACK_ENFORCEMENT_MAX_BLOCK_SECONDS=3600)
    result = _store_and_retrieve(api, caller="forgetful:chat")
    assert api.post("/retrieve", {"query": "Kai"}, caller="forgetful:chat").status_code == 409
    Trace.objects.filter(pk=result["trace_id"]).update(created_at=timezone.now() - timedelta(hours=2))
    assert api.post("/retrieve", {"query": "Kai"}, caller="forgetful:chat").status_code == 200


def test_feedback_enforcement_waits_for_the_grace_period(api):
    _store_and_retrieve(api, caller="new:chat")
    assert api.post("/retrieve", {"query": "Kai"}, caller="new:chat").status_code == 200


# --- the write queue ---------------------------------------------------------------------------------

def test_a_full_write_queue_answers_503_with_retry_after(api, flux_settings, blocked_writes):
    flux_settings(MAX_WRITE_QUEUE_DEPTH=2)
    blocked_writes(2)
    response = api.post("/store", {"content": "waits its turn"})
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert error_of(response)["code"] == "overloaded"
    assert api.get("/health").json()["queues"]["write"] == 2  # reads still answer while writes are stuck


# --- reads -------------------------------------------------------------------------------------------

def test_grain_listing_filters_and_pages(api):
    api.post("/store/batch", {"items": [{"content": f"note {i}"} for i in range(5)]})
    Grain.objects.filter(content="note 0").update(status="dormant")
    page = api.get("/grains", status="active", limit=2, offset=1).json()
    assert [g["content"] for g in page["grains"]] == ["note 3", "note 2"]
    assert [g["content"] for g in api.get("/grains", status="dormant").json()["grains"]] == ["note 0"]
    for params, field in [({"status": "sleepy"}, "status"), ({"limit": "x"}, "limit"), ({"limit": 0}, "limit"),
                          ({"offset": -1}, "offset")]:
        response = api.get("/grains", **params)
        assert response.status_code == 400 and error_of(response)["details"]["field"] == field


def test_grain_detail_has_conduits_confidence_history_and_traces(api):
    result = _store_and_retrieve(api)
    top = result["grains"][0]["id"]
    api.post("/feedback", {"trace_id": result["trace_id"], "grain_id": top, "useful": True}, caller="agent:chat")
    get_booth().drain()  # feedback is applied in the background: first, as in the history below
    api.post("/store", {"content": "Kai drinks oat milk"}, caller="other:chat")
    detail = api.get(f"/grains/{top}").json()
    assert detail["conduits"] and detail["conduits"][0]["kind"] == "association"
    history = [(h["reason"], h["caller_name"]) for h in detail["confidence_history"]]
    assert history == [("prior:ai_stated", None), ("useful", "agent:chat"), ("corroborated", "other:chat")]
    assert detail["traces"][0]["trace_id"] == result["trace_id"] and detail["traces"][0]["useful"] is True
    assert api.get("/grains/424242").status_code == 404
    assert api.get("/traces/424242").status_code == 404


def test_callers_show_counts_and_feedback_compliance(api):
    result = _store_and_retrieve(api, caller="agent:chat")
    api.post("/feedback", {"trace_id": result["trace_id"], "grain_id": result["grains"][0]["id"], "useful": True},
             caller="agent:chat")
    callers = {f"{c['client']}:{c['role']}": c for c in api.get("/callers").json()["callers"]}
    agent = callers["agent:chat"]
    assert (agent["retrievals"], agent["returned"], agent["rated"]) == (1, len(result["grains"]), 1)
    assert agent["feedback_compliance"] == round(1 / len(result["grains"]), 4)
    assert Caller.objects.filter(client="tester").get().stored == 2


def test_health_counts_grains_conduits_and_queues(api):
    _store_and_retrieve(api)
    health = api.get("/health").json()
    assert health["status"] == "ok" and health["grains"]["active"] == 2 and health["grains"]["total"] == 2
    assert health["conduits"]["total"] >= 1 and set(health["queues"]) == {"write", "feedback_pending"}
    assert health["retrieval"]["semantic_entry"] == "off"  # the tests' setting
    assert health["retrieval"]["semantic"] is False and health["retrieval"]["model"] is None


def test_openapi_describes_every_endpoint(api):
    schema = api.get("/openapi.json").json()
    assert set(schema["paths"]) == {"/store", "/store/batch", "/retrieve", "/feedback", "/health", "/grains",
                                    "/grains/{grain_id}", "/traces/{trace_id}", "/callers", "/relations",
                                    "/clusters", "/clusters/run", "/dreams", "/dreams/run", "/health/history",
                                    "/health/snapshot"}


def test_write_depth_counts_waiting_writes_and_bookkeeping_goes_first(api):
    """While a write runs, stores queue in order and count in the depth; a read's bookkeeping (not counted) jumps
    ahead of them, waiting only for the write in progress."""
    booth = get_booth()
    gate, ran = threading.Event(), []
    booth.write(gate.wait)
    stores = [booth.write(lambda n=n: ran.append(f"store {n}")) for n in range(3)]
    receipt = booth.record(lambda: ran.append("receipt"))
    assert booth.write_depth == 4  # the one running and three waiting; the receipt is not counted
    gate.set()
    receipt.result(10)
    for future in stores:
        future.result(10)
    assert ran == ["receipt", "store 0", "store 1", "store 2"]
    assert booth.write_depth == 0


def test_a_finished_write_has_left_the_depth_when_its_caller_hears(api):
    """Whoever waits for a write sees the depth without it (the writer gives its place back before the result)."""
    booth = get_booth()
    gate, seen = threading.Event(), []
    booth.write(gate.wait)
    store = booth.write(lambda: None)
    store.add_done_callback(lambda _: seen.append(booth.write_depth))  # runs when the result is set
    gate.set()
    store.result(10)
    assert seen == [0]


def test_a_retrieval_answers_before_its_trace_is_written_and_feedback_on_it_waits_for_it(api):
    """The trace is written by the writer after the answer, under an id reserved ahead: a held writer does not
    hold up a retrieval, and feedback (or the trace's page) on the new trace finds it once written."""
    api.post("/store/batch", {"items": [{"content": "Rosa keeps bees behind the barn"},
                                        {"content": "Rosa sells honey at the market"}]})
    first = api.post("/retrieve", {"query": "bees"}).json()["trace_id"]  # reserves this process's trace ids
    gate, answers = threading.Event(), []
    get_booth().record(gate.wait)  # the writer is busy until the gate opens
    asker = threading.Thread(target=lambda: answers.append(api.post("/retrieve", {"query": "Rosa honey"})))
    asker.start()
    asker.join(60)
    try:
        assert answers and answers[0].status_code == 200  # answered while the writer was held
        body = answers[0].json()
        assert body["trace_id"] > first and body["grains"]
        assert not Trace.objects.filter(pk=body["trace_id"]).exists()  # not written yet
    finally:
        gate.set()
    grain = body["grains"][0]["id"]
    assert api.get(f"/traces/{body['trace_id']}").json()["items"][0]["grain_id"] == grain
    rated = api.post("/feedback", {"trace_id": body["trace_id"], "grain_id": grain, "useful": True})
    assert rated.status_code == 202
    inline = grain_retrieve(query="bees", caller="tester:test")  # written at once, with the table's next id
    assert inline.trace_id > body["trace_id"]
    assert Trace.objects.filter(pk__in=[first, body["trace_id"], inline.trace_id]).count() == 3


def test_a_grain_purged_before_its_trace_is_written_leaves_the_traces_written_with_it(api):
    """A purge between a retrieval's answer and its trace's write: the trace is written without the purged grain
    (its query scrubbed, as the purge does to traces already written), and the traces committed with it are
    written. The purged grain's row failed the whole commit: every trace of it, and the purge, were lost."""
    stored = api.post("/store/batch", {"items": [{"content": "Rosa keeps bees behind the barn"},
                                                 {"content": "Tomas repairs clocks in the old town"}]}).json()
    bees, clocks = (item["grain"]["id"] for item in stored["items"])
    api.post("/retrieve", {"query": "bees"})  # reserves this process's trace ids
    get_booth().drain()
    gate, answers = threading.Event(), []
    purge = get_booth().record(lambda: (gate.wait(), grain_purge(grain_id=bees, reason="asked to forget"))[1])
    asker = threading.Thread(target=lambda: answers.extend(
        api.post("/retrieve", {"query": q}).json() for q in ("bees", "clocks")))
    asker.start()
    asker.join(60)
    gate.set()
    assert [a["grains"][0]["id"] for a in answers] == [bees, clocks]  # answered before the purge
    purge.result(30)
    for answer in answers:
        trace_written(answer["trace_id"])
    about_bees, about_clocks = (Trace.objects.get(pk=a["trace_id"]) for a in answers)
    assert not Grain.objects.filter(pk=bees).exists()
    assert about_clocks.query == "clocks" and [i.grain_id for i in about_clocks.items.all()] == [clocks]
    assert about_bees.query == SCRUBBED_QUERY and not about_bees.items.filter(grain_id=bees).exists()
    rated = api.post("/feedback", {"trace_id": answers[1]["trace_id"], "grain_id": clocks, "useful": True})
    assert rated.status_code == 202


def test_the_next_block_of_trace_ids_is_reserved_before_this_one_runs_out(api, monkeypatch):
    """While a quarter of its trace ids is left, a process asks the writer for the next block: a retrieval that
    takes a block's last id does not wait for the writer (with several processes, for its turn)."""
    from graph.services import retrieval, traces

    monkeypatch.setattr(traces, "ID_BLOCK", 8)
    monkeypatch.setattr(retrieval, "trace_ids", traces._TraceIds())
    api.post("/store", {"content": "Rosa keeps bees behind the barn"})
    ids = [api.post("/retrieve", {"query": "bees"}).json()["trace_id"] for _ in range(7)]
    get_booth().drain()  # the next block, asked for along the way, is reserved
    gate, answers = threading.Event(), []
    get_booth().record(gate.wait)  # the writer is busy until the gate opens
    asker = threading.Thread(target=lambda: answers.extend(
        api.post("/retrieve", {"query": "bees"}).json()["trace_id"] for _ in range(5)))
    asker.start()
    asker.join(60)
    gate.set()
    assert len(answers) == 5  # the first block ran out after one of them, and none waited for the writer
    ids += answers
    assert ids == sorted(set(ids))
    get_booth().drain()
    assert Trace.objects.filter(pk__in=ids).count() == len(ids)


def test_store_in_flux_extracts_mode_stores_the_extracted_facts(api, flux_settings):
    import json as _json

    from core.net import free_port
    from tests.servers import fake_ollama

    facts = ["Lena moved to Lisbon in March 2024.", "Lena works as a nurse."]
    reply = {"response": _json.dumps({"facts": facts}), "done": True}
    with fake_ollama(lambda body: (200, reply)) as (url, _):
        flux_settings(OPERATING_MODE="flux_extracts", OLLAMA_URL=url)
        response = api.post("/store", {"content": "I'm Lena; I moved to Lisbon in March 2024. I'm a nurse."})
    assert response.status_code == 201
    body = response.json()
    assert [i["grain"]["content"] for i in body["items"]] == facts and body["source_id"] and body["warning"] is None
    flux_settings(OLLAMA_URL=f"http://127.0.0.1:{free_port()}")
    down = api.post("/store", {"content": "Another text."})
    assert down.status_code == 503 and error_of(down)["code"] == "llm_unavailable"
    assert Grain.objects.count() == 2


def test_stores_waiting_on_a_slow_llm_never_hold_up_a_retrieval(api, flux_settings):
    """In flux_extracts mode a store waits on the LLM on threads of its own: more such stores than there are read
    workers, the LLM taking seconds, and another client's retrieval is answered at once (it waited for the LLM)."""
    import json as _json
    import time

    from django.test import Client

    from core.conf import flux_setting
    from tests.api.conftest import Api
    from tests.servers import raw_http_server

    api.post("/store", {"content": "Bo plays the cello in an orchestra"})
    answer = _json.dumps({"response": _json.dumps({"facts": ["Lena works as a nurse."]})}).encode()
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(answer),
                                                                                                   answer)
    with raw_http_server([(reply, 6.0)]) as url:
        flux_settings(OPERATING_MODE="flux_extracts", OLLAMA_URL=url, LLM_TIMEOUT_SECONDS=30.0)
        statuses: list[int] = []
        stores = [threading.Thread(target=lambda: statuses.append(Api(Client()).post(
            "/store", {"content": "I'm Lena and I work as a nurse."}, caller="slow:chat").status_code))
            for _ in range(flux_setting("READ_WORKERS") + 1)]
        for thread in stores:
            thread.start()
        time.sleep(1.0)  # every store is waiting on the LLM by now
        started = time.monotonic()
        found = Api(Client()).post("/retrieve", {"query": "who plays the cello"}, caller="quick:chat")
        waited = time.monotonic() - started
        for thread in stores:
            thread.join(60)
    assert found.status_code == 200 and waited < 3.0, waited
    assert statuses == [201] * len(stores)


# --- self-organization endpoints ------------------------------------------------------------------------

def test_relations_are_asserted_and_listed_over_rest(api):
    paris = api.post("/store", {"content": "Noor lives in Paris"}).json()["grain"]["id"]
    lyon = api.post("/store", {"content": "Noor relocated to Lyon"}).json()["grain"]["id"]
    listed = api.get("/relations", kind="supersedes").json()["relations"]
    assert [(r["source"]["id"], r["target"]["id"], r["asserted_by"]) for r in listed] == [(lyon, paris, "rules")]
    cause = api.post("/store", {"content": "A new job offer came from Lyon"}).json()["grain"]["id"]
    made = api.post("/relations", {"source_id": lyon, "target_id": cause, "kind": "caused_by", "note": "the job"})
    assert made.status_code == 201 and made.json()["relation"]["asserted_by"] == "caller"
    again = api.post("/relations", {"source_id": lyon, "target_id": cause, "kind": "caused_by"})
    assert again.status_code == 200 and again.json()["created"] is False
    about = api.get("/relations", grain_id=cause).json()["relations"]
    assert [r["kind"] for r in about] == ["caused_by"]
    found = api.post("/retrieve", {"query": "where does Noor live"}).json()["grains"]
    assert found[0]["id"] == lyon and {g["id"]: g["superseded_by"] for g in found}[paris] == lyon
    for body, field in [({"source_id": lyon, "target_id": cause, "kind": "hates"}, "kind"),
                        ({"source_id": lyon, "target_id": lyon, "kind": "supports"}, "target_id"),
                        ({"source_id": lyon, "kind": "supports"}, "target_id")]:
        response = api.post("/relations", body)
        assert response.status_code == 400 and error_of(response)["details"]["field"] == field
    missing = api.post("/relations", {"source_id": lyon, "target_id": 999999, "kind": "supports"})
    assert missing.status_code == 404
    assert api.get("/relations", kind="nope").status_code == 400


def test_a_fresh_memory_dreams_on_the_first_run_which_clusters_first(api):
    api.post("/store/batch", {"items": [{"content": c, "context": "garden"} for c in (
        "Lena grows tomatoes in the greenhouse", "Lena waters the greenhouse tomatoes each morning",
        "The greenhouse tomatoes ripen in July", "Lena picks the ripe tomatoes in July")]})
    assert api.get("/clusters").json()["clusters"] == []  # never clustered yet
    ran = api.post("/dreams/run", {})  # a JSON body (empty), like every write
    assert ran.status_code == 200 and ran.json()["candidates"] == 1 and len(ran.json()["accepted"]) == 1
    clusters = api.get("/clusters").json()["clusters"]
    assert len(clusters) == 1 and clusters[0]["size"] == 4
    assert clusters[0]["terms"] and clusters[0]["label"] == " / ".join(clusters[0]["terms"])
    rebuilt = ActivityEvent.objects.filter(kind="graph.clusters_rebuilt").count()
    assert api.post("/dreams/run", {}).json() == {"candidates": 0, "accepted": [], "rejected": [], "error": ""}
    assert ActivityEvent.objects.filter(kind="graph.clusters_rebuilt").count() == rebuilt + 1  # the abstraction
    dreams = api.get("/dreams", status="accepted").json()["dreams"]
    assert len(dreams) == 1 and dreams[0]["method"] == "extractive" and dreams[0]["grain_id"]
    assert dreams[0]["status"] == "accepted" and dreams[0]["reason"] == ""
    assert api.get("/dreams", status="dreamy").status_code == 400
    found = api.post("/retrieve", {"query": "greenhouse tomatoes"}).json()
    assert [a["id"] for a in found["abstractions"]] == [dreams[0]["grain_id"]]
    api.post("/dreams/run", {})  # nothing stored since: no clustering
    assert ActivityEvent.objects.filter(kind="graph.clusters_rebuilt").count() == rebuilt + 1


def test_an_operator_reclusters_on_demand(api):
    assert api.post("/clusters/run", {}).json()["clusters"] == 0
    api.post("/store/batch", {"items": [{"content": c, "context": "garden"} for c in (
        "Lena grows tomatoes in the greenhouse", "Lena waters the greenhouse tomatoes each morning",
        "The greenhouse tomatoes ripen in July")]})
    ran = api.post("/clusters/run", {})
    assert ran.status_code == 200 and (ran.json()["clusters"], ran.json()["clustered"]) == (1, 3)
    assert api.get("/clusters").json()["clusters"][0]["size"] == 3
    from grains.locks import lock_take

    lock_take("cluster_rebuild", seconds=60)  # another process is clustering
    busy = api.post("/clusters/run", {})
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "clustering_running"


def test_the_run_endpoints_take_an_empty_object_and_refuse_anything_else(api):
    """They take no arguments: a field (a typo, a guess at an option) is refused as every endpoint refuses a field
    it does not take, before anything runs."""
    for path in ("/clusters/run", "/dreams/run", "/health/snapshot"):
        for body, field in [({"force": True}, "force"), ([], "body"), (5, "body")]:
            response = api.post(path, body)
            assert response.status_code == 400, (path, body)
            assert error_of(response)["details"]["field"] == field
        assert "takes none" in error_of(api.post(path, {"force": True}))["message"]
    assert not ActivityEvent.objects.filter(kind="graph.clusters_rebuilt").exists()
    assert api.get("/health").json()["last_snapshot"] is None
    for path in ("/clusters/run", "/dreams/run", "/health/snapshot"):
        assert api.post(path, {}).status_code == 200


def test_health_lists_every_signal_and_its_history(api):
    _store_and_retrieve(api)
    health = api.get("/health").json()
    assert len(health["signals"]) == 14 and health["last_snapshot"] is None and health["warnings"] == []
    hops = next(s for s in health["signals"] if s["name"] == "avg_hops_per_retrieval")
    assert set(hops) >= {"value", "low", "high", "state", "severity", "suggestion", "window_days", "measures"}
    taken = api.post("/health/snapshot", {})
    assert taken.status_code == 200 and taken.json()["status"] in ("ok", "warn", "critical")
    history = api.get("/health/history", signal="avg_hops_per_retrieval").json()["history"]
    assert len(history) == 1 and history[0]["value"] == hops["value"]
    assert api.get("/health").json()["last_snapshot"] is not None
    for params, field in [({"signal": "vibes"}, "signal"), ({}, "signal"),
                          ({"signal": "orphan_rate", "since": "yesterday"}, "since")]:
        response = api.get("/health/history", **params)
        assert response.status_code == 400 and error_of(response)["details"]["field"] == field


def test_a_grain_dossier_downloads_as_json(api):
    grain = api.post("/store", {"content": "Ines repairs clocks", "context": "c"}).json()["grain"]["id"]
    api.post("/store", {"content": "Ines sells repaired clocks on Fridays", "context": "c"})
    dossier = api.get(f"/grains/{grain}", format="dossier")
    assert dossier.status_code == 200 and "attachment" in dossier["Content-Disposition"]
    body = dossier.json()
    assert body["content"] == "Ines repairs clocks" and body["conduits"] and {"relations", "dreams"} <= set(body)
    bad = api.get(f"/grains/{grain}", format="xml")
    assert bad.status_code == 400 and error_of(bad)["details"]["field"] == "format"


def test_a_blocked_caller_gets_403_with_the_reason(api):
    from grains.corrections import caller_block_set

    api.post("/store", {"content": "Fine fact"}, caller="bot:chat")
    caller_block_set(caller="bot:chat", blocked=True, reason="flooding", actor="ops:admin")
    refused = api.post("/store", {"content": "Another fact"}, caller="bot:chat")
    assert refused.status_code == 403 and error_of(refused)["code"] == "caller_blocked"
    assert "flooding" in error_of(refused)["message"]
    assert api.post("/retrieve", {"query": "fact"}, caller="bot:chat").status_code == 403
    assert api.post("/store", {"content": "Another fact"}, caller="person:chat").status_code == 201
