"""The REST API's ASGI handler (fluxsite/api_handler.py): Django's, with the request signals sent inline on the
event loop instead of through a sync thread, and the API's middleware chain."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest
from django.core import signals

from fluxsite.api_handler import ApiHandler


def _ask(method: str, path: str, body: bytes = b"", headers: tuple = ()) -> tuple[int, dict, list[str]]:
    """One request through a fresh ApiHandler; its status, JSON body, and the thread each request signal ran in
    ("loop" for the event loop's, else "other")."""
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
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
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
