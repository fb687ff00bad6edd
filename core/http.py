"""The error contract over HTTP: ``{"error": {"code", "message", "details"}}`` with the error's status, and
``Retry-After`` when the error says when to retry. Every listener answers errors this way."""
from __future__ import annotations

from collections.abc import Mapping

from django.http import JsonResponse

from core.errors import FluxError


def error_body(code: str, message: str, details: Mapping | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": dict(details or {})}}


def flux_error_response(exc: FluxError) -> JsonResponse:
    response = JsonResponse(error_body(exc.code, exc.message, exc.details), status=exc.status)
    if "retry_after" in exc.details:
        response["Retry-After"] = str(exc.details["retry_after"])
    return response
