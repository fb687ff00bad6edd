"""The HTTP client of the Flux Memory REST API: what the SDK's ``Flux.connect`` and the MCP bridge speak.

Standard library only, no Django: one persistent connection per thread (keep-alive), a timeout on every
call, retries of 429 and 503 after the service's ``Retry-After`` (bounded in count and in total wait), the
API key as ``Authorization: Bearer``, and the service's error contract raised as the exception classes its
services raise (``core.errors``: ``InvalidInput``, ``NotFound``, ``FeedbackOwed`` ...), or
``ServiceUnavailable`` / ``BadResponse`` when nothing or something else answers.
"""
from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from core.errors import FluxError, InvalidInput
from core.keys import CLIENT_NAME

DEFAULT_TIMEOUT = 30.0
# How long a store may take when the service asks its LLM (flux_extracts mode): past the default
# LLM_TIMEOUT_SECONDS (120), so that the service, not the client, says the LLM was too slow (and nothing is stored
# behind a client that gave up).
LLM_WAIT_SECONDS = 150.0
RETRY_STATUSES = (429, 503)
_ROLE = re.compile(r"^[a-z_]{1,40}$")  # the service says which roles there are
_KEY = re.compile(r"[\x21-\x7e]{1,500}\Z")  # printable ASCII without spaces: what a header carries as it is
Caller = tuple[str, str]
"""(client, role), sent as X-Flux-Client and X-Flux-Role."""


class ServiceUnavailable(FluxError):
    """Nothing answers at the service's URL (not running, or stuck past the timeout)."""

    code = "service_unavailable"
    status = 503


class BadResponse(FluxError):
    """Something answered that is not Flux Memory's REST API (another program on the port)."""

    code = "bad_response"
    status = 502


def _error_classes() -> dict[str, type[FluxError]]:
    found: dict[str, type[FluxError]] = {}
    todo = [FluxError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.code, cls)
        todo.extend(cls.__subclasses__())
    return found


def service_error(status: int, error: Mapping[str, Any]) -> FluxError:
    """The exception the service's error body stands for: its own class where the code is known."""
    code, message = str(error.get("code", "flux_error")), str(error.get("message", ""))
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    cls = _error_classes().get(code, FluxError)
    exc = cls(message, details=details, code=code)
    exc.http_status = status
    return exc


class RestClient:
    """Calls one Flux Memory service; ``request`` returns the decoded JSON object or raises a FluxError."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = 3, max_retry_wait: float = 30.0, start_hint: str = "`flux start --name <instance>`",
                 user_agent: str = "flux-client") -> None:
        parts = urllib.parse.urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{base_url!r} is not an http(s) URL of a Flux Memory service")
        self.base_url = base_url.rstrip("/")
        self._parts = parts
        self.api_key = api_key.strip() if isinstance(api_key, str) and api_key.strip() else None  # a key file's newline
        self.timeout, self.retries, self.max_retry_wait = timeout, retries, max_retry_wait
        self.start_hint, self.user_agent = start_hint, user_agent
        self._local = threading.local()

    # --- the API, one method per endpoint an SDK or tool uses --------------------------------------------------

    def post(self, path: str, body: Mapping[str, Any], *, caller: Caller | None = None,
             api_key: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        return self.request("POST", path, body=body, caller=caller, api_key=api_key, timeout=timeout)

    def get(self, path: str, *, query: Mapping[str, Any] | None = None, caller: Caller | None = None,
            api_key: str | None = None) -> dict[str, Any]:
        return self.request("GET", path, query={k: v for k, v in (query or {}).items() if v is not None},
                            caller=caller, api_key=api_key)

    def request(self, method: str, path: str, *, body: Mapping[str, Any] | None = None,
                query: Mapping[str, Any] | None = None, caller: Caller | None = None,
                api_key: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        """One call, retried on 429/503 after Retry-After (at most ``retries`` times, ``max_retry_wait`` s in all).

        ``api_key`` is sent instead of the client's own key for this call (the MCP server passes on the key
        of the agent that called it); ``timeout`` waits longer (or shorter) than the client's own for this call
        (a store that may wait on the service's LLM)."""
        target = self._parts.path + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        try:
            data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
        except ValueError:  # NaN or an infinity: not JSON, the service would refuse the body whole
            raise InvalidInput(f"the call to {path} holds NaN or an infinity, which JSON has no way to write: send a "
                               "finite number", details={"path": path}) from None
        headers = self._headers(data is not None, caller, api_key or self.api_key)
        waited = 0.0
        for attempt in range(self.retries + 1):
            status, raw, retry_after = self._send(method, target, data, headers, timeout or self.timeout)
            if status in RETRY_STATUSES and attempt < self.retries and waited + retry_after <= self.max_retry_wait:
                time.sleep(retry_after)
                waited += retry_after
                continue
            return self._decode(status, raw)
        raise AssertionError("not reached")  # the loop returns on its last attempt

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --- transport ----------------------------------------------------------------------------------------------

    def _headers(self, has_body: bool, caller: Caller | None, api_key: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if has_body:
            headers["Content-Type"] = "application/json"
        if caller is not None:
            client, role = caller
            if not isinstance(client, str) or not CLIENT_NAME.match(client):
                raise InvalidInput(f"client {client!r} must be 1-100 characters of letters, digits and ._@+- "
                                   "(e.g. 'codex')", details={"field": "client"})
            if not isinstance(role, str) or not _ROLE.match(role):
                raise InvalidInput(f"role {role!r} is not a role name (e.g. 'chat')", details={"field": "role"})
            headers["X-Flux-Client"], headers["X-Flux-Role"] = client, role
        if api_key:
            if not _KEY.match(api_key):  # not echoed: it is a secret
                raise InvalidInput("the API key holds a space or a character no header can carry (a key is one word "
                                   "of letters, digits and punctuation, as `flux keys add` printed it)",
                                   details={"field": "api_key"})
            headers["Authorization"] = f"Bearer {api_key}"
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
            conn = cls(self._parts.hostname, self._parts.port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _send(self, method: str, target: str, data: bytes | None, headers: dict[str, str],
              timeout: float) -> tuple[int, bytes, float]:
        """(status, body, Retry-After seconds) of one exchange. A kept-alive connection the server closed while
        idle is reopened once; anything else that fails is ServiceUnavailable or BadResponse."""
        for fresh in (False, True):
            conn = self._connection()
            reused = conn.sock is not None
            conn.timeout = timeout  # this call's wait, on a new socket or the kept one
            if reused:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, target, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
                self.close()
                if reused and not fresh:
                    continue  # the idle connection was closed by the server: nothing was processed
                raise self._unreachable(exc, timeout) from None
            except TimeoutError as exc:
                self.close()
                raise self._unreachable(exc, timeout) from None
            except OSError as exc:
                self.close()
                raise self._unreachable(exc, timeout) from None
            except http.client.HTTPException as exc:
                self.close()
                raise self._not_flux(None, f"an answer that is not HTTP ({exc.__class__.__name__})") from None
            except BaseException:
                self.close()  # whatever failed half-way, the next call starts on a connection of its own
                raise
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            return response.status, raw, _retry_after(response.getheader("Retry-After"))
        raise AssertionError("not reached")

    def _decode(self, status: int, raw: bytes) -> dict[str, Any]:
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            raise self._not_flux(status, "a body that is not JSON") from None
        if not isinstance(answer, dict):
            raise self._not_flux(status, "JSON that is not an object")
        if status >= 400:
            error = answer.get("error")
            if not isinstance(error, dict) or "code" not in error:
                raise self._not_flux(status, "an error without Flux Memory's error body")
            raise service_error(status, error)
        return answer

    def _unreachable(self, exc: BaseException, timeout: float) -> ServiceUnavailable:
        """Nothing answered: say whether the service is down or stuck, and how to fix it."""
        details = {"url": self.base_url}
        if isinstance(exc, (TimeoutError, socket.timeout)):
            return ServiceUnavailable(
                f"Flux Memory at {self.base_url} did not answer within {timeout:g} s; it may be overloaded or "
                "stuck. Check it with `flux status` and its log, then retry (a store may already have been applied: "
                "retrieve before storing the same fact again).", details={**details, "reason": "timeout"})
        why = "connection refused" if isinstance(exc, ConnectionRefusedError) else str(exc) or type(exc).__name__
        return ServiceUnavailable(f"Flux Memory is not running at {self.base_url} ({why}). Start it with "
                                  f"{self.start_hint}, then retry.", details={**details, "reason": why})

    def _not_flux(self, status: int | None, what: str) -> BadResponse:
        answered = f"HTTP {status} with {what}" if status else what
        exc = BadResponse(f"{self.base_url} answered {answered}: it is not Flux Memory's REST API. Check the URL (or "
                          "REST_HOST and REST_PORT of the instance): another program may own the port.",
                          details={"url": self.base_url})
        exc.http_status = status
        return exc


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, min(float(value), 60.0)) if value else 1.0
    except ValueError:
        return 1.0
