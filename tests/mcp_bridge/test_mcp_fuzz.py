"""The MCP bridge fed malformed JSON-RPC, over stdio and over HTTP: bad JSON, wrong shapes, unknown methods and
tools, wrong argument types, huge strings. Every message with an id gets an answer with that id (a malformed
line gets id null), nothing crashes, and the bridge still answers a ping afterwards."""
from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from core.net import free_port, wait_for_http
from core.version import flux_version
from tests.servers import ROOT

CASES = 300  # per transport; seeded, so every run sends the same ones
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}


def malformed(rng: random.Random, n: int) -> tuple[str, object]:
    """(the line to send, the id its answer must carry: n, or None when the line has no readable id)."""
    huge = "x" * rng.choice([10_000, 200_000, 1_000_000])
    junk = rng.choice([None, 7, -1.5, True, "text", [], [1, "a"], {}, {"a": {"b": [None]}}, huge])
    kind = n % 10
    if kind == 0:
        return rng.choice(['{"jsonrpc": "2.0", "id": ', "{not json", "[1, 2", '"unterminated', "\x00\x01", huge]), None
    if kind == 1:
        return json.dumps(junk), None  # JSON, but no message
    if kind == 2:
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": rng.choice(["nope", "tools/nope", "", huge[:5000]])}), n
    if kind == 3:
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": junk}), n
    if kind == 4:
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": rng.choice(["flux_nothing", "", huge[:1000]]), "arguments": {}}}), n
    if kind == 5:
        tool = rng.choice(["flux_store", "flux_retrieve", "flux_feedback", "flux_list_grains"])
        field = rng.choice(["content", "query", "trace_id", "grain_id", "useful", "limit", "status", "unknown"])
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": tool, "arguments": {field: junk}}}), n
    if kind == 6:
        return json.dumps({"jsonrpc": "1.0", "id": n, "method": "ping"}), n
    if kind == 7:
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": junk}), n
    if kind == 8:
        return json.dumps({"jsonrpc": "2.0", "id": n, "method": "resources/read", "params": {"uri": junk}}), n
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": "flux_store", "arguments": {"content": huge}}}), n


def environ(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    # No REST service behind the bridge: a well-formed call fails as a tool error, the rest never gets that far.
    return {**env, "FLUX_DATA_DIR": str(tmp_path), "REST_HOST": "127.0.0.1", "REST_PORT": str(free_port())}


def test_the_stdio_bridge_answers_every_malformed_message(tmp_path):
    bridge = subprocess.Popen([sys.executable, "manage.py", "flux_mcp"], cwd=ROOT, env=environ(tmp_path),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ask(line: str) -> dict:
        bridge.stdin.write(line + "\n")
        bridge.stdin.flush()
        ready, _, _ = select.select([bridge.stdout], [], [], 30)
        assert ready, f"no answer to {line[:80]!r}"
        return json.loads(bridge.stdout.readline())

    try:
        hello = ask(json.dumps(INIT))["result"]["serverInfo"]
        assert hello["name"] == "flux-memory" and hello["version"] == flux_version()  # it said ""
        bridge.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        rng = random.Random(7)
        refused = 0
        for n in range(1, CASES + 1):
            line, ident = malformed(rng, n)
            answer = ask(line)
            assert answer["id"] == ident and ("error" in answer or "result" in answer), (line[:80], answer)
            refused += "error" in answer or answer["result"].get("isError") is True
        assert refused > CASES * 0.9  # a few are sound after all (tools/list with empty params)
        # Lines that went unanswered: a lone surrogate the SDK's reader refuses (a client cutting a string in the
        # middle of an emoji), an id the SDK took for a notification's.
        store = {"name": "flux_store", "arguments": {"content": "half \ud83d of a pair", "caller_id": "s:chat"}}
        for line, ident, says in (
                (json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": store}), 5, "surrogate"),
                ('{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"cursor": "\\udfff"}}', 6,
                 "surrogate"),
                ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', None, "'id' must be"),
                ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None, "'id' must be")):
            answer = ask(line)
            assert answer["id"] == ident and answer["error"]["code"] == -32600, (line, answer)
            assert says in answer["error"]["message"], answer
        assert ask(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "ping"})) == \
            {"jsonrpc": "2.0", "id": "last", "result": {}}
        assert bridge.poll() is None
    finally:
        bridge.kill()
        _, err = bridge.communicate(timeout=30)
    assert "Traceback" not in err


def test_the_http_bridge_answers_every_malformed_message(tmp_path):
    port = free_port()
    env = {**environ(tmp_path), "MCP_HOST": "127.0.0.1", "MCP_PORT": str(port)}
    with open(tmp_path / "mcp.log", "wb") as log:
        bridge = subprocess.Popen([sys.executable, "manage.py", "flux_mcp", "--http"], cwd=ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"

    def post(line: str) -> tuple[int, dict | None]:
        request = urllib.request.Request(url, data=line.encode(errors="replace"), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            body = err.read()
            return err.code, json.loads(body) if body.startswith(b"{") else None

    try:
        wait_for_http(url, proc=bridge)
        rng = random.Random(7)
        statuses = []
        for n in range(1, CASES + 1):
            line, ident = malformed(rng, n)
            status, answer = post(line)
            statuses.append(status)
            assert status < 500, (line[:80], status, answer)
            if status == 200:  # a JSON-RPC answer to a request with an id
                assert answer["id"] == ident and ("error" in answer or "result" in answer), (line[:80], answer)
            else:  # refused before the session: a JSON-RPC error body with no id
                assert status in (400, 404, 406, 413), (line[:80], status)
                assert answer is None or answer["error"]["code"] < 0
        assert post(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "ping"}))[0] == 200
        assert bridge.poll() is None and 200 in statuses and 400 in statuses
    finally:
        bridge.terminate()
        bridge.wait(timeout=30)
    assert "Traceback" not in (tmp_path / "mcp.log").read_text(errors="replace")
