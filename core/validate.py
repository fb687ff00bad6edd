"""Checks of caller-given primitives shared by every service."""
from __future__ import annotations

from core.errors import InvalidInput

MAX_ID = 2**63 - 1  # the database's integer range


def require_id(value: object, field: str) -> int:
    """A positive integer id (numeric strings accepted), or InvalidInput naming ``field``."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise InvalidInput(f"'{field}' must be a positive integer id, got {value!r}", details={"field": field})
    return value


def require_bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"'{field}' must be true or false, got {value!r}", details={"field": field})
    return value
