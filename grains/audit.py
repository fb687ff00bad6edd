"""The audit log of what operators do to the memory by hand: append-only, written by the services."""
from __future__ import annotations

import re
import secrets
from datetime import datetime

from core.errors import InvalidInput
from core.rows import plain
from core.validate import unicode_text
from grains.models import AuditEvent


def confirmation_token() -> str:
    """A fresh token an operator types back to confirm a destructive act, e.g. ``3F9A-01CE``."""
    return f"{secrets.token_hex(2)}-{secrets.token_hex(2)}".upper()


def actor_caller(username: str) -> str:
    """The caller an operator acts as: ``<username>:admin``, the name cleaned to what callers allow."""
    client = re.sub(r"[^A-Za-z0-9._@+-]", "-", username).strip("-")[:100] or "operator"
    return f"{client}:admin"


def audit_record(*, actor: str, action: str, grain_id: int | None, before: dict, after: dict, reason: str,
                 now: datetime) -> AuditEvent:
    return AuditEvent.objects.create(actor=actor, action=action, grain_id=grain_id, before=plain(before),
                                     after=plain(after), reason=reason[:300], created_at=now)


def require_reason(reason: object) -> str:
    """Every act an operator does by hand says why."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput("'reason' is required: say why (it is kept in the audit log)", details={"field": "reason"})
    return unicode_text(reason, "reason").strip()
