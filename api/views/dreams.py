"""REST views of the dream cycle: run it now, list the dreams."""
from __future__ import annotations

from dataclasses import asdict

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.rest import booth_write, json_object, page_params
from core.throttle import throttle
from dreams.selectors import dream_list
from memory.dreaming import dream_run


class DreamRunView(APIView):
    """Runs on a read worker: only each dream's database write goes through the write queue.

    Like every write it takes a JSON body (the middleware refuses any other): an empty object, or none (the cycle
    takes no arguments: a field is refused, as every endpoint refuses one it does not take).
    """

    def post(self, request: Request) -> Response:
        json_object(request, allowed=set())
        return Response(asdict(dream_run(run_write=booth_write)))


class DreamListView(APIView):
    def get(self, request: Request) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        status = request.query_params.get("status") or None
        limit, offset = page_params(request)
        return Response({"dreams": dream_list(status=status, limit=limit, offset=offset), "status": status,
                         "limit": limit, "offset": offset})
