"""The REST API's ASGI handler (fluxsite/api_handler.py): Django's, with the request signals sent inline on the
event loop instead of through a sync thread, and the API's middleware chain."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest
from django.conf import settings
from django.core import signals

from fluxsite.api_handler import ApiHandler


def _ask(method: str, path: str, body: bytes = b"", headers: tuple = (),
         answer_headers: dict | None = None) -> tuple[int, dict, list[str]]:
    """One request through a fresh ApiHandler; its status, JSON body, and the thread each request signal ran in
    ("loop" for the event loop's, else "other"). The answer's headers go into ``answer_headers`` when given."""
    seen: list[str] = []

    def started(**kwargs: object) -> None:
        seen.append(f"started:{'loop' if threading.get_ident() == loop_thread else 'other'}")

    def finished(**kwargs: object) -> None:
        seen.append(f"finished:{'loop' if threading.get_ident() == loop_thread else 'other'}")

    async def run() -> list[dict]:
        sent: list[dict] = []
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            if pending:
                return pending.pop()
            await asyncio.sleep(3600)  # the client stays: the handler's disconnect listener waits
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
                 "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                             (b"content-length", str(len(body)).encode()), *headers],
                 "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 7461)}
        await ApiHandler()(scope, receive, send)
        return sent

    loop_thread = threading.get_ident()  # asyncio.run runs the loop in this thread
    signals.request_started.connect(started, weak=False)
    signals.request_finished.connect(finished, weak=False)
    try:
        sent = asyncio.run(run())
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    start = next(m for m in sent if m["type"] == "http.response.start")
    if answer_headers is not None:
        answer_headers.update((k.decode().lower(), v.decode()) for k, v in start["headers"])
    status = start["status"]
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(content), seen


@pytest.mark.django_db(transaction=True)
def test_an_api_call_sends_each_request_signal_once_on_the_event_loop():
    status, answer, seen = _ask("GET", "/nope")
    assert status == 404 and answer["error"]["code"] == "not_found"
    assert seen == ["started:loop", "finished:loop"]


@pytest.mark.django_db(transaction=True)
def test_a_view_on_the_booth_answers_through_it():
    status, answer, seen = _ask("POST", "/retrieve", json.dumps({"query": "tulips"}).encode(),
                                ((b"x-caller-id", b"ana:chat"),))
    assert status == 200 and answer["query"] == "tulips" and answer["grains"] == []
    assert seen == ["started:loop", "finished:loop"]
    status, answer, _ = _ask("POST", "/retrieve", b"{", ((b"x-caller-id", b"ana:chat"),))
    assert status == 400, answer  # bad JSON: the project's error, not a 500


@pytest.mark.django_db(transaction=True)
def test_the_api_chain_keeps_every_middleware_but_the_admins():
    headers: dict = {}
    status, _, _ = _ask("GET", "/nope", answer_headers=headers)
    assert status == 404
    assert headers.get("x-content-type-options") == "nosniff"  # SecurityMiddleware
    assert headers.get("x-frame-options") == "DENY"  # XFrameOptionsMiddleware
    assert not any(k == "set-cookie" or v == "Cookie" for k, v in headers.items()), "no session on an API call"
    status, answer, _ = _ask("POST", "/retrieve", b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
                             ((b"x-caller-id", b"ana:chat"),))
    assert status == 413, answer  # RestGateMiddleware: the body's size is checked before anything reads it
