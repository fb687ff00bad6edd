"""The dashboard listener's views: pages, read-only JSON, static files. Nothing here writes."""
from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.cache import add_never_cache_headers
from django.views.decorators.clickjacking import xframe_options_sameorigin

from core.conf import flux_setting as S
from core.errors import FluxError, InvalidInput
from core.http import error_body, flux_error_response, static_file
from core.throttle import throttle
from core.validate import int_query
from dashboard import selectors
from memory.dossier import grain_dossier

STATIC_ROOT = Path(__file__).resolve().parent / "static"  # inside the package, so an installed wheel has it
SAFE_METHODS = ("GET", "HEAD")
PAGES = {
    "graph": ("Knowledge Graph", "/"),
    "mycelium": ("Mycelium", "/mycelium"),
    "globe": ("Globe", "/globe"),
    "vitals": ("Vitals", "/vitals"),
    "chronicle": ("Chronicle", "/chronicle"),
    "mobile": ("Mobile preview", "/mobile-preview"),
}


def rest_url() -> str:
    return f"http://{S('REST_HOST')}:{S('REST_PORT')}"


class ReadOnlyMiddleware:
    """First on the dashboard listener: anything but GET and HEAD is refused before it reaches a view (or the
    CSRF check), saying where writes go."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in SAFE_METHODS:
            return self.get_response(request)
        try:  # an endpoint of the REST API is named there; another path is none of its (it said /api/graph was)
            resolve(request.path_info, urlconf="fluxsite.urls")
            where = f"takes writes at {rest_url()}{request.path}"
        except Resolver404:
            where = f"at {rest_url()} takes writes (its endpoints: {rest_url()}/openapi.json)"
        response = JsonResponse(error_body(
            "read_only", f"the dashboard is read-only: {request.method} {request.path} is refused here; the REST API "
            f"{where}", {"allowed": list(SAFE_METHODS), "rest_url": rest_url()}), status=405)
        response["Allow"] = ", ".join(SAFE_METHODS)
        return response


def page(name: str) -> Callable[[HttpRequest], HttpResponse]:
    @xframe_options_sameorigin  # the mobile preview frames the other pages
    def view(request: HttpRequest) -> HttpResponse:
        return render(request, f"dashboard/{name}.html", {
            "view": name, "title": PAGES[name][0], "pages": PAGES, "rest_url": rest_url()})
    return view


def data(fn: Callable[..., object]) -> Callable[..., HttpResponse]:
    """A JSON endpoint: Flux errors become their status and message. Never kept by a cache (the memory's contents:
    a browser or a proxy between a shared dashboard and its viewer kept them)."""
    @functools.wraps(fn)
    def view(request: HttpRequest, **kwargs: object) -> HttpResponse:
        try:
            response = JsonResponse(fn(request, **kwargs), safe=False)
        except FluxError as exc:
            response = flux_error_response(exc)
        add_never_cache_headers(response)
        return response
    return view


def _int_param(request: HttpRequest, name: str, default: int | None, *, low: int = 0,
               high: int | None = None) -> int | None:
    return int_query(request.GET.get(name), name, default, low=low, high=high)


@data
def graph(request: HttpRequest) -> dict:
    return selectors.graph_overview()


@data
def graph_cluster(request: HttpRequest, cluster_id: int) -> dict:
    return selectors.cluster_graph(cluster_id)


@data
def clusters(request: HttpRequest) -> dict:
    return selectors.cluster_overview()


@data
def search(request: HttpRequest) -> list[dict]:
    throttle(request, "dashboard", "RATE_DASHBOARD", per_address=True)
    return selectors.grain_search(request.GET.get("q", ""), limit=_int_param(request, "limit", 20, low=1, high=100))


@data
def grain(request: HttpRequest, grain_id: int) -> dict:
    return grain_dossier(grain_id)


@data
def activity(request: HttpRequest) -> dict:
    throttle(request, "dashboard", "RATE_DASHBOARD", per_address=True)
    limit = _int_param(request, "limit", 500, low=1, high=selectors.EVENT_PAGE_MAX)
    after, before = _int_param(request, "after", None), _int_param(request, "before", None, low=1)
    if after is not None and before is not None:
        raise InvalidInput("give 'after' (the events since an id) or 'before' (a page of older ones), not both",
                           details={"field": "before"})
    events = (selectors.events_after(after, limit=limit) if after is not None
              else selectors.events_before(before, limit=limit))
    return {"events": events, "last_event_id": selectors.last_event_id()}


@data
def vitals(request: HttpRequest) -> dict:
    return selectors.vitals_timeline(limit=_int_param(request, "limit", 500, low=1, high=5000))


def static(request: HttpRequest, path: str) -> HttpResponse:
    """Files of the dashboard's static folder only."""
    return static_file(request, path, STATIC_ROOT)


def write_refused(request: HttpRequest, path: str = "") -> JsonResponse:
    """The REST API's paths on the dashboard port: refused, saying where they live."""
    return JsonResponse(error_body(
        "wrong_listener", f"the dashboard port serves no REST API; {request.method} {request.path} goes to "
        f"{rest_url()}{request.path}", {"rest_url": rest_url()}), status=403)
