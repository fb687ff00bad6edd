"""MCP over streamable HTTP, end to end with the official SDK's client: `manage.py flux_mcp --http` (what
`flux start` runs) in front of the real REST service, both on loopback. The tools work, errors are tool errors,
restarts are survived, and with API keys the key is required and decides the caller."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from core.keys import add_to_file
from core.net import free_port, wait_for_http
from tests.mcp_bridge.test_mcp import TOOLS, ok, text
from tests.servers import ROOT, flux_server

TIMEOUT = 60.0


@contextmanager
def mcp_http(data_dir: Path, rest_port: int, port: int | None = None, **env: str) -> Iterator[str]:
    """The MCP server over HTTP on a free loopback port, a client of REST on ``rest_port``; yields its URL."""
    port = port or free_port()
    environ = {**{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
               "FLUX_DATA_DIR": str(data_dir), "REST_HOST": "127.0.0.1", "REST_PORT": str(rest_port),
               "MCP_HOST": "127.0.0.1", "MCP_PORT": str(port), **env}
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "mcp-http.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "manage.py", "flux_mcp", "--http"], cwd=ROOT, env=environ,
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for_http(url, proc=proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@asynccontextmanager
async def session(url: str, key: str | None = None,
                  headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the Flux server at ``url`` over streamable HTTP (with the API ``key`` as a
    bearer token, or the given ``headers``, as a snippet sends them)."""
    headers = headers if headers is not None else {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http:
        async with streamable_http_client(url, http_client=http) as (read, write), initialized(read, write) as client:
            yield client


@asynccontextmanager
async def initialized(read: Any, write: Any) -> AsyncIterator[ClientSession]:
    """An MCP client session over a transport's ``read`` and ``write`` streams, initialized with the Flux server
    (its name checked)."""
    async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as client:
        with anyio.fail_after(TIMEOUT):
            info = await client.initialize()
        assert info.server_info.name == "flux-memory"
        yield client


async def call(client: ClientSession, tool: str, **arguments: Any):
    with anyio.fail_after(TIMEOUT):
        return await client.call_tool(tool, arguments)


def test_a_turn_of_work_errors_and_restarts_over_http(tmp_path):
    rest_port = free_port()
    with ExitStack() as rest, mcp_http(tmp_path / "bridge", rest_port) as url:
        rest.enter_context(flux_server(tmp_path / "service", port=rest_port))
        anyio.run(_turn_and_rest_restart, url, rest, tmp_path / "service", rest_port)
    assert not list((tmp_path / "bridge").glob("*.sqlite3*"))  # the MCP server never opens a database


async def _turn_and_rest_restart(url: str, rest: ExitStack, data: Path, rest_port: int) -> None:
    async with session(url) as client:
        with anyio.fail_after(TIMEOUT):
            tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == TOOLS
        stored = ok(await call(client, "flux_store", content="The user's cat is called Miso",
                               provenance="user_stated", caller_id="http-agent:chat"))
        found = ok(await call(client, "flux_retrieve", query="what is the cat called", caller_id="http-agent:chat"))
        assert stored["grain"]["id"] in [g["id"] for g in found["grains"]]
        for grain in found["grains"]:
            rated = ok(await call(client, "flux_feedback", trace_id=found["trace_id"], grain_id=grain["id"],
                                  useful=True, caller_id="http-agent:chat"))
            assert rated["status"] == "accepted"
        assert ok(await call(client, "flux_health"))["grains"]["total"] == 1
        missing = await call(client, "flux_feedback", trace_id=987654, grain_id=1, useful=True,
                             caller_id="http-agent:chat")
        assert missing.is_error and "not_found (HTTP 404)" in text(missing)
        bad = await call(client, "flux_retrieve", query="cat", caller_id="no-role")
        assert bad.is_error and "'client:role'" in text(bad)

        await anyio.to_thread.run_sync(rest.close)  # the REST service goes away under the open session
        down = await call(client, "flux_health")
        assert down.is_error and "service_unavailable" in text(down) and "not running" in text(down)
        await anyio.to_thread.run_sync(lambda: rest.enter_context(flux_server(data, port=rest_port)))
        assert ok(await call(client, "flux_health"))["grains"]["total"] == 1  # and is back, same session


def test_a_restarted_mcp_server_takes_new_sessions(tmp_path):
    rest_port, port = free_port(), free_port()
    with flux_server(tmp_path / "service", port=rest_port):
        with mcp_http(tmp_path / "bridge", rest_port, port) as url:
            anyio.run(_store_one, url, "Ada prefers tea")
        with mcp_http(tmp_path / "bridge", rest_port, port) as url:  # the same URL, a new process
            anyio.run(_store_one, url, "Ada prefers green tea")
            # A GET (the URL a person opens) is answered at once: no stream is offered, so none is held open.
            stream = httpx2.get(url, headers={"Accept": "text/event-stream"}, timeout=10)  # held open: a timeout
            assert stream.status_code == 405 and stream.headers["allow"] == "POST", stream.text
            assert stream.json()["error"]["code"] == "method_not_allowed"


async def _store_one(url: str, content: str) -> None:
    async with session(url) as client:
        assert ok(await call(client, "flux_store", content=content, caller_id="http-agent:chat"))["created"]


def test_with_api_keys_the_key_is_required_and_decides_the_caller(tmp_path):
    data = tmp_path / "service"
    data.mkdir()
    key = add_to_file(data / "api-keys", "team-bot")
    rest_port = free_port()
    with flux_server(data, port=rest_port), mcp_http(data, rest_port) as url:
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        wrong = httpx2.post(url, json={}, headers={"Authorization": "Bearer flux_wrong"})
        assert wrong.status_code == 401
        anyio.run(_store_as_someone_else, url, key)
        request = urllib.request.Request(f"http://127.0.0.1:{rest_port}/callers",
                                         headers={"Authorization": f"Bearer {key}"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            callers = {f"{c['client']}:{c['role']}" for c in json.loads(response.read())["callers"]}
    assert callers == {"team-bot:memory_writer"}


async def _store_as_someone_else(url: str, key: str) -> None:
    async with session(url, key) as client:
        stored = ok(await call(client, "flux_store", content="Standup moved to 10:00",
                               caller_id="impostor:memory_writer"))
        assert stored["created"]


def test_beyond_loopback_without_keys_it_refuses_to_start(tmp_path):
    environ = {**{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
               "FLUX_DATA_DIR": str(tmp_path), "MCP_HOST": "0.0.0.0", "MCP_PORT": str(free_port())}
    out = subprocess.run([sys.executable, "manage.py", "flux_mcp", "--http"], cwd=ROOT, env=environ,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "MCP server would listen on 0.0.0.0 without API keys" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("with_key", [False, True])
def test_mcp_config_writes_the_http_snippets(tmp_path, with_key):
    from flux.instance import Instance
    from flux.integrations import snippets

    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "config.yaml").write_text("MCP_PORT: 7999\n" + ("API_KEY: flux_abc\n" if with_key else ""))
    written = snippets(Instance("mem", folder))
    entry = json.loads(written["claude_code_http.json"])["mcpServers"]["flux-mem"]
    assert entry["type"] == "http" and entry["url"] == "http://127.0.0.1:7999/mcp"
    assert entry.get("headers") == ({"Authorization": "Bearer flux_abc"} if with_key else None)
    assert 'url = "http://127.0.0.1:7999/mcp"' in written["codex_http.toml"]
    # Written again over files and a folder someone opened up: private again, the key inside.
    from flux.integrations import write_snippets

    instance = Instance("mem", folder)
    first = write_snippets(instance)
    (folder / "integrations").chmod(0o755)
    for path in first:
        path.chmod(0o644)
    for path in write_snippets(instance):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert (folder / "integrations").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("message,problem", [
    ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, "'jsonrpc' must be \"2.0\""),
    ({"id": 1, "method": "ping"}, "'jsonrpc' must be \"2.0\""),
    ({"jsonrpc": "2.0", "id": 1, "method": 5}, "'method' must be a string"),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}, "'params' must be an object"),
    ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "a batch (a JSON array) is not taken"),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, "'id' must be a string or an integer"),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "'id' must be a string or an integer"),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, "'id' must be a string or an integer"),
])
def test_a_message_that_is_no_request_is_told_so(mcp_alone, message, problem):
    """JSON-RPC's 'invalid request' naming what is wrong: not 'invalid params' with a dump of the SDK's models,
    and not silence for an id it took for a notification's."""
    answer = httpx2.post(mcp_alone, json=message, headers={"Accept": "application/json, text/event-stream"},
                         timeout=TIMEOUT)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == -32600 and problem in error["message"], error


def test_a_body_not_sent_as_json_or_in_a_protocol_version_unknown_is_told_so(mcp_alone):
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    plain = httpx2.post(mcp_alone, content=ping, timeout=TIMEOUT,
                        headers={"Accept": "application/json, text/event-stream", "Content-Type": "text/plain"})
    assert plain.status_code == 415 and "Content-Type: application/json" in plain.json()["error"]["message"]
    for version in ("garbage", ""):
        odd = httpx2.post(mcp_alone, content=ping, timeout=TIMEOUT,
                          headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                                   "MCP-Protocol-Version": version})
        assert odd.status_code == 400 and odd.json()["error"]["code"] == -32600, odd.text
        assert f"unsupported MCP-Protocol-Version {version!r}; this server speaks" in odd.json()["error"]["message"]


def test_a_sound_request_still_reaches_the_protocol(mcp_alone):
    answer = httpx2.post(mcp_alone, json={"jsonrpc": "2.0", "id": "a", "method": "ping"},
                         headers={"Accept": "application/json, text/event-stream"}, timeout=TIMEOUT)
    assert answer.status_code == 200 and answer.json() == {"jsonrpc": "2.0", "id": "a", "result": {}}, answer.text


@pytest.fixture(scope="module")
def mcp_alone(tmp_path_factory):
    """The MCP server over HTTP with no REST service behind it: the protocol's own answers need none."""
    with mcp_http(tmp_path_factory.mktemp("bridge"), free_port()) as url:
        yield url
