"""Run a Flux listener under daphne, with what daphne lacks: ``python -m fluxsite.serve -b HOST -p PORT APP``.

- Bodies over MAX_REQUEST_BYTES are answered 413 (JSON, the project's error contract) as soon as their length
  is known, and the connection closed: the body is never read in full (daphne itself would buffer all of it
  before calling the application).
- The access log keeps no secrets: query strings (dashboard searches, the viewing token) and the token of an
  admin login link are cut from every line.
- The REST API refuses to listen beyond loopback unless API keys are configured.
- ``--reuse-port``: the listening socket is made here with SO_REUSEPORT and handed to daphne (``--fd``), so
  several REST processes (WEB_WORKERS) listen on one port and the kernel spreads connections over them; each
  can die and be restarted alone.

Everything else is daphne's command line, unchanged.
"""
from __future__ import annotations

import json
import os
import socket
import sys
from datetime import datetime
from pathlib import Path

import daphne.access
import daphne.cli
import daphne.http_protocol

from core.defaults import DEFAULTS
from core.env import env_value
from core.keys import open_rest_refusal
from core.logs import redact


class RedactedAccessLog(daphne.access.AccessLogGenerator):
    def write_entry(self, host: str, date: datetime, request: str, status: int | None = None,
                    length: int | None = None, ident: str | None = None, user: str | None = None) -> None:
        super().write_entry(host, date, redact(request), status, length, ident, user)


def _max_bytes() -> int:
    return int(env_value("MAX_REQUEST_BYTES", DEFAULTS["MAX_REQUEST_BYTES"]))


class LimitedWebRequest(daphne.http_protocol.WebRequest):
    """daphne's request, refusing a body over MAX_REQUEST_BYTES before reading it (declared length or chunks)."""

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
        limit = _max_bytes()
        body = json.dumps({"error": {"code": "too_large", "message": f"the body has {length} bytes or more; the limit "
                                     f"is {limit} (MAX_REQUEST_BYTES): split a batch into smaller ones",
                                     "details": {"limit": limit}}}).encode()
        self.channel.transport.write(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        self.channel.transport.loseConnection()


def _refusal(argv: list[str]) -> str | None:
    if "fluxsite.asgi:application" not in argv or "-b" not in argv[:-1]:
        return None
    data_dir = Path(os.environ.get("FLUX_DATA_DIR") or Path(__file__).resolve().parent.parent / "var")
    return open_rest_refusal(argv[argv.index("-b") + 1], str(env_value("API_KEYS", "")), data_dir)


def _shared_port(argv: list[str]) -> list[str]:
    """``-b HOST -p PORT --reuse-port`` replaced by an endpoint on a socket bound here with SO_REUSEPORT, which
    daphne's twisted adopts in this process."""
    argv = list(argv)
    argv.remove("--reuse-port")
    host, port = argv[argv.index("-b") + 1], int(argv[argv.index("-p") + 1])
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind((host, port))
    listener.listen(1024)
    _LISTENERS.append(listener)  # open for the life of the process
    for flag in ("-b", "-p"):
        at = argv.index(flag)
        del argv[at:at + 2]
    domain = ":domain=INET6" if family == socket.AF_INET6 else ""
    return ["-e", f"fd:fileno={listener.fileno()}{domain}", *argv]


_LISTENERS: list[socket.socket] = []


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    why = _refusal(argv)
    if why:
        print(f"flux: {why}", file=sys.stderr)
        return 2
    if "--reuse-port" in argv:
        try:
            argv = _shared_port(argv)
        except OSError as exc:
            print(f"flux: cannot listen with a shared port: {exc}", file=sys.stderr)
            return 2
    daphne.cli.AccessLogGenerator = RedactedAccessLog
    daphne.http_protocol.WebRequest = LimitedWebRequest
    daphne.cli.CommandLineInterface().run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
