"""Checks of caller-given primitives shared by every service."""
from __future__ import annotations

import re
from datetime import UTC, datetime

from django.utils.dateparse import parse_datetime

from core.errors import InvalidInput

MAX_ID = 2**63 - 1  # the database's integer range
MAX_OFFSET = 2**31 - 1  # the furthest a listing may be paged
_WHOLE = re.compile(r"-?[0-9]{1,40}")  # ASCII digits, as a URL writes a number (within int()'s 4,300-digit limit)


def require_id(value: object, field: str) -> int:
    """A positive integer id (a string of ASCII digits accepted), or InvalidInput naming ``field``."""
    if isinstance(value, str) and _WHOLE.fullmatch(value):  # isdigit() took "²", "①" and digits of every script
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        shown = repr(value[:40] + "...") if isinstance(value, str) and len(value) > 40 else repr(value)
        raise InvalidInput(f"'{field}' must be a positive integer id, got {shown}", details={"field": field})
    return value


def require_bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"'{field}' must be true or false, got {value!r}", details={"field": field})
    return value


def int_query(raw: str | None, name: str, default: int | None, *, low: int | None = None,
              high: int | None = None) -> int | None:
    """A whole number from a query parameter (``default`` when absent or empty), within [low, high] when
    given; InvalidInput naming ``name`` otherwise. One parser for every listener's query strings."""
    if raw is None or raw == "":
        return default
    if not _WHOLE.fullmatch(raw):  # int() would take "1_0", " 5", "+5" and digits of every script
        raise InvalidInput(f"'{name}' must be a whole number, got {raw[:40]!r}", details={"field": name})
    value = int(raw)
    lowest = -MAX_ID - 1 if low is None else low  # whatever the caller bounds, within the database's integers
    highest = MAX_ID if high is None else high
    if not lowest <= value <= highest:
        bounds = (f"between {low} and {high}" if low is not None and high is not None
                  else f"at least {lowest}" if value < lowest else f"at most {highest}")
        raise InvalidInput(f"'{name}' must be {bounds}, got {raw[:40]}", details={"field": name})
    return value


def unicode_text(value: str, field: str) -> str:
    """``value``, unless it holds half of a UTF-16 surrogate pair alone (JSON's "\\ud800" decodes to one): no
    text can be stored or hashed with it; or a NUL, which PostgreSQL stores in no text (a memory moves between
    SQLite and PostgreSQL). InvalidInput naming ``field`` then."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"'{field}' holds an unpaired surrogate (U+{ord(value[exc.start]):04X} at character {exc.start}), which is "
            "not text; send valid Unicode (in JSON a character above U+FFFF is a pair of escapes, never one alone)",
            details={"field": field}) from None
    if "\x00" in value:
        raise InvalidInput(f"'{field}' holds a NUL character (U+0000 at character {value.index(chr(0))}), which no "
                           "text is stored with; leave it out", details={"field": field})
    return value


def iso_datetime(value: object, field: str) -> datetime:
    """An aware date-time from an ISO 8601 string (or a datetime) that is within the years 1-9999 in UTC too; UTC
    when it names no zone; else InvalidInput naming ``field``."""
    parsed = value if isinstance(value, datetime) else None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
    if parsed is None:
        raise InvalidInput(f"'{field}' {value!r} is not an ISO 8601 date-time", details={"field": field})
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    try:
        parsed.astimezone(UTC)  # stored in UTC: 9999-12-31T23:00-02:00 is past the last day there is
    except OverflowError:
        raise InvalidInput(f"'{field}' {value!r} is outside the years 1 to 9999 once in UTC",
                           details={"field": field}) from None
    return parsed
