"""REST views of the epistemic layer: typed relations, listed and asserted by callers."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.rest import booth_write, int_param, json_object, page_params, request_caller
from core.throttle import throttle
from core.validate import MAX_ID
from epistemic.selectors import relation_list
from memory.corrections import relation_assert


def relation_json(conduit, created: bool) -> dict:  # noqa: ANN001 - a Conduit
    return {"created": created, "relation": {
        "id": conduit.pk, "kind": conduit.kind, "source_id": conduit.source_id, "target_id": conduit.target_id,
        "asserted_by": conduit.asserted_by, "note": conduit.note, "weight": round(conduit.weight, 4)}}


class RelationsView(APIView):
    def get(self, request: Request) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        kind = request.query_params.get("kind") or None
        grain = request.query_params.get("grain_id")
        limit, offset = page_params(request)
        rows = relation_list(kind=kind, grain_id=int_param(request, "grain_id", 0, 1, MAX_ID) if grain else None,
                             limit=limit, offset=offset)
        return Response({"relations": rows, "kind": kind, "limit": limit, "offset": offset})

    def post(self, request: Request) -> Response:
        data = json_object(request, allowed={"source_id", "target_id", "kind", "note"},
                           required={"source_id", "target_id", "kind"})
        caller = request_caller(request)
        conduit, created = booth_write(lambda: relation_assert(caller=caller, **data))
        return Response(relation_json(conduit, created), status=201 if created else 200)
