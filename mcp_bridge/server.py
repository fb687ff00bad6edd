"""The Flux Memory MCP server: six tools, each one call to the running REST service.

Built on the official SDK's high-level ``MCPServer``: typed arguments give
each tool a precise input schema (numbers and flags strict, as REST takes them: "5" is no limit, "yes" no
flag), a returned dict becomes structured content
(plus the same JSON as text), and a raised ``ToolError`` reaches the agent as
a tool error (``isError``) carrying the service's code and message. Nothing
here opens the database: the bridge is only a client of the service.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from core.errors import FluxError, InvalidInput
from core.version import flux_version
from mcp_bridge.client import FluxClient
from mcp_bridge.identity import Role, resolve_caller
from mcp_bridge.onboarding import onboarding_text

Provenance = Literal["user_stated", "ai_stated", "ai_inferred", "observed", "imported", "consolidated"]
Status = Literal["active", "dormant", "quarantined", "archived"]

CallerId = Annotated[str | None, Field(
    description="Who is calling, as 'client:role', e.g. 'codex:chat'. Or give client and role instead.")]
ClientName = Annotated[str | None, Field(
    description="Stable name of the calling application, e.g. 'codex' (letters, digits, ._@+-); with role.")]
RoleName = Annotated[Role | None, Field(description="Role of the caller; with client.")]

INSTRUCTIONS = ("Flux Memory is a long-term memory that learns from feedback. Call flux_onboard once and save its "
                "text in your instructions. Every turn: flux_retrieve before answering, flux_store new facts, "
                "flux_feedback on every retrieved grain.")

_HINTS = {
    "feedback_owed": "Rate each grain in details.owed with flux_feedback(trace_id, grain_id, useful), then retry.",
    "rate_limited": "Wait details.retry_after seconds, then retry.",
    "overloaded": "The service is busy: wait details.retry_after seconds, then retry.",
}


def tool_error(exc: FluxError) -> ToolError:
    """The agent-facing error: code (and HTTP status), message, what to do, details as JSON."""
    status = f" (HTTP {exc.http_status})" if exc.http_status else ""
    lines = [f"{exc.code}{status}: {exc.message}"]
    if exc.code in _HINTS:
        lines.append(_HINTS[exc.code])
    if exc.details:
        lines.append(f"details: {json.dumps(exc.details, sort_keys=True)}")
    return ToolError("\n".join(lines))


def _answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one REST call; its failure becomes a tool error the agent can read and act on."""
    try:
        return call()
    except FluxError as exc:
        raise tool_error(exc) from None


def forwarded_key(ctx: Context | None) -> str | None:
    """The API key an agent sent with this call over HTTP (``Authorization: Bearer``), passed on to the REST
    service, which decides the caller's identity from it; None over stdio (the instance's own key is sent)."""
    headers = ctx.headers if ctx is not None else None
    scheme, _, key = (headers or {}).get("authorization", "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


class FluxTools:
    """The tools, bound to one REST client. Each docstring is the description the agent reads."""

    def __init__(self, rest: FluxClient) -> None:
        self.rest = rest

    def flux_store(
        self,
        content: Annotated[str, Field(description="The fact to remember, self-contained (in flux_extracts mode: "
                                                  "a text whose facts Flux extracts).")],
        provenance: Annotated[Provenance, Field(description="Where the fact comes from: user_stated (the user said "
                                                            "it), ai_stated (you said it), ai_inferred (you "
                                                            "concluded it), observed, imported, consolidated.")]
        = "ai_stated",
        context: Annotated[str | None, Field(description="Groups facts stored together, e.g. a conversation id; "
                                                         "Flux links facts of one context.")] = None,
        occurred_at: Annotated[str | None, Field(description="When the fact happened, ISO 8601, e.g. "
                                                             "'2026-05-01T10:00:00Z'.")] = None,
        restore: Annotated[bool, Field(strict=True, description="Store content that was forgotten (error tombstoned) "
                                                   "again; only when the user asks for it.")] = False,
        caller_id: CallerId = None,
        client: ClientName = None,
        role: RoleName = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Store a new fact in Flux Memory (storing known content again corroborates it instead).

        Call it after answering, for each new fact worth remembering across sessions. Returns the stored
        grain (`grain.id`) and whether it was `created`.
        """
        return _answer(lambda: self.rest.store(content, provenance=provenance, context=context,
                                               occurred_at=occurred_at, restore=restore,
                                               caller=resolve_caller(caller_id, client, role),
                                               api_key=forwarded_key(ctx)))

    def flux_retrieve(
        self,
        query: Annotated[str, Field(description="What to remember about: the user's request or a topic.")],
        limit: Annotated[int | None, Field(strict=True, ge=1, le=100,
                                           description="Most grains to return; the instance's TOP_K when omitted.")]
        = None,
        caller_id: CallerId = None,
        client: ClientName = None,
        role: RoleName = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Retrieve the remembered grains most relevant to a query; call it before answering.

        Returns a `trace_id` and ranked `grains` (each with `id` and `content`). You must then rate EVERY
        returned grain with flux_feedback(trace_id, grain_id, useful) - useful=true if it helped, false if
        not - or Flux refuses your next retrievals (error feedback_owed).
        """
        return _answer(lambda: self.rest.retrieve(query, limit=limit,
                                                  caller=resolve_caller(caller_id, client, role),
                                               api_key=forwarded_key(ctx)))

    def flux_feedback(
        self,
        trace_id: Annotated[int, Field(strict=True, ge=1, description="The trace_id that flux_retrieve returned.")],
        grain_id: Annotated[int, Field(strict=True, ge=1, description="The id of one grain of that retrieval.")],
        useful: Annotated[bool, Field(strict=True, description="True if the grain helped your answer, false if not.")],
        caller_id: CallerId = None,
        client: ClientName = None,
        role: RoleName = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Rate one grain returned by flux_retrieve as useful or not: Flux learns from it.

        Rate every returned grain, once, with the same caller identity as the retrieval. Returns
        status `accepted` (or `already_recorded` for a repeat).
        """
        return _answer(lambda: self.rest.feedback(trace_id, grain_id, useful=useful,
                                                  caller=resolve_caller(caller_id, client, role),
                                               api_key=forwarded_key(ctx)))

    def flux_health(self, ctx: Context | None = None) -> dict[str, Any]:
        """Check that Flux Memory runs: grain counts by status, conduit counts, queue depths."""
        return _answer(lambda: self.rest.health(api_key=forwarded_key(ctx)))

    def flux_list_grains(
        self,
        status: Annotated[Status | None, Field(description="Only grains of this status; all when omitted.")] = None,
        limit: Annotated[int, Field(strict=True, ge=1, le=1000, description="Most grains to list.")] = 50,
        offset: Annotated[int, Field(strict=True, ge=0, description="Grains to skip, for paging.")] = 0,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """List stored grains, newest first (for inspecting memory, not for answering: use flux_retrieve)."""
        return _answer(lambda: self.rest.grains(status=status, limit=limit, offset=offset,
                                                api_key=forwarded_key(ctx)))

    def flux_onboard(self) -> str:
        """How to use Flux Memory: the per-turn workflow, caller identity, the operating mode.

        Call it once when you connect and save the text in your always-loaded instructions (e.g. AGENTS.md).
        """
        return onboarding_text()


_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_ANNOTATIONS = {
    "flux_store": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    "flux_retrieve": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    "flux_feedback": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                     open_world_hint=False),
    "flux_health": _READ_ONLY,
    "flux_list_grains": _READ_ONLY,
    "flux_onboard": _READ_ONLY,
}


class _Server(MCPServer):
    """The SDK's server, refusing an argument a tool does not take, as REST refuses an unknown field: the SDK
    would drop it, and a typo ("contxt") would lose what it carried without a word."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.takes: dict[str, frozenset[str]] = {}  # tool -> the arguments it takes

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        unknown = sorted(set(arguments) - self.takes.get(name, frozenset(arguments)))
        if unknown:
            raise tool_error(InvalidInput(
                f"unknown argument(s) {', '.join(unknown)}; {name} takes "
                + (", ".join(sorted(self.takes[name])) or "no arguments"),
                details={"field": unknown[0]}))
        return await super().call_tool(name, arguments, context)


def build_server(rest: FluxClient | None = None) -> MCPServer:
    """The MCP server with the six tools, talking to ``rest`` (default: the service named by settings)."""
    tools = FluxTools(rest or FluxClient())
    server = _Server(name="flux-memory", version=flux_version(), instructions=INSTRUCTIONS, log_level="WARNING")
    for name, hints in _ANNOTATIONS.items():
        method = getattr(tools, name)
        server.add_tool(method, name=name, description=inspect.cleandoc(method.__doc__ or ""),
                        annotations=hints, structured_output=name != "flux_onboard")
        server.takes[name] = frozenset(p for p in inspect.signature(method).parameters if p != "ctx")
    return server
