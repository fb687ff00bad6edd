"""GET /health."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fluxsite.booth import get_booth
from vitals.selectors import health_summary


class HealthView(APIView):
    def get(self, request: Request) -> Response:
        return Response(health_summary(write_depth=get_booth().write_depth))
