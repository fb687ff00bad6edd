"""Security findings, each reproduced against the service as it runs (real servers on free loopback ports) or
through the services, and shown closed: a forged admin link, an open LAN window, a stalled writer, a silent
un-purge, chosen identities, cross-site writes, private files, purges that leave traces, cookies, one-time links,
oversized bodies, credentials in messages, hostile input (unpaired surrogates, dates past the calendar, ids past
the database's integers, deep nesting, long echoes)."""
from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core import signing
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from core.defaults import DEFAULTS
from tests.servers import dashboard_server, fake_ollama, flux_server

ROOT = Path(__file__).resolve().parents[2]


def call(url: str, body: object = None, *, method: str | None = None, headers: dict | None = None,
         source: str = "127.0.0.1") -> tuple[int, dict, dict]:
    """(status, JSON body, headers) of one request, sent from ``source`` (a loopback address)."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60, source_address=(source, 0))
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    sent = {"Content-Type": "application/json", **(headers or {})} if body is not None else dict(headers or {})
    try:
        conn.request(method or ("POST" if body is not None else "GET"), where.path + (f"?{where.query}" if where.query
                     else ""), body=data, headers=sent)
        response = conn.getresponse()
        raw = response.read()
        try:
            decoded = json.loads(raw) if raw else {}
        except ValueError:
            decoded = {"raw": raw.decode(errors="replace")}
        return response.status, decoded, dict(response.getheaders())
    finally:
        conn.close()


def caller(client: str, role: str = "chat") -> dict:
    return {"X-Flux-Client": client, "X-Flux-Role": role}


@pytest.fixture(scope="module")
def rest(tmp_path_factory):
    data = tmp_path_factory.mktemp("secure")
    with flux_server(data) as (base, log):
        yield base, data, log


# --- 1. the admin cannot be forged ---------------------------------------------------------------------------

def test_a_link_signed_with_the_old_derivable_secret_is_refused(rest):
    base, data, _ = rest
    forged = signing.dumps({"user": 1, "nonce": "x"}, key="flux-local-only-" + str(data), salt="flux.admin-link")
    status, body, _ = call(f"{base}/admin/login-link/{forged}")
    assert status == 403 and "not valid" in body["raw"]


def test_the_secret_is_random_private_and_a_weak_one_stops_start_up(rest, tmp_path):
    _, data, _ = rest
    secret = data / "secret.key"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(secret.read_text().strip()) >= 32
    assert str(data) not in secret.read_text()
    env = {**os.environ, "FLUX_DATA_DIR": str(tmp_path), "SECRET_KEY": "flux-local-only-" + str(tmp_path)}
    out = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0 and "too weak" in out.stderr


def test_the_admin_has_no_user_or_group_pages(admin_client):
    assert admin_client.get("/admin/auth/user/add/").status_code == 404
    assert admin_client.get("/admin/auth/group/").status_code == 404
    assert admin_client.get("/admin/grains/grain/").status_code == 200


# --- 3. one store cannot stall the writer ---------------------------------------------------------------------

def test_a_pathological_store_is_fast_and_does_not_delay_another_callers_store(rest):
    base = rest[0]
    assert call(f"{base}/store", {"content": "warm the service up"}, headers=caller("warm"))[0] == 201
    items = [{"content": f"because {',' * 3960} zebra stripes {i}"} for i in range(3)]
    timings: dict[str, float] = {}

    def timed(name: str, path: str, body: dict, who: str) -> int:
        started = time.perf_counter()
        status = call(f"{base}{path}", body, headers=caller(who))[0]
        timings[name] = time.perf_counter() - started
        return status

    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(timed, "pathological", "/store/batch", {"items": items}, "mallory")
        time.sleep(0.005)
        other = pool.submit(timed, "other", "/store", {"content": "Ana's train leaves at nine"}, "ana")
        assert (slow.result(), other.result()) == (201, 201)
    # Before the fix the batch took 6.7 s and the other store waited 6 s; linear rules take milliseconds.
    assert timings["pathological"] < 0.5 and timings["other"] < 0.5, timings


# --- 4. a purge is undone only by an operator ----------------------------------------------------------------

def test_a_callers_restore_cannot_lift_an_operators_purge(db):
    from core.errors import Tombstoned
    from grains.models import AuditEvent, Grain
    from memory.forgetting import grain_forget, grain_purge
    from memory.store import grain_store

    purged = grain_store(content="The vault code is 1234", caller="agent:chat").grain
    grain_purge(grain_id=purged.pk, reason="leaked secret", actor="ops:admin")
    with pytest.raises(Tombstoned, match="only an operator"):
        grain_store(content="The vault code is 1234", restore=True, caller="agent:chat")
    assert not Grain.objects.filter(content_hash=purged.content_hash).exists()

    forgotten = grain_store(content="I like green tea", caller="agent:chat").grain
    grain_forget(grain_id=forgotten.pk, reason="not true any more", caller="agent:chat")
    back = grain_store(content="I like green tea", restore=True, caller="agent:chat")
    assert back.created and back.restored
    entry = AuditEvent.objects.get(action="restore_by_store")
    assert entry.actor == "agent:chat" and entry.before["content_hash"] == forgotten.content_hash


def test_a_purge_leaves_no_content_behind_after_its_window(db, t0):
    from datetime import timedelta

    from grains.models import ActivityEvent, AuditEvent, Source, Tombstone
    from graph.models import Conduit, Trace
    from graph.services import grain_retrieve
    from memory.forgetting import grain_purge, tombstones_expire
    from memory.store import grain_store

    source = Source.objects.create(text="Notes: the launch code is 0000", caller_id=grain_store(
        content="unrelated", caller="a:chat", now=t0).grain.caller_id, created_at=t0)
    doomed = grain_store(content="The launch code is 0000", caller="a:chat", now=t0).grain
    doomed.source = source
    doomed.save(update_fields=["source"])
    found = grain_retrieve(query="launch code", caller="a:chat", now=t0, enforce_feedback=False)
    assert doomed.pk in [g.id for g in found.grains]
    grain_purge(grain_id=doomed.pk, reason="secret", actor="ops:admin", now=t0)
    assert "0000" not in Trace.objects.get(pk=found.trace_id).query
    assert "0000" not in Source.objects.get(pk=source.pk).text
    assert all("0000" not in json.dumps([e.before, e.after]) for e in AuditEvent.objects.all())
    tomb = Tombstone.objects.get(grain_id=doomed.pk)
    assert tomb.restore_data is not None  # restorable within the window
    assert tombstones_expire(now=t0 + timedelta(hours=1)) == 0
    assert tombstones_expire(now=t0 + timedelta(hours=25)) == 1
    tomb.refresh_from_db()
    assert tomb.restore_data is None and tomb.preview == "" and tomb.content_hash == doomed.content_hash
    # A relation the rules found quotes both grains' values: its note goes with the relation, the log keeps none.
    old = grain_store(content="The office wifi password is tulip42", caller="a:chat", now=t0).grain
    new = grain_store(content="The office wifi password is orchid19", caller="a:chat", now=t0).grain
    related = Conduit.objects.filter(source__in=[old, new], target__in=[old, new]).exclude(note="")
    assert related.exists() and "orchid" in related.first().note
    grain_purge(grain_id=new.pk, reason="secret", actor="ops:admin", now=t0)
    logged = json.dumps([e.payload for e in ActivityEvent.objects.all()])
    assert "relation_found" in json.dumps([e.kind for e in ActivityEvent.objects.all()]) and "orchid" not in logged


# --- 5. identity: blocks, traces, reserved names ---------------------------------------------------------------

def test_a_blocked_client_is_refused_under_every_role_on_every_write(rest):
    base = rest[0]
    status, stored, _ = call(f"{base}/store", {"content": "Rex is a dog"}, headers=caller("rex-bot"))
    other = call(f"{base}/store", {"content": "Rex is a cat"}, headers=caller("someone"))[1]
    found = call(f"{base}/retrieve", {"query": "Rex"}, headers=caller("rex-bot"))[1]
    subprocess.run([sys.executable, "-c", "import django; django.setup(); from grains.corrections import "
                    "caller_block_set as b; b(caller='rex-bot:chat', blocked=True, reason='spam', actor='ops:admin')"],
                   cwd=ROOT, env={**os.environ, "FLUX_DATA_DIR": str(rest[1]),
                                  "DJANGO_SETTINGS_MODULE": "fluxsite.settings"}, check=True, timeout=120)
    grain = stored["grain"]["id"]
    attempts = {
        "store": ("/store", {"content": "Rex barks"}),
        "retrieve": ("/retrieve", {"query": "Rex"}),
        "feedback": ("/feedback", {"trace_id": found["trace_id"], "grain_id": found["grains"][0]["id"],
                                   "useful": True}),
        "relation": ("/relations", {"source_id": other["grain"]["id"], "target_id": grain, "kind": "contradicts"}),
    }
    for role in ("chat", "memory_writer", "background_lookup", "test"):
        for name, (path, body) in attempts.items():
            status, answer, _ = call(f"{base}{path}", body, headers=caller("rex-bot", role))
            assert status == 403 and answer["error"]["code"] == "caller_blocked", (role, name, answer)
    assert call(f"{base}/grains/{grain}")[1]["status"] == "active"  # the relation was not applied


def test_feedback_only_from_the_client_that_retrieved(rest):
    base = rest[0]
    call(f"{base}/store", {"content": "Mia plays the cello"}, headers=caller("mia"))
    found = call(f"{base}/retrieve", {"query": "cello"}, headers=caller("mia"))[1]
    rating = {"trace_id": found["trace_id"], "grain_id": found["grains"][0]["id"], "useful": False}
    status, answer, _ = call(f"{base}/feedback", rating, headers=caller("eve"))
    assert status == 403 and answer["error"]["code"] == "not_your_trace"
    assert call(f"{base}/traces/{found['trace_id']}")[1]["items"][0]["useful"] is None
    assert call(f"{base}/feedback", rating, headers=caller("mia"))[0] == 202


def test_reserved_identities_are_refused_from_outside(rest):
    base = rest[0]
    for headers in (caller("flux-dreams", "system"), caller("flux-terminal", "admin"),
                    {"X-Caller-Id": "flux-eval:test"}):
        status, answer, _ = call(f"{base}/store", {"content": "I am the system"}, headers=headers)
        assert status == 403 and answer["error"]["code"] == "reserved_identity"


def test_the_api_keeps_its_security_headers_and_the_admin_its_sessions_and_csrf(rest):
    """Under ASGI the API answers through a lighter middleware chain (fluxsite/asgi.py) than the admin's."""
    base = rest[0]
    status, _, headers = call(f"{base}/retrieve", {"query": "anything"}, headers=caller("headers"))
    assert status == 200 and headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin" and "Set-Cookie" not in headers
    status, _, headers = call(f"{base}/admin/login/")  # a page of the admin's chain (it says how to get a link)
    assert status == 200 and headers["X-Frame-Options"] == "DENY"
    status, _, _ = call(f"{base}/admin/login/", b"username=x&password=y", method="POST",
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 403  # no CSRF token: the admin's chain still checks it
    assert call(f"{base}/admin", method="GET")[0] == 301  # the admin's paths, slash or not, keep the full chain


# --- 6. no cross-site writes; one dream run at a time ----------------------------------------------------------

def test_writes_need_json_and_refuse_a_foreign_origin(rest):
    base = rest[0]
    for path in ("/dreams/run", "/health/snapshot", "/store"):
        status, answer, _ = call(f"{base}{path}", b"content=x", headers={"Content-Type": "text/plain"})
        assert status == 415 and answer["error"]["code"] == "unsupported_media_type"
        status, answer, _ = call(f"{base}{path}", {"content": "x"}, headers={"Origin": "http://evil.example"})
        assert status == 403 and answer["error"]["code"] == "foreign_origin"
    assert call(f"{base}/health/snapshot", {}, headers={"Origin": base})[0] == 200  # its own origin is fine


def test_a_body_sent_in_chunks_is_read_and_a_method_no_view_takes_is_a_405(rest):
    """A chunked body (no Content-Length) reached the view empty: "missing field(s) content", blaming the client.
    A DELETE without a JSON type was a 415 asking for one, though no view takes a DELETE at all."""
    where = urlsplit(rest[0])
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        conn.request("POST", "/store", body=iter([b'{"content": "Chunked: Ida ', b'tunes pianos"}']),
                     headers={"Content-Type": "application/json", **caller("chunks")}, encode_chunked=True)
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    assert response.status == 201 and answer["grain"]["content"] == "Chunked: Ida tunes pianos"
    grain = answer["grain"]["id"]
    for method in ("DELETE", "PUT", "PATCH"):
        status, answer, _ = call(f"{rest[0]}/grains/{grain}", method=method)
        assert status == 405 and answer["error"]["code"] == "method_not_allowed", (method, answer)
    status, answer, _ = call(f"{rest[0]}/store", b"", method="DELETE", headers={"Origin": "http://evil.example"})
    assert status == 405  # nothing a foreign page may do with it either


def test_a_second_dream_run_is_refused_while_one_runs(rest):
    base, data, _ = rest
    holder = subprocess.Popen([sys.executable, "-c", "import django, sys, time; django.setup(); "
                               "from grains.locks import lock_take; lock_take('dream_run', seconds=60); "
                               "print('held', flush=True); time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "FLUX_DATA_DIR": str(data),
                                   "DJANGO_SETTINGS_MODULE": "fluxsite.settings"})
    try:
        assert holder.stdout.readline().strip() == "held"
        status, answer, _ = call(f"{base}/dreams/run", {})
        assert status == 409 and answer["error"]["code"] == "dream_running"
        assert answer["error"]["details"]["started_at"]
    finally:
        holder.kill()
        holder.wait()


# --- 7. private files, logs without secrets -------------------------------------------------------------------

def test_init_makes_a_private_instance_and_start_keeps_it_private(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "FLUX_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "flux", "init", "--name", "p", "--yes"], env=env, check=True, timeout=300,
                   capture_output=True)
    folder = home / "p"
    (folder / "config.yaml").chmod(0o644)  # as an older version left it
    from flux.instance import Instance

    Instance(name="p", path=folder).make_private()
    modes = {p.relative_to(folder): stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}
    assert modes[Path(".")] == 0o700 and {"secret.key", "config.yaml", "flux.sqlite3"} <= {str(p) for p in modes}
    assert all(mode == (0o700 if (folder / p).is_dir() else 0o600) for p, mode in modes.items()), modes


def test_logs_keep_no_link_token_and_no_query(rest, tmp_path):
    base, data, log = rest
    call(f"{base}/admin/login-link/SECRETTOKENabc123")
    with dashboard_server(data, REST_PORT=base.rsplit(":", 1)[1]) as (board, board_log):
        assert call(f"{board}/api/search?q=mysecretquery")[0] == 200
    time.sleep(0.5)  # the access log is line-buffered
    text = log.read_text() + board_log.read_text()
    assert "/admin/login-link/..." in text and "/api/search?..." in text
    assert "SECRETTOKENabc123" not in text and "mysecretquery" not in text


# --- 2. the dashboard beyond this machine needs the viewing token -------------------------------------------------

def _ws(board: str, source: str, **kwargs: object):
    return connect(board.replace("http://", "ws://") + "/ws/activity", open_timeout=10, origin=board,
                   sock=socket.create_connection((urlsplit(board).hostname, urlsplit(board).port),
                                                 source_address=(source, 0)), **kwargs)


def test_a_remote_viewer_needs_the_token_for_pages_data_and_the_socket(rest):
    base, data, _ = rest
    token = "view-token-for-this-run"
    with dashboard_server(data, REST_PORT=base.rsplit(":", 1)[1], FLUX_VIEW_TOKEN=token) as (board, _):
        remote = "127.0.0.2"  # not this machine's own address: treated as a viewer on the LAN would be
        for path in ("/", "/chronicle", "/api/grains/1", "/api/search?q=Rex", "/api/activity",
                     "/static/dashboard/flux.js"):
            status, answer, sent = call(board + path, source=remote)
            assert status == 401 and answer["error"]["code"] == "viewing_token_required", path
            assert sent["X-Content-Type-Options"] == "nosniff" and sent["Referrer-Policy"] == "same-origin", path
        with pytest.raises(InvalidStatus):
            _ws(board, remote)
        status, _, headers = call(f"{board}/?token={token}", source=remote)
        assert status == 302 and headers["Location"] == "/" and "HttpOnly" in headers["Set-Cookie"]
        # The rest of the address kept as it came: a blank parameter, bytes that are not UTF-8.
        status, _, kept = call(f"{board}/chronicle?a=&token={token}&b=%ED%A0%80&c=1", source=remote)
        assert status == 302 and kept["Location"] == "/chronicle?a=&b=%ED%A0%80&c=1", kept["Location"]
        cookie = headers["Set-Cookie"].split(";")[0]
        assert call(f"{board}/api/activity", headers={"Cookie": cookie}, source=remote)[0] == 200
        with _ws(board, remote, additional_headers={"Cookie": cookie}) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "snapshot"
        assert call(f"{board}/api/activity", headers={"Cookie": cookie.split("=")[0] + "=wrong"},
                    source=remote)[0] == 401
        assert call(f"{board}/api/activity")[0] == 200  # this machine itself needs no token
    with dashboard_server(data, REST_PORT=base.rsplit(":", 1)[1]) as (board, _):  # not shared at all
        status, answer, _ = call(f"{board}/api/activity", source="127.0.0.2")
        assert status == 403 and answer["error"]["code"] == "not_shared"


# --- 9. sessions and one-time links ----------------------------------------------------------------------------

def _link(data: Path, base: str) -> str:
    out = subprocess.run([sys.executable, "manage.py", "flux_admin_link", "--base-url", base], cwd=ROOT,
                         env={**os.environ, "FLUX_DATA_DIR": str(data)}, capture_output=True, text=True, timeout=120,
                         check=True)
    return out.stdout.split()[0]


def test_a_link_logs_in_once_even_when_used_many_times_at_once(rest):
    base, data, _ = rest
    link = _link(data, base)
    barrier = threading.Barrier(6)

    def use(_: int) -> tuple[int, dict]:
        barrier.wait()
        status, _, headers = call(link)
        return status, headers

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(use, range(6)))
    wins = [headers for status, headers in results if status == 302]
    assert len(wins) == 1 and sorted(status for status, _ in results) == [302] + [403] * 5
    cookie = wins[0]["Set-Cookie"]
    name = "flux_" + data.name.lower().replace("-", "_") + "_session"
    assert cookie.startswith(name + "=") and "expires" not in cookie.lower() and "SameSite=Strict" in cookie


# --- 10. oversized bodies, credentials in messages, checks before the LLM -----------------------------------------

def _raw(base: str, request: bytes) -> tuple[bytes, bytes]:
    """Send ``request`` as it is on a new connection; the answer's head and body, read until the server closes
    the connection (a reset when it closes with some of the request unread)."""
    where = urlsplit(base)
    answer = b""
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        conn.sendall(request)
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


POST_BATCH = b"POST /store/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def test_a_100_mb_body_is_refused_with_413_before_it_is_read(rest):
    # Answered, and the connection closed, after 1 KiB of the 100 MiB: past 4 times the limit none of it is read.
    started = time.monotonic()
    head, body = _raw(rest[0], POST_BATCH + b"Content-Length: 104857600\r\n\r\n" + b"[" * 1024)
    assert head.startswith(b"HTTP/1.1 413") and json.loads(body)["error"]["code"] == "too_large"
    assert time.monotonic() - started < 1.5  # not held for the rest (DRAIN_SECONDS is 2)


def test_a_client_that_sends_its_whole_body_before_reading_gets_the_413(rest):
    # As most HTTP libraries do: the service reads and drops the rest of a body it refuses (up to 4 times the
    # limit), so the answer is there to read rather than a reset connection.
    where = urlsplit(rest[0])
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.request("POST", "/store", body=b'{"content": "' + b"x" * 5_000_000 + b'"}',
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 413 and json.loads(response.read())["error"]["code"] == "too_large"
    finally:
        conn.close()


def test_a_chunked_body_is_refused_with_413_once_it_passes_the_limit(rest):
    limit = DEFAULTS["MAX_REQUEST_BYTES"]  # the service runs with it
    chunks = b"%x\r\n%s\r\n" % (65536, b"[" * 65536) * (limit // 65536 + 1)  # no last chunk: never ends
    head, body = _raw(rest[0], POST_BATCH + b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
    assert head.startswith(b"HTTP/1.1 413") and b"connection: close" in head.lower()
    assert json.loads(body)["error"]["details"] == {"limit": limit}
    assert call(f"{rest[0]}/health")[0] == 200  # and the service goes on


def test_a_request_head_still_unfinished_past_16_kib_is_refused_with_400(rest):
    # A header that goes on and on: the server stops buffering it, answers, and closes the connection.
    head, _ = _raw(rest[0], b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 17_000)
    assert head.startswith(b"HTTP/1.1 400")


def test_llm_credentials_never_appear_in_an_error(db, flux_settings):
    from core.errors import LLMUnavailable
    from core.llm import ollama_generate_json

    with fake_ollama(lambda body: (500, {"error": "model not found"})) as (url, received):
        host = urlsplit(url).netloc
        flux_settings(OLLAMA_URL=f"http://bob:hunter2@{host}")
        with pytest.raises(LLMUnavailable) as caught:
            ollama_generate_json("hello")
    assert received and "hunter2" not in caught.value.message + json.dumps(caught.value.details)


def test_a_blocked_client_is_refused_before_the_llm_is_asked(db, flux_settings):
    from core.errors import CallerBlocked
    from grains.corrections import caller_block_set
    from memory.store import grain_extract

    caller_block_set(caller="noisy:chat", blocked=True, reason="spam", actor="ops:admin")
    with fake_ollama(lambda body: (200, {"response": json.dumps({"facts": ["x"]})})) as (url, received):
        flux_settings(OLLAMA_URL=url, OPERATING_MODE="flux_extracts")
        with pytest.raises(CallerBlocked):
            grain_extract(text="Noisy says many things", caller="noisy:memory_writer")
    assert received == []


# --- 11. hostile input is a 400 naming what was wrong, and nothing is written --------------------------------

def _refused(base: str, path: str, body: object, field: str, code: str = "invalid_input") -> str:
    status, answer, _ = call(f"{base}{path}", body, headers=caller("hostile"))
    assert status == 400, (path, status, answer)
    assert answer["error"]["code"] == code, answer
    if field:
        assert answer["error"]["details"]["field"] == field, answer
    return answer["error"]["message"]


def _grain_count(base: str) -> int:
    status, answer, _ = call(f"{base}/grains?limit=1000", headers=caller("hostile"))
    assert status == 200
    return len(answer["grains"])


def test_an_unpaired_surrogate_is_refused_in_every_text_field(rest):
    base, _, log = rest
    status, stored, _ = call(f"{base}/store", {"content": "Surrogates test anchor grain"}, headers=caller("hostile"))
    assert status == 201
    before = _grain_count(base)
    # JSON's "\ud800" decodes to half of a UTF-16 pair, alone: no text at all.
    message = _refused(base, "/store", '{"content": "lone \\ud800 surrogate"}', "content")
    assert "U+D800" in message and "surrogate" in message
    _refused(base, "/store", '{"content": "fine", "context": "\\udfff"}', "context")
    _refused(base, "/store/batch", '{"items": [{"content": "fine one"}, {"content": "bad \\udc00"}]}', "content")
    _refused(base, "/retrieve", '{"query": "lone \\ud800"}', "query")
    grain = stored["grain"]["id"]
    _refused(base, "/relations", {"source_id": grain, "target_id": grain + 1, "kind": "supports", "note": "\ud800"},
             "note")  # json.dumps writes the half as the escape "\\ud800"
    assert _grain_count(base) == before  # the batch's good first item was not stored either
    status, _, _ = call(f"{base}/store", '{"content": "a pair \\ud83d\\ude00 is one character"}',
                        headers=caller("hostile"))
    assert status == 201
    assert "Traceback" not in log.read_text(errors="replace")


def test_a_date_past_the_calendar_once_in_utc_is_refused(rest):
    base, _, log = rest
    before = _grain_count(base)
    for when in ("9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+01:00"):
        assert "years 1 to 9999" in _refused(base, "/store", {"content": f"dated {when}", "occurred_at": when},
                                             "occurred_at")
        _refused(base, "/store/batch", {"items": [{"content": f"batch {when}", "occurred_at": when}]}, "occurred_at")
        status, answer, _ = call(f"{base}/health/history?signal=orphan_rate&since={when.replace('+', '%2B')}")
        assert status == 400 and answer["error"]["details"]["field"] == "since", answer
    assert _grain_count(base) == before
    assert "Traceback" not in log.read_text(errors="replace")


def test_a_trace_id_past_the_databases_integers_is_refused(rest):
    base, _, log = rest
    status, answer, _ = call(f"{base}/traces/9223372036854775808", headers=caller("hostile"))
    assert status == 400 and answer["error"]["details"]["field"] == "trace_id", answer
    _refused(base, "/feedback", '{"trace_id": 99999999999999999999999, "grain_id": 1, "useful": true}', "trace_id")
    assert "Traceback" not in log.read_text(errors="replace")


def _rating(trace_id: str) -> str:
    return '{"trace_id": ' + trace_id + ', "grain_id": 1, "useful": true}'


def test_json_nested_deeper_than_the_api_needs_is_invalid_json(rest):
    base, _, log = rest
    for depth in (100_000, 900, 33):  # past the decoder's own depth (it fails), under it, just past the bound
        nested = "[" * depth + "]" * depth
        assert "nested deeper than 32 levels" in _refused(base, "/store", nested, "", code="invalid_json")
        _refused(base, "/feedback", _rating(nested), "", code="invalid_json")
    nested = "[" * 31 + "]" * 31  # within the bound: the field says what it wanted
    _refused(base, "/feedback", _rating(nested), "trace_id")
    assert "Traceback" not in log.read_text(errors="replace")


def test_a_message_quoting_what_was_sent_stays_short(rest):
    message = _refused(rest[0], "/store", {"content": "fine", "provenance": "x" * 1_000_000}, "provenance")
    assert len(message) == 1000 and message.endswith("…")


def test_relation_notes_logged_before_the_upgrade_are_taken_off_the_log(db, t0):
    """The migration that stops logging relation notes strips those already logged (from relation events only)."""
    import importlib

    from django.apps import apps

    from grains.models import ActivityEvent

    logged = ActivityEvent.objects.create(kind="epistemic.relation_found", created_at=t0, payload={
        "kind": "contradicts", "source_id": 1, "target_id": 2, "note": "different values (tulip 42 vs orchid 19)"})
    other = ActivityEvent.objects.create(kind="vitals.warning_raised", created_at=t0, payload={"note": "kept"})
    importlib.import_module("grains.migrations.0010_relation_notes_off_the_log").notes_off_the_log(apps, None)
    logged.refresh_from_db()
    other.refresh_from_db()
    assert logged.payload == {"kind": "contradicts", "source_id": 1, "target_id": 2}
    assert other.payload == {"note": "kept"}
