"""GET /health, GET /health/history, POST /health/snapshot."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.rest import booth_write, int_param, json_object
from core.booth import get_booth
from memory.upkeep import vitals_snapshot
from vitals.selectors import health_history, health_summary


class HealthView(APIView):
    def get(self, request: Request) -> Response:
        return Response(health_summary(write_depth=get_booth().write_depth))


class HealthHistoryView(APIView):
    def get(self, request: Request) -> Response:
        signal = request.query_params.get("signal") or ""
        rows = health_history(signal=signal, since=request.query_params.get("since"),
                              limit=int_param(request, "limit", 500, 1, 5000))
        return Response({"signal": signal, "history": rows})


class HealthSnapshotView(APIView):
    """Take a snapshot now (the beat takes one every HEALTH_INTERVAL_SECONDS); the body is an empty object."""

    def post(self, request: Request) -> Response:
        json_object(request, allowed=set())
        result = booth_write(vitals_snapshot)
        return Response({"created_at": result.snapshot.created_at, "status": result.snapshot.status,
                         "raised": result.raised, "cleared": result.cleared})
