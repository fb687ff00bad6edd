"""What every REST view shares: the error contract, caller identity, the booth wrappers."""
from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.request import Request
from rest_framework.views import exception_handler as drf_exception_handler

from core.booth import get_booth
from core.conf import flux_setting as S
from core.errors import FluxError, InvalidInput, TooLarge, storage_error, unreachable_error
from core.http import error_body, flux_error_response
from core.validate import MAX_OFFSET, int_query
from grains.callers import parse_caller, refuse_reserved

log = logging.getLogger("flux.api")
T = TypeVar("T")

_DRF_CODES = {
    drf.ParseError: "invalid_json",
    drf.UnsupportedMediaType: "unsupported_media_type",
    drf.MethodNotAllowed: "method_not_allowed",
    drf.NotAcceptable: "not_acceptable",
    drf.NotFound: "not_found",
}


def exception_handler(exc: Exception, context: dict) -> HttpResponse | None:
    """DRF exception handler: FluxError and DRF's own errors, all in the one contract."""
    if isinstance(exc, FluxError):
        return flux_error_response(exc)
    if isinstance(exc, DatabaseError) and (storage := storage_error(exc) or unreachable_error(exc)) is not None:
        log.warning("storage failure in %s: %s", context.get("view"), exc)
        return flux_error_response(storage)
    if isinstance(exc, RequestDataTooBig):
        return flux_error_response(TooLarge("the body is larger than MAX_REQUEST_BYTES; split a batch into "
                                            "smaller ones"))
    response = drf_exception_handler(exc, context)
    if response is None:
        log.exception("unhandled error in %s", context.get("view"))
        return JsonResponse(error_body("internal_error", "the service failed; see its log"), status=500)
    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "invalid_request")
    detail = exc.detail if isinstance(exc, drf.APIException) else str(exc)
    message = str(detail) if not isinstance(detail, (list, dict)) else "the request is not valid"
    if code == "invalid_json":
        message = f"the body is not valid JSON: {message}"
    response.data = error_body(code, message)
    return response


def request_caller(request: Request) -> tuple[str, str]:
    """(client, role) from X-Flux-Client + X-Flux-Role, or legacy X-Caller-Id; else anonymous.

    With API keys on, the client is the one the request's key is bound to (a client named in a header is
    ignored) and only the role comes from the headers. The service's own identities (``flux-*``) are refused.
    """
    keyed = getattr(request, "flux_client", None)
    client, role = refuse_reserved(_header_caller(request, keyed))
    return (keyed, role) if keyed else (client, role)


def _header_caller(request: Request, keyed: str | None) -> tuple[str, str]:
    client = request.headers.get("X-Flux-Client")
    role = request.headers.get("X-Flux-Role")
    legacy = request.headers.get("X-Caller-Id")
    if keyed and role is not None and client is None:
        client = keyed  # the key names the client: X-Flux-Role alone is enough
    try:
        if client is not None or role is not None:
            if not client or not role:
                raise InvalidInput("send both X-Flux-Client and X-Flux-Role (or X-Caller-Id: client:role)")
            return parse_caller(client=client, role=role)
        if legacy is not None:
            return parse_caller(legacy)
        return parse_caller()
    except InvalidInput as exc:
        exc.details.setdefault("header", "X-Flux-Client/X-Flux-Role" if client or role else "X-Caller-Id")
        raise


def json_object(request: Request, *, allowed: set[str], required: set[str] = frozenset()) -> dict:
    """The JSON body as a dict with only ``allowed`` keys and every ``required`` one."""
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput("the body must be a JSON object", details={"field": "body"})
    unknown = sorted(set(data) - allowed)
    if unknown:
        takes = f"allowed: {', '.join(sorted(allowed))}" if allowed else "this endpoint takes none: send {}"
        raise InvalidInput(f"unknown field(s) {', '.join(unknown)}; {takes}", details={"field": unknown[0]})
    missing = sorted(required - set(data))
    if missing:
        raise InvalidInput(f"missing field(s) {', '.join(missing)}", details={"field": missing[0]})
    return data


def int_param(request: Request, name: str, default: int, low: int | None = None, high: int | None = None) -> int:
    """An integer query parameter (``default`` when absent), within [low, high] when given."""
    return int_query(request.query_params.get(name), name, default, low=low, high=high)


def page_params(request: Request, *, limit: int = 50) -> tuple[int, int]:
    """``limit`` (1-1000, default ``limit``) and ``offset`` of a listing."""
    return int_param(request, "limit", limit, 1, 1000), int_param(request, "offset", 0, 0, MAX_OFFSET)


def _booth_view(view: Callable[..., HttpResponse], lane: Callable[[], str]) -> Callable[..., object]:
    """``view`` run on the booth's executor that ``lane()`` names at each request."""
    def answer(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        return _rendered(view(request, *args, **kwargs))

    @functools.wraps(view)
    async def run(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        future = getattr(get_booth(), lane())(functools.partial(answer, request, *args, **kwargs))
        return await asyncio.wrap_future(future)

    run.csrf_exempt = True
    return run


def _rendered(response: HttpResponse) -> HttpResponse:
    """DRF's response rendered here, on the worker, and handed on as a plain one: Django under ASGI would render
    it (and anything with a ``render``) on its one shared sync thread, one more hop there and back."""
    if not callable(getattr(response, "render", None)):
        return response
    response.render()
    plain = HttpResponse(response.content, status=response.status_code)
    for name, value in response.items():
        plain[name] = value
    return plain


def read_view(view: Callable[..., HttpResponse]) -> Callable[..., object]:
    """Serve ``view`` on the booth's read workers."""
    return _booth_view(view, lambda: "read")


def outside_view(view: Callable[..., HttpResponse]) -> Callable[..., object]:
    """Serve ``view``, which waits on something outside (a clustering of the whole graph, the LLM), on the booth's
    threads for such waits: reads never queue behind it."""
    return _booth_view(view, lambda: "outside")


def store_view(view: Callable[..., HttpResponse]) -> Callable[..., object]:
    """Serve a store: in flux_extracts mode it waits on the LLM (outside), else it is a read worker's."""
    return _booth_view(view, lambda: "outside" if S("OPERATING_MODE") == "flux_extracts" else "read")


def booth_write(fn: Callable[[], T]) -> T:
    """Run a view's write on the booth's write queue and wait for it (Overloaded when the queue is full)."""
    return get_booth().write(fn).result()


def booth_record(fn: Callable[[], T]) -> T:
    """Run a view's small write (a receipt) on the writer's bookkeeping lane, ahead of queued writes; wait for it."""
    return get_booth().record(fn).result()

