"""The dashboard listener as it runs: its own daphne beside the REST service on one data folder, both on free
loopback ports. It refuses the write API, serves files from static/ only, and its websocket sends a snapshot,
then deltas, and resumes from an event id."""
from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.servers import dashboard_server, flux_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data = tmp_path_factory.mktemp("dashboard")
    with flux_server(data) as (rest, _):
        with dashboard_server(data, DASHBOARD_POLL_SECONDS="0.2", REST_PORT=rest.rsplit(":", 1)[1]) as (board, _):
            yield rest, board


def call(method: str, url: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def raw_get(base: str, path: str) -> tuple[int, bytes]:
    """GET with the path sent exactly as written (no client-side normalisation of dots or escapes)."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def grain_count(rest: str) -> int:
    return call("GET", rest + "/health")[1]["grains"]["total"]


def test_the_dashboard_port_refuses_the_write_api(served):
    rest, board = served
    before = grain_count(rest)
    for method, path in (("POST", "/store"), ("POST", "/store/batch"), ("POST", "/feedback"), ("PUT", "/store"),
                         ("DELETE", "/grains/1"), ("POST", "/"), ("POST", "/api/graph")):
        status, body = call(method, board + path, {"content": "written through the dashboard"})
        assert status == 405, (method, path, body)
        assert body["error"]["code"] == "read_only" and body["error"]["details"]["rest_url"] == rest
        rest_path = path in ("/store", "/store/batch", "/feedback") or path.startswith("/grains/")
        said = f"takes writes at {rest}{path}" if rest_path else f"(its endpoints: {rest}/openapi.json)"
        assert said in body["error"]["message"] and (rest_path or "takes writes at" not in body["error"]["message"])
    for path in ("/store", "/health", "/grains", "/admin/", "/openapi.json", "/clusters/run"):
        status, body = call("GET", board + path)
        assert (status, body["error"]["code"]) == (403, "wrong_listener"), (path, body)
        assert body["error"]["details"]["rest_url"] == rest
    assert grain_count(rest) == before
    assert call("POST", rest + "/store", {"content": "written through the REST API"})[0] == 201
    assert grain_count(rest) == before + 1


TRAVERSALS = [
    "/static/../manage.py", "/static/%2e%2e/manage.py", "/static/%2E%2E/manage.py", "/static/..%2fmanage.py",
    "/static/..%2Fmanage.py", "/static/%2e%2e%2fmanage.py", "/static/dashboard/../../manage.py",
    "/static/dashboard/%2e%2e/%2e%2e/manage.py", "/static/%252e%252e/manage.py", "/static/..%5cmanage.py",
    "/static/..\\manage.py", "/static//etc/passwd", "/static/%2fetc%2fpasswd", "/static/....//manage.py",
    "/static/.%2e/.%2e/manage.py", "/static/%c0%ae%c0%ae/manage.py", "/static/dashboard/",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_static_serves_nothing_outside_the_static_folder(served, path):
    _, board = served
    status, body = raw_get(board, path)
    assert status in (400, 404), (path, status, body[:200])
    assert b"DJANGO_SETTINGS_MODULE" not in body and b"root:" not in body


def test_static_serves_the_vendored_files_and_the_dashboards_own(served):
    _, board = served
    status, body = raw_get(board, "/static/dashboard/flux.js")
    assert status == 200 and body == (ROOT / "dashboard" / "static" / "dashboard" / "flux.js").read_bytes()
    status, body = raw_get(board, "/static/vendor/sigma/sigma.min.js")
    assert status == 200 and body == (ROOT / "dashboard" / "static" / "vendor" / "sigma" / "sigma.min.js").read_bytes()


def socket_url(board: str, after: int | None = None) -> str:
    return board.replace("http://", "ws://") + "/ws/activity" + (f"?after={after}" if after is not None else "")


def receive(ws, deadline: float) -> dict:
    return json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))


def events_until(ws, wanted, timeout: float = 10.0) -> list[dict]:
    """Deltas' events until one satisfies ``wanted`` (or the time is up)."""
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = receive(ws, deadline)
        except TimeoutError:
            break
        assert message["type"] == "delta", message
        seen += message["events"]
        if any(wanted(e) for e in message["events"]):
            break
    return seen


def stored(content: str):
    return lambda e: e["kind"] == "grains.grain_stored" and e.get("grain", {}).get("label") == content


def test_the_websocket_sends_a_snapshot_then_deltas_then_resumes(served):
    rest, board = served
    with connect(socket_url(board), origin=board, open_timeout=30) as ws:
        snapshot = receive(ws, time.monotonic() + 30)
        assert snapshot["type"] == "snapshot" and isinstance(snapshot["last_event_id"], int)
        assert sum(snapshot["grains"].values()) == grain_count(rest)
        status, body = call("POST", rest + "/store", {"content": "The ferry leaves pier 4 at 07:10"})
        assert status == 201
        events = events_until(ws, stored("The ferry leaves pier 4 at 07:10"))
        assert any(stored("The ferry leaves pier 4 at 07:10")(e) for e in events), events
        assert all(e["id"] > snapshot["last_event_id"] for e in events)
        assert [e["id"] for e in events] == sorted({e["id"] for e in events})
        call("POST", rest + "/retrieve", {"query": "when does the ferry leave"})
        events = events_until(ws, lambda e: e["kind"] == "graph.signal_propagated")
        beam = next(e for e in events if e["kind"] == "graph.signal_propagated")
        assert beam["trace"]["query"] == "when does the ferry leave"
        assert body["grain"]["id"] in [item["grain_id"] for item in beam["trace"]["items"]]
    # A page that saw the snapshot only reconnects with its last id: it gets everything after it, once, in order.
    with connect(socket_url(board, after=snapshot["last_event_id"]), origin=board, open_timeout=30) as ws:
        again = receive(ws, time.monotonic() + 30)
        assert again["type"] == "snapshot" and again["last_event_id"] > snapshot["last_event_id"]
        caught_up = events_until(ws, lambda e: e["id"] >= again["last_event_id"])
        ids = [e["id"] for e in caught_up]
        assert ids == sorted(set(ids)) and ids[0] > snapshot["last_event_id"] and ids[-1] == again["last_event_id"]
        assert any(stored("The ferry leaves pier 4 at 07:10")(e) for e in caught_up)


@pytest.mark.parametrize("after", ["yesterday", "%C2%B2", "%D9%A3%D9%A3", "1_0", "-1", "+5"])
def test_a_bad_resume_id_is_refused_with_a_reason(served, after):
    """Only ASCII digits are an event id: a superscript two or Arabic-Indic digits ('isdigit') crashed the socket
    or were read as another number."""
    _, board = served
    with connect(socket_url(board).replace("activity", f"activity?after={after}"), origin=board,
                 open_timeout=30) as ws:
        message = receive(ws, time.monotonic() + 30)
        assert message["type"] == "error" and "'after' must be an event id" in message["message"]
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400


def test_whatever_a_page_sends_gets_the_same_answer_and_the_socket_stays(served):
    """The socket takes no messages: text that is not JSON, an empty frame, bytes, JSON nested past any parser's
    depth, a megabyte: each is answered that it only sends, and it goes on sending."""
    rest, board = served
    with connect(socket_url(board), origin=board, open_timeout=30, max_size=None) as ws:
        assert receive(ws, time.monotonic() + 30)["type"] == "snapshot"
        for message in ("hello{", "", b"\x00\xff", "[" * 100_000 + "]" * 100_000, "x" * 1_000_000, '{"ok": 1}'):
            ws.send(message)
            deadline = time.monotonic() + 30
            answer = receive(ws, deadline)
            while answer["type"] == "delta":  # an event of the service's own may come first
                answer = receive(ws, deadline)
            assert answer == {"type": "error", "message": "this socket only sends; it takes no messages"}
        call("POST", rest + "/store", {"content": "The ferry leaves pier 5 at 08:40"})
        assert events_until(ws, stored("The ferry leaves pier 5 at 08:40"))


def test_a_page_from_another_site_cannot_open_the_socket(served):
    """Nor a page another program serves on this machine, at another port (its host, 127.0.0.1 or localhost, is
    an allowed one: the page read every event), nor one of the dashboard's host under another name."""
    _, board = served
    port = urllib.parse.urlsplit(board).port
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "http://localhost:8080",
                   f"http://localhost:{port}", "http://127.0.0.1", "null"):
        with pytest.raises(InvalidStatus) as refused:
            with connect(socket_url(board), origin=origin, open_timeout=30) as ws:
                ws.recv(timeout=10)
        assert refused.value.response.status_code == 403, origin
    with connect(socket_url(board), origin=board, open_timeout=30) as ws:  # the dashboard's own page
        assert json.loads(ws.recv(timeout=30))["type"] == "snapshot"


def _raw(base: str, target: str, **headers: str) -> tuple[int, dict]:
    """(status, JSON body) of a GET sent as is: the target unencoded further, the headers given (Host too)."""
    where = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.putrequest("GET", target, skip_host="Host" in headers)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_the_longest_search_the_box_takes_is_served_and_a_longer_line_is_a_414(served):
    """MAX_QUERY_CHARS characters of any script, percent-encoded, exceed the server's usual 16 KiB request line:
    such a search is answered; a line past any search is refused in the error contract, not dropped."""
    _, board = served
    status, found = _raw(board, "/api/search?q=" + urllib.parse.quote("記" * 1990))
    assert status == 200 and found == [], found  # nothing stored is written so: an empty answer, not a dropped one
    status, refused = _raw(board, "/api/search?q=" + "x" * 60_000)
    assert status == 414 and refused["error"]["code"] == "too_long"


def test_a_host_name_the_service_does_not_answer_to_is_a_json_400(served):
    for base in served:
        status, answer = _raw(base, "/health" if base == served[0] else "/api/clusters", Host="evil.example")
        assert status == 400 and answer["error"]["code"] == "bad_host", answer
        assert "'evil.example'" in answer["error"]["message"] and "ALLOWED_HOSTS" in answer["error"]["message"]
