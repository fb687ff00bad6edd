"""REST views for retrieval, feedback and traces."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.rest import booth_record, json_object, page_params, request_caller
from core.booth import get_booth
from core.validate import require_bool
from graph.selectors import cluster_list, trace_detail
from memory.retrieval import feedback_accept, feedback_apply_pending, grain_retrieve


class RetrieveView(APIView):
    def post(self, request: Request) -> Response:
        data = json_object(request, allowed={"query", "limit", "include_quarantined"}, required={"query"})
        result = grain_retrieve(
            query=data["query"], limit=data.get("limit"), caller=request_caller(request),
            include_quarantined=require_bool(data.get("include_quarantined", False), "include_quarantined"),
            run_write=booth_record,
        )
        return Response(result.as_dict())


class FeedbackView(APIView):
    def post(self, request: Request) -> Response:
        data = json_object(request, allowed={"trace_id", "grain_id", "useful"},
                           required={"trace_id", "grain_id", "useful"})
        feedback, new = feedback_accept(caller=request_caller(request), **data)
        if new:
            get_booth().coalesce("feedback", feedback_apply_pending)
        return Response({"feedback_id": feedback.pk, "trace_id": feedback.item.trace_id,
                         "grain_id": feedback.item.grain_id, "useful": feedback.useful,
                         "status": "accepted" if new else "already_recorded"}, status=202)


class TraceDetailView(APIView):
    def get(self, request: Request, trace_id: int) -> Response:
        return Response(trace_detail(trace_id))


class ClusterListView(APIView):
    def get(self, request: Request) -> Response:
        limit, offset = page_params(request, limit=100)
        return Response({"clusters": cluster_list(limit=limit, offset=offset), "limit": limit, "offset": offset})
