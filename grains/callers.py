"""Caller identity: ``client:role``; a missing identity is ``anonymous:unknown``."""
from __future__ import annotations

import re
from datetime import datetime

from grains.errors import CallerBlocked, InvalidInput
from grains.models import Caller, Role

ANONYMOUS = ("anonymous", Role.UNKNOWN.value)
CALLER_ROLES = [r.value for r in Role if r != Role.UNKNOWN]
_CLIENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")


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
    if not isinstance(client, str) or not _CLIENT.match(client):
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


def caller_resolve(caller: str | tuple[str, str] | Caller | None, *, now: datetime) -> Caller:
    """The Caller row for ``caller`` (created on first use)."""
    if isinstance(caller, Caller):
        return caller
    client, role = caller if isinstance(caller, tuple) else parse_caller(caller)
    row, _ = Caller.objects.get_or_create(client=client, role=role, defaults={"created_at": now})
    return row


def caller_acting(caller: str | tuple[str, str] | Caller | None, *, now: datetime) -> Caller:
    """``caller_resolve`` for a caller about to store, retrieve or rate: a blocked one is refused."""
    who = caller_resolve(caller, now=now)
    if who.blocked:
        raise CallerBlocked(f"{who} is blocked by an operator ({who.blocked_reason or 'no reason given'}); "
                            "ask the memory's operator to unblock it", details={"caller": str(who)})
    return who
