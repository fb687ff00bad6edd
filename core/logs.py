"""What may appear in a log line: never a secret. Query strings (dashboard searches, viewing tokens) and the
token of an admin login link are cut from request lines and from Django's request warnings."""
from __future__ import annotations

import logging
import re

_LOGIN_LINK = re.compile(r"(/admin/login-link/)[^/?\s\"']+")
_QUERY = re.compile(r"\?[^\s\"']*")


def redact(text: str) -> str:
    """``GET /api/search?q=secret`` -> ``GET /api/search?...``; login-link tokens -> ``...``."""
    return _QUERY.sub("?...", _LOGIN_LINK.sub(r"\1...", text))


class RedactFilter(logging.Filter):
    """On every handler: the formatted message redacted (Django's "Forbidden: /admin/login-link/<token>")."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
