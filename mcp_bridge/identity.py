"""Caller identity of an MCP tool call: ``caller_id="client:role"`` or ``client`` + ``role``.

The service attributes every grain, trace and feedback to a caller and
enforces feedback per caller, so an agent must send the same identity on
every call. Malformed identities are refused here, before any HTTP call,
with a message that shows the accepted forms.

The vocabularies below mirror the service's (grains.models); they are copied
rather than imported because the bridge must not import models. A test keeps
them equal.
"""
from __future__ import annotations

from typing import Literal, get_args

from core.client import Caller
from core.errors import InvalidInput

Role = Literal["chat", "memory_writer", "background_lookup", "system", "admin", "test"]
ROLES: tuple[str, ...] = get_args(Role)

_FORMS = "caller_id='client:role' (e.g. caller_id='codex:chat') or client='codex' and role='chat'"


def resolve_caller(caller_id: str | None = None, client: str | None = None, role: str | None = None) -> Caller | None:
    """(client, role) to send, or None for no identity (the service then records anonymous:unknown)."""
    if caller_id is not None:
        if client is not None or role is not None:
            raise _invalid(f"give either caller_id or client and role, not both; use {_FORMS}", "caller_id")
        return _split(caller_id)
    if client is None and role is None:
        return None
    if client is None or role is None:
        missing = "client" if client is None else "role"
        raise _invalid(f"{missing} is missing: give both client and role, or {_FORMS}", missing)
    return client, _checked_role(role)


def _split(caller_id: str) -> Caller:
    if caller_id.count(":") != 1:
        raise _invalid(f"caller_id {caller_id!r} is not of the form 'client:role'; use {_FORMS}. "
                       f"Roles: {', '.join(ROLES)}.", "caller_id")
    client, role = caller_id.split(":")
    if not client:
        raise _invalid(f"caller_id {caller_id!r} names no client before the colon; use {_FORMS}", "caller_id")
    return client, _checked_role(role)


def _checked_role(role: str) -> str:
    if role not in ROLES:
        raise _invalid(f"role {role!r} is not one of {', '.join(ROLES)}", "role")
    return role


def _invalid(message: str, field: str) -> InvalidInput:
    return InvalidInput(message, details={"field": field})
