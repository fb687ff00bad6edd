"""End to end: an MCP client launches `manage.py flux_mcp` over stdio, which calls the real service.

The service runs as `flux start` runs it, on its own instance folder; the bridge gets a
different FLUX_DATA_DIR, so it could not reach the service's database even if
it tried, and the tests check it never created one of its own.
"""
from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from core.net import free_port
from tests.servers import ROOT, flux_server

TIMEOUT = 60.0
TOOLS = {"flux_store", "flux_retrieve", "flux_feedback", "flux_health", "flux_list_grains", "flux_onboard"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The real service on a fresh instance: (base URL, port), shared by this module's tests."""
    with flux_server(tmp_path_factory.mktemp("service") / "inst") as (base_url, _log):
        yield base_url, int(base_url.rsplit(":", 1)[1])


@asynccontextmanager
async def bridge(port: int, data_dir: Path) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with `python manage.py flux_mcp`, pointed at REST_PORT=port."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(REST_HOST="127.0.0.1", REST_PORT=str(port), FLUX_DATA_DIR=str(data_dir))
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "flux_mcp"], env=env, cwd=ROOT)
    with open(data_dir.parent / f"{data_dir.name}-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                with anyio.fail_after(TIMEOUT):
                    await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    with anyio.fail_after(TIMEOUT):
        return await session.call_tool(tool, arguments)


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured answer of a successful call (the same JSON is also sent as text)."""
    assert not result.is_error, text(result)
    assert json.loads(text(result)) == result.structured_content
    return result.structured_content


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def assert_no_database(data_dir: Path) -> None:
    assert data_dir.is_dir() and not list(data_dir.glob("*.sqlite3*")), list(data_dir.iterdir())


def test_a_turn_of_work_through_the_bridge(service: tuple[str, int], tmp_path: Path) -> None:
    base_url, port = service
    anyio.run(_a_turn_of_work, port, tmp_path / "bridge")
    assert_no_database(tmp_path / "bridge")
    with urllib.request.urlopen(base_url + "/callers", timeout=TIMEOUT) as response:
        callers = {(c["client"], c["role"]): c for c in json.loads(response.read())["callers"]}
    assert callers[("pytest", "chat")]["retrievals"] == 1 and callers[("pytest", "chat")]["stored"] == 1
    assert callers[("pytest", "memory_writer")]["stored"] == 1


async def _a_turn_of_work(port: int, data_dir: Path) -> None:
    async with bridge(port, data_dir) as session:
        with anyio.fail_after(TIMEOUT):
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.input_schema["type"] == "object" and tool.description, tool.name
        assert tools["flux_store"].input_schema["required"] == ["content"]
        assert "user_stated" in tools["flux_store"].input_schema["properties"]["provenance"]["enum"]
        assert "flux_feedback" in tools["flux_retrieve"].description

        guide = await call(session, "flux_onboard")
        assert not guide.is_error
        for word in ("flux_retrieve", "flux_store", "flux_feedback", "caller_id", "caller_extracts", "memory_writer"):
            assert word in text(guide), word

        dog = ok(await call(session, "flux_store", content="The user's dog is called Rex and loves the beach",
                            provenance="user_stated", context="chat-1", caller_id="pytest:chat"))
        city = ok(await call(session, "flux_store", content="The user lives in Lyon near the river",
                             context="chat-1", client="pytest", role="memory_writer"))
        assert dog["created"] and city["created"]
        assert dog["grain"]["provenance"] == "user_stated" and city["grain"]["provenance"] == "ai_stated"
        assert dog["grain"]["context"] == "chat-1"

        found = ok(await call(session, "flux_retrieve", query="what is the dog called", limit=5,
                              caller_id="pytest:chat"))
        returned = [grain["id"] for grain in found["grains"]]
        assert dog["grain"]["id"] in returned
        for grain_id in returned:
            rated = ok(await call(session, "flux_feedback", trace_id=found["trace_id"], grain_id=grain_id,
                                  useful=grain_id == dog["grain"]["id"], client="pytest", role="chat"))
            assert rated["status"] == "accepted"

        health = ok(await call(session, "flux_health"))
        assert health["grains"] and len(health["signals"]) == 14 and health["status"] in ("ok", "warn", "critical")
        listed = ok(await call(session, "flux_list_grains", status="active", limit=10))
        assert {dog["grain"]["id"], city["grain"]["id"]} <= {grain["id"] for grain in listed["grains"]}


def test_service_errors_are_tool_errors(service: tuple[str, int], tmp_path: Path) -> None:
    anyio.run(_service_errors, service[1], tmp_path / "bridge")
    assert_no_database(tmp_path / "bridge")


async def _service_errors(port: int, data_dir: Path) -> None:
    async with bridge(port, data_dir) as session:
        missing = await call(session, "flux_feedback", trace_id=987654, grain_id=1, useful=True,
                             caller_id="pytest:test")
        assert missing.is_error and "not_found (HTTP 404)" in text(missing), text(missing)

        empty = await call(session, "flux_store", content="   ", caller_id="pytest:test")
        assert empty.is_error and "invalid_input (HTTP 400)" in text(empty), text(empty)

        malformed = await call(session, "flux_retrieve", query="dog", caller_id="pytest-chat")
        assert malformed.is_error, text(malformed)
        assert "invalid_input" in text(malformed) and "'client:role'" in text(malformed)
        assert "HTTP" not in text(malformed)  # refused by the bridge, before any call

        typo = await call(session, "flux_store", content="a fact with a context", contxt="chat-1",
                          caller_id="pytest:test")
        assert typo.is_error and "unknown argument(s) contxt; flux_store takes" in text(typo), text(typo)
        assert "HTTP" not in text(typo)  # refused by the bridge, nothing stored without its context

        half = await call(session, "flux_store", content="a fact", client="pytest")
        assert half.is_error and "role is missing" in text(half), text(half)

        bad_role = await call(session, "flux_store", content="a fact", client="pytest", role="boss")
        assert bad_role.is_error and "role" in text(bad_role), text(bad_role)

        # A client name no header can carry is refused before any call, and the next call (maybe another
        # agent's, on a shared server) is served as usual: the connection is not left half-used.
        for client in ("Łódź", "a\r\nX-Evil: 1", "a\u0000b"):
            odd = await call(session, "flux_store", content="a fact", client=client, role="chat")
            assert odd.is_error and "invalid_input" in text(odd) and "client" in text(odd), text(odd)
            assert "HTTP" not in text(odd)
            assert not (await call(session, "flux_health")).is_error
        # Numbers and flags as REST takes them: a string or a bool where a number goes is refused, as REST does.
        for tool, arguments in (("flux_store", {"content": "a restored fact", "restore": "yes"}),
                                ("flux_retrieve", {"query": "dog", "limit": "5"}),
                                ("flux_retrieve", {"query": "dog", "limit": True}),
                                ("flux_feedback", {"trace_id": 1, "grain_id": 1, "useful": "true"}),
                                ("flux_feedback", {"trace_id": 1, "grain_id": 1, "useful": 1}),
                                ("flux_list_grains", {"offset": "2"})):
            caller = {} if tool == "flux_list_grains" else {"caller_id": "pytest:test"}
            wrong = await call(session, tool, **caller, **arguments)
            assert wrong.is_error and "HTTP" not in text(wrong), (tool, arguments, text(wrong))
            named = next(iter(arguments.keys() - {"query", "content", "trace_id", "grain_id"}))
            assert "unknown argument" not in text(wrong) and named in text(wrong), text(wrong)
        stored = await call(session, "flux_list_grains")
        assert "a restored fact" not in text(stored)
        nothing = await call(session, "flux_health", x=1)
        assert nothing.is_error and "flux_health takes no arguments" in text(nothing), text(nothing)


def test_service_down_says_how_to_start_it(tmp_path: Path) -> None:
    anyio.run(_service_down, free_port(), tmp_path / "bridge")
    assert_no_database(tmp_path / "bridge")


async def _service_down(port: int, data_dir: Path) -> None:
    async with bridge(port, data_dir) as session:
        for tool, arguments in (("flux_health", {}), ("flux_retrieve", {"query": "dog", "caller_id": "pytest:chat"})):
            down = await call(session, tool, **arguments)
            assert down.is_error, text(down)
            message = text(down)
            assert "service_unavailable" in message and f"not running at http://127.0.0.1:{port}" in message
            assert "connection refused" in message and "flux start --name" in message, message

        guide = await call(session, "flux_onboard")
        assert not guide.is_error and "flux_retrieve" in text(guide)
