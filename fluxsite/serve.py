"""Run a Flux listener: ``python -m fluxsite.serve -b HOST -p PORT [--reuse-port] APP``.

The REST API (``fluxsite.asgi:application``) runs under uvicorn (h11, which refuses a request whose line and
headers are still unfinished past 16 KiB): it answers a retrieval about 0.6 ms sooner than daphne
(docs/performance.md). The dashboard (``fluxsite.dashboard_asgi:application``) runs under daphne, its websockets
through Channels. Each gets here what its server lacks:

- Bodies over MAX_REQUEST_BYTES are answered 413 (JSON, the project's error contract) as soon as their length
  is known, and the connection closed: the application never reads them in full (daphne itself would buffer all
  of it before calling the application; uvicorn hands it over as it comes, so there the check wraps the
  application, and drops the rest of the body, within bounds, before closing, so that the client reads the 413).
- The access log keeps no secrets: query strings (dashboard searches, the viewing token) and the token of an
  admin login link are cut from every line.
- The REST API refuses to listen beyond loopback unless API keys are configured.
- ``--reuse-port``: the listening socket is made here with SO_REUSEPORT and handed to the server, so several
  REST processes (WEB_WORKERS) listen on one port and the kernel spreads connections over them; each can die
  and be restarted alone.

For the dashboard everything else is daphne's command line, unchanged; the REST API takes only the above.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Any

from core.defaults import DEFAULTS
from core.env import env_value
from core.keys import open_rest_refusal
from core.logs import redact

REST_APP = "fluxsite.asgi:application"
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _max_bytes() -> int:
    return int(env_value("MAX_REQUEST_BYTES", DEFAULTS["MAX_REQUEST_BYTES"]))


def too_large(length: int) -> bytes:
    """The 413 answer's body: how long the body is at least, and the limit."""
    limit = _max_bytes()
    return json.dumps({"error": {"code": "too_large", "message": f"the body has {length} bytes or more; the limit "
                                 f"is {limit} (MAX_REQUEST_BYTES): split a batch into smaller ones",
                                 "details": {"limit": limit}}}).encode()


class BodyLimit:
    """ASGI: a request whose declared length, or whose body so far, is over MAX_REQUEST_BYTES is answered 413 at
    once, and its connection closed once the rest of the body is read and dropped (at most DRAIN_FACTOR times
    the limit in all, for at most DRAIN_SECONDS): a client that sends its whole body before it reads (most
    HTTP libraries) then reads the 413, where a close with the body unread would reset the connection under it.
    Past those bounds the connection is closed with the rest unread. The application sees a client that went
    away (Django's handler then answers nothing) and nothing it sends after is passed on."""

    def __init__(self, app: Callable[[Message, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = _max_bytes()
        declared = next((value for name, value in scope["headers"] if name == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(send, int(declared))
            await self._drain(receive, send, 0, int(declared) <= limit * DRAIN_FACTOR, limit)
            return
        received, refused, ended = 0, False, False

        async def counted() -> Message:
            nonlocal received, refused, ended
            if refused:  # the rest of the body is for _drain
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                ended = not message.get("more_body", False)
                if received > limit:
                    refused = True
                    await self._refuse(send, received)
            return {"type": "http.disconnect"} if refused else message

        async def passed(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counted, passed)
        if refused:
            await self._drain(receive, send, received, not ended, limit)

    @staticmethod
    async def _refuse(send: Send, length: int) -> None:
        """The 413's head and body; the answer is ended by ``_drain``."""
        body = too_large(length)
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body, "more_body": True})

    @staticmethod
    async def _drain(receive: Receive, send: Send, received: int, more: bool, limit: int) -> None:
        """Read and drop the rest of a refused body (``more``: some is left) within the bounds, then end the
        answer; the server closes the connection."""
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                while more and received <= limit * DRAIN_FACTOR:
                    message = await receive()
                    received += len(message.get("body", b""))
                    more = message["type"] == "http.request" and message.get("more_body", False)
        except TimeoutError:
            pass
        await send({"type": "http.response.body", "body": b""})


DRAIN_FACTOR = 4  # a refused body is read and dropped up to this many times MAX_REQUEST_BYTES in all
DRAIN_SECONDS = 2.0  # and for at most this long


# The REST API's logs: the access log on stdout, the server's own lines on stderr, each line redacted.
REST_LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "core.logs.RedactFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(message)s"}},
    "handlers": {
        "access": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout", "formatter": "plain",
                   "filters": ["redact"]},
        "server": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain",
                   "filters": ["redact"]},
    },
    "loggers": {
        "uvicorn": {"handlers": ["server"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}


def _listener(host: str, port: int) -> socket.socket | None:
    """A socket bound to (host, port) with SO_REUSEPORT, listening, open for the life of the process; None, and
    why on stderr, when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind((host, port))
        listener.listen(1024)
    except OSError as exc:
        listener.close()
        print(f"flux: cannot listen with a shared port: {exc}", file=sys.stderr)
        return None
    _LISTENERS.append(listener)
    return listener


_LISTENERS: list[socket.socket] = []


def _rest(argv: list[str]) -> int:
    """The REST API under uvicorn."""
    import argparse

    import uvicorn
    from uvicorn.importer import import_from_string

    parser = argparse.ArgumentParser(prog="python -m fluxsite.serve", description="the REST API under uvicorn")
    parser.add_argument("-b", "--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("-p", "--port", type=int, default=8000)
    parser.add_argument("--reuse-port", action="store_true", help="share the port with other REST processes")
    parser.add_argument("app", choices=[REST_APP])
    args = parser.parse_args(argv)
    listener = _listener(args.bind, args.port) if args.reuse_port else None
    if args.reuse_port and listener is None:
        return 2
    # No lifespan (Django's handler has none), no websockets (the dashboard has them), no proxy headers: the
    # client's address is the socket's, as the gate and the rate limits read it. Idle keep-alive connections are
    # kept a minute (an agent's SDK reuses one between turns); stopping waits 10 s for calls under way.
    config = uvicorn.Config(BodyLimit(import_from_string(args.app)), host=args.bind, port=args.port, http="h11",
                            loop="asyncio", ws="none", lifespan="off", proxy_headers=False, server_header=False,
                            timeout_keep_alive=60, timeout_graceful_shutdown=10, log_config=REST_LOGGING)
    uvicorn.Server(config).run(sockets=[listener] if listener else None)
    return 0


def _longest_line() -> int:
    return 1024 + 12 * int(env_value("MAX_QUERY_CHARS", DEFAULTS["MAX_QUERY_CHARS"]))


def _line_too_long(channel: Any, line: bytes) -> None:  # Twisted calls it with the line
    body = json.dumps({"error": {"code": "too_long", "message": f"the request line or a header is longer than "
                                 f"{_longest_line()} bytes: shorten the search (MAX_QUERY_CHARS)",
                                 "details": {}}}).encode()
    channel.transport.write(b"HTTP/1.1 414 URI Too Long\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                            b"Connection: close\r\n\r\n%s" % (len(body), body))
    channel.transport.loseConnection()


def _dashboard(argv: list[str]) -> int:
    """Any other application (the dashboard) under daphne, with its body limit and redacted access log."""
    import daphne.access
    import daphne.cli
    import daphne.http_protocol
    from twisted.web import http as twisted_http

    class RedactedAccessLog(daphne.access.AccessLogGenerator):
        def write_entry(self, host: str, date: datetime, request: str, status: int | None = None,
                        length: int | None = None, ident: str | None = None, user: str | None = None) -> None:
            super().write_entry(host, date, redact(request), status, length, ident, user)

    class LimitedWebRequest(daphne.http_protocol.WebRequest):
        """daphne's request, refusing a body over MAX_REQUEST_BYTES before reading it (declared length or
        chunks)."""

        _refused = False
        _received = 0

        def gotLength(self, length: int | None) -> None:  # noqa: N802 - twisted's name
            if length is not None and length > _max_bytes():
                self._refuse(length)
                return
            super().gotLength(length)

        def handleContentChunk(self, data: bytes) -> None:  # noqa: N802
            if self._refused:
                return
            self._received += len(data)
            if self._received > _max_bytes():
                self._refuse(self._received)
                return
            super().handleContentChunk(data)

        def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802
            if not self._refused:
                super().requestReceived(command, path, version)

        def _refuse(self, length: int) -> None:
            self._refused = True
            body = too_large(length)
            self.channel.transport.write(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            self.channel.transport.loseConnection()

    if "--reuse-port" in argv:
        argv = list(argv)
        argv.remove("--reuse-port")
        host, port = argv[argv.index("-b") + 1], int(argv[argv.index("-p") + 1])
        listener = _listener(host, port)
        if listener is None:
            return 2
        for flag in ("-b", "-p"):
            at = argv.index(flag)
            del argv[at:at + 2]
        domain = ":domain=INET6" if listener.family == socket.AF_INET6 else ""
        argv = ["-e", f"fd:fileno={listener.fileno()}{domain}", *argv]
    daphne.cli.AccessLogGenerator = RedactedAccessLog
    daphne.http_protocol.WebRequest = LimitedWebRequest
    # A request line may carry the longest search the dashboard takes (MAX_QUERY_CHARS characters, up to 12 bytes
    # each once percent-encoded: Twisted's 16 KiB dropped such a search without a word); a longer line is
    # answered 414 in the error contract before the connection closes, rather than just closed.
    twisted_http.HTTPChannel.MAX_LENGTH = max(twisted_http.HTTPChannel.MAX_LENGTH, _longest_line())
    twisted_http.HTTPChannel.totalHeadersSize = max(twisted_http.HTTPChannel.totalHeadersSize, 2 * _longest_line())
    twisted_http.HTTPChannel.lineLengthExceeded = _line_too_long
    daphne.cli.CommandLineInterface().run(argv)
    return 0


def _refusal(argv: list[str]) -> str | None:
    if REST_APP not in argv or "-b" not in argv[:-1]:
        return None
    data_dir = Path(os.environ.get("FLUX_DATA_DIR") or Path(__file__).resolve().parent.parent / "var")
    return open_rest_refusal(argv[argv.index("-b") + 1], str(env_value("API_KEYS", "")), data_dir)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    why = _refusal(argv)
    if why:
        print(f"flux: {why}", file=sys.stderr)
        return 2
    return _rest(argv) if REST_APP in argv else _dashboard(argv)


if __name__ == "__main__":
    sys.exit(main())
