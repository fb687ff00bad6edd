"""The MCP bridge's client of the Flux REST API: the shared HTTP client (``core.client``, also the SDK's)
aimed at this instance's service, with this instance's API key.

The MCP bridge is a thin client of the running service: every tool is one
HTTP call made here. Nothing in this module touches the database or imports
models, so the bridge can run beside the service (or without it, reporting
clearly that it is down).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from core.client import DEFAULT_TIMEOUT, LLM_WAIT_SECONDS, Caller, RestClient
from core.conf import flux_setting

_ANY_ADDRESS = ("", "0.0.0.0", "::")


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
    """The bridge's calls, each one HTTP call of the shared client; every method returns the decoded JSON answer
    or raises the service's error (a ``core.errors.FluxError``; ``ServiceUnavailable`` when nothing answers).
    No retries here: an agent sees a 429 or 503 at once, with its Retry-After in the details."""

    def __init__(self, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 api_key: str | None = None) -> None:
        self.rest = RestClient(base_url or rest_base_url(), timeout=timeout, retries=0, start_hint=start_command(),
                               api_key=flux_setting("API_KEY") if api_key is None else api_key,
                               user_agent="flux-mcp-bridge")
        self.base_url = self.rest.base_url

    def store(self, content: str, *, provenance: str | None = None, context: str | None = None,
              occurred_at: str | None = None, restore: bool = False, caller: Caller | None = None,
              api_key: str | None = None) -> dict[str, Any]:
        body = _without_none({"content": content, "provenance": provenance, "context": context,
                              "occurred_at": occurred_at, "restore": restore or None})
        return self.rest.post("/store", body, caller=caller, api_key=api_key, timeout=LLM_WAIT_SECONDS)

    def retrieve(self, query: str, *, limit: int | None = None, caller: Caller | None = None,
                 api_key: str | None = None) -> dict[str, Any]:
        return self.rest.post("/retrieve", _without_none({"query": query, "limit": limit}), caller=caller,
                              api_key=api_key)

    def feedback(self, trace_id: int, grain_id: int, *, useful: bool, caller: Caller | None = None,
                 api_key: str | None = None) -> dict[str, Any]:
        return self.rest.post("/feedback", {"trace_id": trace_id, "grain_id": grain_id, "useful": useful},
                              caller=caller, api_key=api_key)

    def health(self, *, api_key: str | None = None) -> dict[str, Any]:
        return self.rest.get("/health", api_key=api_key)

    def grains(self, *, status: str | None = None, limit: int | None = None, offset: int | None = None,
               api_key: str | None = None) -> dict[str, Any]:
        return self.rest.get("/grains", query={"status": status, "limit": limit, "offset": offset}, api_key=api_key)


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that were given: an omitted field takes the service's default."""
    return {k: v for k, v in values.items() if v is not None}
