"""REST views for grains and callers: validate -> one service or selector -> JSON."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.rest import booth_write, json_object, page_params, request_caller
from core.errors import InvalidInput
from core.throttle import throttle
from grains.selectors import LIST_FIELDS, caller_list, grain_list
from memory.dossier import grain_detail, grain_dossier
from memory.retrieval import traces_written
from memory.store import ExtractResult, grain_remember, grain_store_batch

STORE_FIELDS = {"content", "provenance", "context", "occurred_at", "restore"}


def stored_json(result) -> dict:  # noqa: ANN001 - a StoreResult
    grain = result.grain
    return {"created": result.created, "restored": result.restored,
            "grain": {f: getattr(grain, f) for f in LIST_FIELDS}}


class StoreView(APIView):
    """Runs on a read worker; only its database write goes through the booth's write queue."""

    def post(self, request: Request) -> Response:
        data = json_object(request, allowed=STORE_FIELDS, required={"content"})
        result = grain_remember(caller=request_caller(request), rate_limit=True, run_write=booth_write, **data)
        if isinstance(result, ExtractResult):
            return Response({"items": [stored_json(r) for r in result.results],
                             "created": sum(r.created for r in result.results),
                             "source_id": result.source.pk if result.source else None,
                             "warning": result.warning}, status=201)
        return Response(stored_json(result), status=201 if result.created else 200)


class StoreBatchView(APIView):
    def post(self, request: Request) -> Response:
        data = json_object(request, allowed={"items"}, required={"items"})
        if not isinstance(data["items"], list):
            raise InvalidInput("'items' must be a list of objects", details={"field": "items"})
        caller = request_caller(request)
        results = grain_store_batch(items=data["items"], caller=caller, rate_limit=True, run_write=booth_write)
        return Response({"items": [stored_json(r) for r in results],
                         "created": sum(r.created for r in results)}, status=201)


class GrainListView(APIView):
    def get(self, request: Request) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        limit, offset = page_params(request)
        status = request.query_params.get("status") or None
        traces_written()
        grains = grain_list(status=status, limit=limit, offset=offset)
        return Response({"grains": grains, "status": status, "limit": limit, "offset": offset})


class GrainDetailView(APIView):
    def get(self, request: Request, grain_id: int) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        shape = request.query_params.get("format") or "detail"
        if shape not in ("detail", "dossier"):
            raise InvalidInput(f"'format' {shape!r} is not detail or dossier", details={"field": "format"})
        traces_written()  # its retrievals already answered are counted
        if shape == "detail":
            return Response(grain_detail(grain_id))
        response = Response(grain_dossier(grain_id))
        response["Content-Disposition"] = f'attachment; filename="grain-{grain_id}-dossier.json"'
        return response


class CallerListView(APIView):
    def get(self, request: Request) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        traces_written()  # the retrievals already answered are counted
        return Response({"callers": caller_list()})
