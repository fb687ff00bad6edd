"""The REST listener's gate, before any view: body size, JSON-only writes from no foreign page, API keys.

- A body over MAX_REQUEST_BYTES: 413 ``too_large`` (the server launcher refuses it before reading it; this
  covers other servers).
- A POST outside the admin must be ``application/json`` (415) and must not come from a web page of another
  origin (403 ``foreign_origin``): a page in the user's browser cannot make the service write. No view takes
  PUT, PATCH or DELETE: they are answered 405, whatever their body.
- With API keys configured, every call outside the admin (which has its own login) needs
  ``Authorization: Bearer <key>`` (401); the key's client becomes the caller's identity.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from core.conf import flux_setting as S
from core.http import error_body
from core.keys import KEYS_FILE, Keyring, KeysUnreadable

WRITES = ("POST",)  # the one method the API's views write with
OPEN_PATHS = ("/admin/", "/openapi.json", "/static/admin/")  # the admin's own login; public files


@lru_cache(maxsize=1)
def keyring() -> Keyring:
    return Keyring(str(S("API_KEYS")), settings.DATA_DIR / KEYS_FILE)


def _refuse(status: int, code: str, message: str, **details: object) -> JsonResponse:
    return JsonResponse(error_body(code, message, details), status=status)


def _too_large(request: HttpRequest) -> JsonResponse | None:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return _refuse(400, "invalid_request", "the Content-Length header is not a number")
    limit = S("MAX_REQUEST_BYTES")
    if length > limit:
        return _refuse(413, "too_large", f"the body has {length} bytes; the limit is {limit} (MAX_REQUEST_BYTES): "
                       "split a batch into smaller ones", limit=limit, length=length)
    return None


def _foreign_write(request: HttpRequest) -> JsonResponse | None:
    content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return _refuse(415, "unsupported_media_type", f"{request.method} {request.path} takes a JSON body: send "
                       "Content-Type: application/json", content_type=content_type or None)
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.get_host()}":
        return _refuse(403, "foreign_origin", f"a web page of {origin!r} may not write to this memory; agents call "
                       "the API directly (no Origin header)", origin=origin)
    return None


def _unauthorized(request: HttpRequest) -> HttpResponse | None:
    ring = keyring()
    try:
        if not ring.enabled:
            request.flux_client = None
            return None
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        client = ring.client_of(key.strip()) if scheme.lower() == "bearer" and key.strip() else None
    except KeysUnreadable as exc:
        return _refuse(503, "keys_unreadable", str(exc))
    if client is None:
        sent = "the API key sent is not one of this memory's" if key.strip() else "this memory requires an API key"
        response = _refuse(401, "unauthorized", f"{sent}: send Authorization: Bearer <key> (an operator creates "
                           "one with `flux keys add --name <instance> CLIENT`)")
        response["WWW-Authenticate"] = 'Bearer realm="flux-memory"'
        return response
    request.flux_client = client
    return None


class RestGateMiddleware:
    """Sync and async: under ASGI a sync-only middleware would send every request through Django's one shared
    sync thread (and back) before the view hands it to the booth. Nothing here touches the database."""

    sync_capable = async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self.is_async:
            return self._acall(request)
        return _refusal(request) or self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return _refusal(request) or await self.get_response(request)


def _refusal(request: HttpRequest) -> HttpResponse | None:
    refused = _too_large(request)
    if refused is None and not request.path.startswith(OPEN_PATHS):
        refused = _unauthorized(request) or (_foreign_write(request) if request.method in WRITES else None)
    return refused
