"""A small client of the Flux REST API, on the standard library only.

The MCP bridge is a thin client of the running service: every tool is one
HTTP call made here. Nothing in this module touches the database or imports
models, so the bridge can run beside the service (or without it, reporting
clearly that it is down).
"""
from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from fluxsite.conf import flux_setting

DEFAULT_TIMEOUT = 30.0
_ANY_ADDRESS = ("", "0.0.0.0", "::")

Caller = tuple[str, str]
"""(client, role), sent as X-Flux-Client and X-Flux-Role."""


class FluxServiceError(Exception):
    """A call that did not succeed: the service's error code, message and details.

    ``code`` is the service's own (``not_found``, ``feedback_owed``...) or one
    of the bridge's: ``service_unavailable`` (nothing answers), ``bad_response``
    (something answers that is not Flux Memory) and ``invalid_input`` (an
    argument refused before calling). ``status`` is the HTTP status, None when
    no HTTP answer came.
    """

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None,
                 status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = dict(details or {})
        self.status = status


def rest_base_url() -> str:
    """The service's base URL from REST_HOST and REST_PORT (a wildcard bind address means loopback)."""
    host = str(flux_setting("REST_HOST")).strip()
    host = "127.0.0.1" if host in _ANY_ADDRESS else host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    return f"http://{host}:{flux_setting('REST_PORT')}"


def instance_name() -> str | None:
    """The name of the `flux` instance whose environment this process runs in, if any.

    `flux mcp --name NAME` sets FLUX_DATA_DIR to the instance folder, which
    holds config.yaml; knowing the name lets error messages give the exact
    command to run.
    """
    data_dir = Path(settings.DATA_DIR)
    return data_dir.name if (data_dir / "config.yaml").is_file() else None


def start_command() -> str:
    """How to start the service, for messages: the instance's own command when known."""
    name = instance_name()
    if name:
        return f"`flux start --name {name}`"
    return "`flux start --name <instance>` (or `scripts/run` in a checkout)"


class FluxClient:
    """Calls the Flux REST API; every method returns the decoded JSON answer or raises FluxServiceError."""

    def __init__(self, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 api_key: str | None = None) -> None:
        self.base_url = (base_url or rest_base_url()).rstrip("/")
        self.timeout = timeout
        self.api_key = flux_setting("API_KEY") if api_key is None else api_key
        # The service is local: never send its traffic through an HTTP(S)_PROXY from the environment.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def store(self, content: str, *, provenance: str | None = None, context: str | None = None,
              occurred_at: str | None = None, restore: bool = False, caller: Caller | None = None) -> dict[str, Any]:
        body = _without_none({"content": content, "provenance": provenance, "context": context,
                              "occurred_at": occurred_at, "restore": restore or None})
        return self.request("POST", "/store", body=body, caller=caller)

    def retrieve(self, query: str, *, limit: int | None = None, caller: Caller | None = None) -> dict[str, Any]:
        return self.request("POST", "/retrieve", body=_without_none({"query": query, "limit": limit}), caller=caller)

    def feedback(self, trace_id: int, grain_id: int, *, useful: bool, caller: Caller | None = None) -> dict[str, Any]:
        body = {"trace_id": trace_id, "grain_id": grain_id, "useful": useful}
        return self.request("POST", "/feedback", body=body, caller=caller)

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/health")

    def grains(self, *, status: str | None = None, limit: int | None = None,
               offset: int | None = None) -> dict[str, Any]:
        query = _without_none({"status": status, "limit": limit, "offset": offset})
        return self.request("GET", "/grains", query=query)

    def request(self, method: str, path: str, *, body: Mapping[str, Any] | None = None,
                query: Mapping[str, Any] | None = None, caller: Caller | None = None) -> dict[str, Any]:
        """One HTTP call; the JSON object answered, or FluxServiceError with a message saying what to do."""
        url = self.base_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = _headers(data is not None, caller)
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return self._decode(response.status, response.read())
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            raise self._unreachable(exc) from None
        except http.client.HTTPException as exc:
            raise self._not_flux(None, f"an answer that is not HTTP ({exc.__class__.__name__})") from None

    def _decode(self, status: int, raw: bytes) -> dict[str, Any]:
        try:
            answer = json.loads(raw)
        except ValueError:
            raise self._not_flux(status, "a body that is not JSON") from None
        if not isinstance(answer, dict):
            raise self._not_flux(status, "JSON that is not an object")
        return answer

    def _http_error(self, exc: urllib.error.HTTPError) -> FluxServiceError:
        """The service's own error from its body {"error": {code, message, details}}."""
        try:
            error = json.loads(exc.read())["error"]
            code, message = str(error["code"]), str(error["message"])
            details = error.get("details") if isinstance(error.get("details"), dict) else {}
        except (ValueError, KeyError, TypeError, OSError, http.client.HTTPException):
            return self._not_flux(exc.code, "an error without Flux Memory's error body")
        return FluxServiceError(code, message, details, status=exc.code)

    def _unreachable(self, exc: OSError) -> FluxServiceError:
        """Nothing answered: say whether the service is down or stuck, and how to fix it."""
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        details = {"url": self.base_url}
        if isinstance(reason, TimeoutError):
            status = f"`flux status --name {instance_name() or '<instance>'}`"
            return FluxServiceError(
                "service_unavailable",
                f"Flux Memory at {self.base_url} did not answer within {self.timeout:g} s; it may be overloaded "
                f"or stuck. Check it with {status} and its log, then retry (a store may already have been "
                "applied: retrieve before storing the same fact again).",
                {**details, "reason": "timeout"})
        why = "connection refused" if isinstance(reason, ConnectionRefusedError) else str(reason)
        return FluxServiceError(
            "service_unavailable",
            f"Flux Memory is not running at {self.base_url} ({why}). Start it with {start_command()}, then retry.",
            {**details, "reason": why})

    def _not_flux(self, status: int | None, what: str) -> FluxServiceError:
        """Something answered that is not Flux Memory: most likely another program on the port."""
        answered = f"HTTP {status} with {what}" if status else what
        return FluxServiceError(
            "bad_response",
            f"{self.base_url} answered {answered}: it is not Flux Memory's REST API. Check that REST_HOST and "
            "REST_PORT of this MCP server are those of the running instance (another program may own the port).",
            {"url": self.base_url}, status=status)


def _headers(has_body: bool, caller: Caller | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "flux-mcp-bridge"}
    if has_body:
        headers["Content-Type"] = "application/json"
    if caller is not None:
        headers["X-Flux-Client"], headers["X-Flux-Role"] = caller
    return headers


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that were given: an omitted field takes the service's default."""
    return {k: v for k, v in values.items() if v is not None}
