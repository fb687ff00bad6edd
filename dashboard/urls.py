"""URLs of the dashboard listener (DASHBOARD_PORT): pages, their read-only data, static files. The REST API's
paths are refused here with a pointer to the REST port."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path

from core.http import bad_request, error_body
from dashboard import views

urlpatterns = [
    path("", views.page("graph")),
    path("mycelium", views.page("mycelium")),
    path("globe", views.page("globe")),
    path("vitals", views.page("vitals")),
    path("chronicle", views.page("chronicle")),
    path("mobile-preview", views.page("mobile")),
    path("api/graph", views.graph),
    path("api/graph/clusters/<int:cluster_id>", views.graph_cluster),
    path("api/clusters", views.clusters),
    path("api/search", views.search),
    path("api/grains/<int:grain_id>", views.grain),
    path("api/activity", views.activity),
    path("api/vitals", views.vitals),
    re_path(r"^static/(?P<path>.*)$", views.static),
    re_path(r"^(?P<path>(store|retrieve|feedback|grains|relations|dreams|health|traces|callers|clusters|admin)"
            r"(/.*)?|openapi\.json)$", views.write_refused),
]


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("not_found", f"the dashboard has no page at {request.path}; its pages: "
                                   + ", ".join(p for _, p in views.PAGES.values())), status=404)


def server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("internal_error", "the dashboard failed; see its log"), status=500)


handler400 = bad_request
handler404 = not_found
handler500 = server_error
