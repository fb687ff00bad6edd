"""The MCP server over the protocol's streamable HTTP transport, on MCP_HOST:MCP_PORT (`flux start` runs it).

The same six tools as over stdio, from the official SDK's streamable-HTTP app, stateless and answering in
JSON: each request stands alone, so a client keeps working across a restart of this process or of the REST
service behind it. It is its own process (under uvicorn) rather than a path of the REST API: the SDK's app
needs an ASGI lifespan, which daphne does not run, and it stays a thin client of REST that never opens the
database. With API keys configured, a request without a valid ``Authorization: Bearer`` key is refused
with 401 before the protocol sees it, and the key is passed on to REST, which takes the caller's identity
from it.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

from core.keys import KEYS_FILE, Keyring, KeysUnreadable
from mcp_bridge.client import FluxClient
from mcp_bridge.server import build_server

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
PATH = "/mcp"


class Gate:
    """ASGI middleware in front of the protocol: with keys configured, HTTP requests need a valid bearer key (401
    otherwise). A GET of the endpoint is 405, as the protocol allows a server that offers no stream of its own:
    stateless, this one has nothing to send on it (the SDK's app would hold it open for ever, sending pings). A
    POST must be JSON (415), in a protocol version spoken here and an envelope that is a request (400, JSON-RPC's
    -32600 naming what is wrong)."""

    def __init__(self, app: ASGIApp, keyring: Keyring) -> None:
        self.app, self.keyring = app, keyring

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            refused = scope["type"] == "http" and self.keyring.enabled and not self._allowed(scope)
        except KeysUnreadable as exc:
            await _refuse(send, 503, "keys_unreadable", str(exc))
            return
        if refused:
            await _refuse(send, 401, "unauthorized", "this memory requires an API key: send Authorization: Bearer "
                          "<key> (`flux keys add --name <instance> CLIENT`)",
                          (b"www-authenticate", b'Bearer realm="flux-memory"'))
            return
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/") == PATH:
            await _refuse(send, 405, "method_not_allowed", f"this server offers no stream: POST JSON-RPC to {PATH} "
                          "(the answer comes in the response)", (b"allow", b"POST"))
            return
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].rstrip("/") == PATH:
            headers = dict(scope.get("headers") or [])
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if kind != b"application/json":
                await _invalid(send, 415, f"a message is JSON: send Content-Type: application/json, not "
                                          f"{kind.decode('latin-1')[:60]!r}")
                return
            version = headers.get(b"mcp-protocol-version")
            if version is not None and version.decode("latin-1") not in SUPPORTED_PROTOCOL_VERSIONS:
                await _invalid(send, 400, f"unsupported MCP-Protocol-Version {version.decode('latin-1')[:40]!r}; "
                                          f"this server speaks {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}")
                return
            body = await _body(receive)
            problem = envelope_problem(body)
            if problem is not None:
                await _invalid(send, 400, problem)
                return
            receive = _replayed(body, receive)
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        value = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, key = value.partition(" ")
        return scheme.lower() == "bearer" and bool(key.strip()) and self.keyring.client_of(key.strip()) is not None


INVALID_REQUEST = -32600  # JSON-RPC's code for a message that is JSON but no request


def envelope_problem(raw: bytes) -> str | None:
    """What is wrong with a POSTed JSON-RPC message's envelope, if anything (pure). Not JSON at all is left to the
    protocol (-32600 is for JSON that is no request: the SDK answers -32700 for the rest). Its own check named
    the wrong code (-32602) with a dump of its models, and took an id of null, true or 1.5 for a notification,
    answering nothing."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return message_problem(message)


def message_problem(message: object) -> str | None:
    """What is wrong with a decoded JSON-RPC message's envelope, if anything (pure; both transports')."""
    if isinstance(message, list):
        return "a batch (a JSON array) is not taken: send one message per request"
    if not isinstance(message, dict):
        return "a message must be a JSON object"
    if message.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if "method" in message and not isinstance(message["method"], str):
        return "'method' must be a string"
    if "params" in message and not isinstance(message["params"], dict):
        return "'params' must be an object"
    if "id" in message and (isinstance(message["id"], bool) or not isinstance(message["id"], (str, int))):
        return "'id' must be a string or an integer (a notification has none)"
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # valid JSON to Python, which the protocol's own reader refuses
        return "a string holds half of a UTF-16 surrogate pair (an escape such as \\ud800 alone): send whole characters"
    except (ValueError, RecursionError):
        return None
    return None


async def _invalid(send: Send, status: int, message: str) -> None:
    """JSON-RPC's 'invalid request', before the protocol sees the message."""
    await _answer(send, status, {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}})


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client went away: the protocol sees what came
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A receive that gives ``body`` (read already) once, then what ``receive`` gives (the disconnect)."""
    sent = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(send: Send, status: int, code: str, message: str, *headers: tuple[bytes, bytes]) -> None:
    """An answer in Flux Memory's error contract, before the protocol sees the request."""
    await _answer(send, status, {"error": {"code": code, "message": message, "details": {}}}, *headers)


async def _answer(send: Send, status: int, payload: dict, *headers: tuple[bytes, bytes]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def http_app(*, host: str, data_dir: Path, api_keys: str, rest: FluxClient | None = None) -> ASGIApp:
    """The streamable-HTTP MCP app at PATH, behind the gate."""
    server = build_server(rest)
    app = server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True, host=host)
    return Gate(app, Keyring(api_keys, data_dir / KEYS_FILE))


def serve(*, host: str, port: int, data_dir: Path, api_keys: str) -> None:
    """Run the app under uvicorn until stopped (SIGTERM or Ctrl-C)."""
    import uvicorn

    config = uvicorn.Config(http_app(host=host, data_dir=data_dir, api_keys=api_keys), host=host, port=port,
                            log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run()
