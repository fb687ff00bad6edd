"""URL roots. REST views run on the booth: reads on its workers, writes on its serial queue."""
from __future__ import annotations

from pathlib import Path

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path, re_path

from api.admin_link import admin_link_login
from api.openapi import openapi_view
from api.rest import outside_view, read_view, store_view
from api.views.dreams import DreamListView, DreamRunView
from api.views.grains import CallerListView, GrainDetailView, GrainListView, StoreBatchView, StoreView
from api.views.health import HealthHistoryView, HealthSnapshotView, HealthView
from api.views.relations import RelationsView
from api.views.retrieval import ClusterListView, ClusterRunView, FeedbackView, RetrieveView, TraceDetailView
from core.http import bad_request, error_body, static_file

ADMIN_STATIC = Path(admin.__file__).resolve().parent / "static" / "admin"  # Django's own: the admin's styles, scripts


def admin_static(request: HttpRequest, path: str) -> HttpResponse:
    """The admin's styles and scripts (its pages were served without them: 404s)."""
    return static_file(request, path, ADMIN_STATIC)


urlpatterns = [
    path("store", store_view(StoreView.as_view())),
    path("store/batch", read_view(StoreBatchView.as_view())),
    path("retrieve", read_view(RetrieveView.as_view())),
    path("feedback", read_view(FeedbackView.as_view())),
    path("health", read_view(HealthView.as_view())),
    path("health/history", read_view(HealthHistoryView.as_view())),
    path("health/snapshot", read_view(HealthSnapshotView.as_view())),
    path("grains", read_view(GrainListView.as_view())),
    path("grains/<int:grain_id>", read_view(GrainDetailView.as_view())),
    path("traces/<int:trace_id>", read_view(TraceDetailView.as_view())),
    path("callers", read_view(CallerListView.as_view())),
    path("relations", read_view(RelationsView.as_view())),
    path("clusters", read_view(ClusterListView.as_view())),
    path("clusters/run", outside_view(ClusterRunView.as_view())),
    path("dreams", read_view(DreamListView.as_view())),
    path("dreams/run", outside_view(DreamRunView.as_view())),
    path("openapi.json", openapi_view),
    path("admin/login-link/<str:token>", admin_link_login),
    path("admin/", admin.site.urls),
    re_path(r"^static/admin/(?P<path>.*)$", admin_static),
]


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("not_found", f"no endpoint at {request.path}; see /openapi.json"), status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("internal_error", "the service failed; see its log"), status=500)


handler400 = bad_request
handler404 = not_found
handler500 = server_error
