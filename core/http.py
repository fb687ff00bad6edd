"""The error contract over HTTP: ``{"error": {"code", "message", "details"}}`` with the error's status, and
``Retry-After`` when the error says when to retry. Every listener answers errors this way."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from django.core.exceptions import DisallowedHost, SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.static import serve

from core.errors import FluxError


def error_body(code: str, message: str, details: Mapping | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": dict(details or {})}}


def flux_error_response(exc: FluxError) -> JsonResponse:
    response = JsonResponse(error_body(exc.code, exc.message, exc.details), status=exc.status)
    if "retry_after" in exc.details:
        response["Retry-After"] = str(exc.details["retry_after"])
    return response


def bad_request(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """handler400 of both listeners: what Django refuses before any view (a Host header not in ALLOWED_HOSTS, a
    request it finds suspicious), in the same JSON error contract as everything else."""
    if isinstance(exception, DisallowedHost):
        host = request.META.get("HTTP_HOST", "")[:100]
        return JsonResponse(error_body("bad_host", f"this service does not answer to the host name {host!r}; the "
                                       "ones it answers to are set by ALLOWED_HOSTS"), status=400)
    return JsonResponse(error_body("bad_request", "the request is not valid HTTP for this service"), status=400)


def static_file(request: HttpRequest, path: str, root: Path) -> HttpResponse:
    """The file ``path`` of the folder ``root`` only: django's serve() normalises the path and refuses any that
    leaves the folder (``..``, encoded or not); folders are never listed; what is not there is a JSON 404."""
    try:
        return serve(request, path, document_root=str(root), show_indexes=False)
    except (Http404, SuspiciousFileOperation):  # a path leaving the folder is simply not there
        return JsonResponse(error_body("not_found", f"no static file {path!r}"), status=404)
