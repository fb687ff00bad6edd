"""MCP over stdio with an answer for every line: the SDK's stdio transport drops a line it cannot read (not JSON,
or not a JSON-RPC message) without a word, so a client waits forever for the reply to a malformed request. Here
each such line gets the JSON-RPC error it calls for, -32700 (parse error) or -32600 (invalid request, with its
id when it has one), and only sound messages reach the SDK."""
from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from mcp_bridge.http import message_problem


def refusal(line: str) -> str | None:
    """The JSON-RPC error answering ``line``, or None when it is a message the SDK can take."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(None, types.PARSE_ERROR, f"Parse error: {exc}")
    ident = message.get("id") if isinstance(message, dict) else None
    ident = ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None
    problem = message_problem(message)  # an id of 1.5 or an object was taken for a notification, answered never
    if problem is not None:
        return _error(ident, types.INVALID_REQUEST, f"Invalid request: {problem}")
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError as exc:
        first = str(exc).splitlines()
        return _error(ident, types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message"
                      + (f" ({first[0]})" if first else ""))
    return None


def _error(ident: str | int | None, code: int, message: str) -> str:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message)) \
        .model_dump_json(by_alias=True)


class _Out:
    """stdout shared by the SDK's writer and the refusals: one whole line at a time."""

    def __init__(self, file: anyio.AsyncFile[str]) -> None:
        self.file, self.lock = file, anyio.Lock()

    async def write(self, text: str) -> None:
        async with self.lock:
            await self.file.write(text)
            await self.file.flush()

    async def flush(self) -> None:
        return None  # every write is flushed


class _Checked:
    """stdin as the SDK reads it: sound lines pass, the others are answered on stdout and skipped."""

    def __init__(self, source: anyio.AsyncFile[str], out: _Out) -> None:
        self.source, self.out = source, out

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            if not line.strip():
                continue
            error = refusal(line)
            if error is None:
                yield line
            else:
                await self.out.write(error + "\n")


async def serve_stdio(server: MCPServer) -> None:
    """Run ``server`` over this process's stdin and stdout, every line answered."""
    out = _Out(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8")))
    source = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin=_Checked(source, out), stdout=out) as (read_stream, write_stream):
        lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does the same with its default streams
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
