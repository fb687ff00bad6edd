"""The project's errors. Every interface maps them in one place, to the same codes."""
from __future__ import annotations

MAX_MESSAGE_CHARS = 1000


class FluxError(Exception):
    """Base error: a machine-readable ``code``, a message that says how to fix it, details."""

    code = "flux_error"
    status = 400
    http_status: int | None = None  # the HTTP status it arrived with, when a client of the REST API received it

    def __init__(self, message: str, *, details: dict | None = None, code: str | None = None) -> None:
        if len(message) > MAX_MESSAGE_CHARS:  # one quoting what a caller sent stays readable, whatever was sent
            message = message[:MAX_MESSAGE_CHARS - 1] + "…"
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code:
            self.code = code

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "details": self.details}


class InvalidInput(FluxError):
    code = "invalid_input"
    status = 400


class NotFound(FluxError):
    code = "not_found"
    status = 404


class Conflict(FluxError):
    code = "conflict"
    status = 409


class ClusteringRunning(Conflict):
    code = "clustering_running"


class DreamRunning(Conflict):
    code = "dream_running"


class Tombstoned(Conflict):
    code = "tombstoned"


class RateLimited(FluxError):
    code = "rate_limited"
    status = 429


class FeedbackOwed(FluxError):
    code = "feedback_owed"
    status = 409


class CallerBlocked(FluxError):
    """An operator blocked this caller (flux admin, Django admin)."""

    code = "caller_blocked"
    status = 403


class Forbidden(FluxError):
    """The caller may not do this (another caller's trace, a reserved identity, an operator's purge)."""

    code = "forbidden"
    status = 403


class NotYourTrace(Forbidden):
    """Feedback on another client's retrieval."""

    code = "not_your_trace"


class ReservedIdentity(Forbidden):
    """A caller from outside naming itself as one of the service's own (``flux-*``)."""

    code = "reserved_identity"


class Unauthorized(FluxError):
    """API keys are on and the request carries no valid one."""

    code = "unauthorized"
    status = 401


class TooLarge(FluxError):
    code = "too_large"
    status = 413


class Overloaded(FluxError):
    code = "overloaded"
    status = 503


class LLMUnavailable(FluxError):
    """The LLM (flux_extracts mode) cannot be reached or answered with an error."""

    code = "llm_unavailable"
    status = 503


class LLMBadAnswer(FluxError):
    """The LLM answered, but not with what was asked for."""

    code = "llm_bad_answer"
    status = 502


class StorageFull(FluxError):
    """The disk (or MAX_DATABASE_MB) is full: nothing of the request was written."""

    code = "storage_full"
    status = 507


class StorageReadOnly(FluxError):
    """The database cannot be written (a read-only file or file system): nothing of the request was written."""

    code = "storage_read_only"
    status = 503


class DatabaseUnavailable(FluxError):
    """The database server does not answer (stopped, restarting, out of reach): nothing of the request was done."""

    code = "database_unavailable"
    status = 503


DISK_FULL_SQLSTATE = "53100"  # PostgreSQL's disk_full
# PostgreSQL's connection_exception class, and the server shutting down or starting up.
GONE_SQLSTATES = ("08", "57P01", "57P02", "57P03")
# What a database driver says when its server is gone, for the failures that carry no SQLSTATE (connecting).
GONE_TEXTS = ("connection failed", "server closed the connection", "connection is closed", "connection already closed",
              "terminating connection", "could not connect", "connection refused", "no connection to the server")


def storage_error(exc: BaseException) -> FluxError | None:
    """The project's error for a database failure that is the storage's, not the request's: full, or read-only."""
    text = str(exc).lower()
    if ("database or disk is full" in text or "no space left on device" in text
            or getattr(exc.__cause__, "sqlstate", None) == DISK_FULL_SQLSTATE):
        return StorageFull("the database has no room left (disk full, or MAX_DATABASE_MB reached): nothing of this "
                           "request was written; free disk space (or raise MAX_DATABASE_MB) and retry; reads go on",
                           details={"retry_after": 60})
    if "readonly database" in text or "read-only file system" in text:
        return StorageReadOnly("the database cannot be written (a read-only file or file system): nothing of this "
                               "request was written; make it writable and retry; reads go on",
                               details={"retry_after": 30})
    return None


def unreachable_error(exc: BaseException) -> FluxError | None:
    """The project's error for a database failure that is its server's absence, not the request's."""
    state = getattr(exc.__cause__, "sqlstate", None) or ""
    text = str(exc).lower()
    if not (type(exc).__name__ == "InterfaceError" or state.startswith(GONE_SQLSTATES)
            or any(t in text for t in GONE_TEXTS)):
        return None
    return DatabaseUnavailable("the database does not answer (its server is stopped, restarting or out of reach): "
                               "nothing of this request was done; retry shortly", details={"retry_after": 5})
