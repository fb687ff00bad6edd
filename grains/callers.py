"""Caller identity: ``client:role``; a missing identity is ``anonymous:unknown``.

An operator blocks a *client*: every role of it is refused (changing the role does not get around a block).
Identities whose client starts with ``flux-`` are the service's own (the terminal admin, the dream cycle,
the evaluation tools) and are refused from outside (REST headers, MCP tool arguments).
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.booth import inline
from core.bulk import bulk_fetch
from core.errors import CallerBlocked, InvalidInput, ReservedIdentity
from core.keys import CLIENT_NAME
from grains.models import Caller, Role

ANONYMOUS = ("anonymous", Role.UNKNOWN.value)
CALLER_ROLES = [r.value for r in Role if r != Role.UNKNOWN]
RESERVED_PREFIX = "flux-"


def parse_caller(caller: str | None = None, *, client: str | None = None, role: str | None = None) -> tuple[str, str]:
    """(client, role) from ``"client:role"`` or separate parts; validated."""
    if caller is not None:
        if not isinstance(caller, str) or caller.count(":") != 1:
            raise InvalidInput(
                f"caller {caller!r} is not of the form 'client:role', e.g. 'codex:chat'",
                details={"field": "caller"},
            )
        client, role = caller.split(":")
    if client is None and role is None:
        return ANONYMOUS
    if not isinstance(client, str) or not CLIENT_NAME.match(client):
        raise InvalidInput(
            f"client {client!r} must be 1-100 characters of letters, digits and ._@+- (e.g. 'codex')",
            details={"field": "client"},
        )
    if role not in CALLER_ROLES:
        raise InvalidInput(
            f"role {role!r} is not one of {', '.join(CALLER_ROLES)}",
            details={"field": "role", "allowed": CALLER_ROLES},
        )
    return client, role


def refuse_reserved(identity: tuple[str, str]) -> tuple[str, str]:
    """``identity`` unless it is one of the service's own (``flux-*``): those are refused from outside."""
    if identity[0].lower().startswith(RESERVED_PREFIX):
        raise ReservedIdentity(f"client names starting with {RESERVED_PREFIX!r} are reserved for Flux Memory's own "
                               f"processes; call as another client (e.g. 'codex')",
                               details={"field": "client", "client": identity[0]})
    return identity


def caller_identity(caller: str | tuple[str, str] | Caller | None) -> tuple[str, str]:
    if isinstance(caller, Caller):
        return caller.client, caller.role
    return caller if isinstance(caller, tuple) else parse_caller(caller)


def caller_resolve(caller: str | tuple[str, str] | Caller | None, *, now: datetime) -> Caller:
    """The Caller row for ``caller`` (created on first use)."""
    if isinstance(caller, Caller):
        return caller
    client, role = caller_identity(caller)
    row, _ = Caller.objects.get_or_create(client=client, role=role, defaults={"created_at": now})
    return row


def caller_check(caller: str | tuple[str, str] | Caller | None) -> Caller | None:
    """Read only: the caller's row if it has acted before (None if not); CallerBlocked if its client is blocked.

    For the read side of an act (before a model or LLM call, on a read worker): it never writes.
    """
    client, role = caller_identity(caller)
    rows = bulk_fetch(Caller, "client = %s", [client])  # plain SQL: every act of every caller asks
    blocked = next((r for r in rows if r.blocked), None)
    if blocked is not None:
        why = blocked.blocked_reason or "no reason given"
        raise CallerBlocked(f"client {client!r} is blocked by an operator ({why}); "
                            "ask the memory's operator to unblock it", details={"caller": f"{client}:{role}"})
    return next((r for r in rows if r.role == role), None)


def caller_acting(caller: str | tuple[str, str] | Caller | None, *, now: datetime,
                  write: Callable[[Callable[[], Caller]], Caller] | None = None) -> Caller:
    """The row of a caller about to store, retrieve, rate or relate (created on first use); a blocked client is
    refused. It may write: call it on the writer, or give ``write``, which runs the creation there."""
    return caller_check(caller) or (write or inline)(lambda: caller_resolve(caller, now=now))
