"""REST views for retrieval, feedback, traces and clusters."""
from __future__ import annotations

from dataclasses import asdict

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.rest import booth_record, booth_write, json_object, page_params, request_caller
from core.booth import get_booth
from core.errors import ClusteringRunning
from core.throttle import throttle
from core.validate import require_bool
from graph.selectors import cluster_list, trace_detail
from memory.retrieval import feedback_accept, feedback_apply_pending, grain_retrieve, trace_arrived
from memory.upkeep import cluster_rebuild


class RetrieveView(APIView):
    def post(self, request: Request) -> Response:
        throttle(request, "retrieve", "RATE_RETRIEVE")
        data = json_object(request, allowed={"query", "limit", "include_quarantined"}, required={"query"})
        result = grain_retrieve(
            query=data["query"], limit=data.get("limit"), caller=request_caller(request),
            include_quarantined=require_bool(data.get("include_quarantined", False), "include_quarantined"),
            booth=get_booth(),
        )
        return Response(result.as_dict())


class FeedbackView(APIView):
    def post(self, request: Request) -> Response:
        throttle(request, "feedback", "RATE_FEEDBACK")
        data = json_object(request, allowed={"trace_id", "grain_id", "useful"},
                           required={"trace_id", "grain_id", "useful"})
        trace_arrived(data["trace_id"])  # here, on a read worker: another process may be writing it still
        caller = request_caller(request)
        feedback, new = booth_record(lambda: feedback_accept(caller=caller, **data))
        if new:
            get_booth().coalesce("feedback", feedback_apply_pending)
        return Response({"feedback_id": feedback.pk, "trace_id": feedback.item.trace_id,
                         "grain_id": feedback.item.grain_id, "useful": feedback.useful,
                         "status": "accepted" if new else "already_recorded"}, status=202)


class TraceDetailView(APIView):
    def get(self, request: Request, trace_id: int) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        trace_arrived(trace_id)
        return Response(trace_detail(trace_id))


class ClusterListView(APIView):
    def get(self, request: Request) -> Response:
        throttle(request, "listing", "RATE_LISTING")
        limit, offset = page_params(request, limit=100)
        return Response({"clusters": cluster_list(limit=limit, offset=offset), "limit": limit, "offset": offset})


class ClusterRunView(APIView):
    """Re-cluster now, for operators (the beat does it when the graph grew); reads on a read worker, writes
    through the write queue. Takes an empty JSON object."""

    def post(self, request: Request) -> Response:
        json_object(request, allowed=set())
        result = cluster_rebuild(write=booth_write)
        if result.skipped:
            raise ClusteringRunning("a clustering is already running; wait for it to end, then run again")
        return Response(asdict(result))
