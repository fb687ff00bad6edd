"""The OpenAPI 3 description of the REST API, served at /openapi.json."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from core.defaults import DEFAULTS
from core.validate import MAX_OFFSET
from core.version import flux_version
from grains.callers import CALLER_ROLES
from grains.models import Provenance, Status
from graph.models import RELATION_KINDS
from vitals.signals import SIGNALS

SIGNAL_NAMES = [s.name for s in SIGNALS]


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict:
    text = {400: "Invalid input", 401: "API keys are on and the request has no valid key (Authorization: Bearer)",
            403: "Refused: a blocked client, another caller's trace, a reserved identity, or a write from a web page "
                 "of another origin", 404: "Not found",
            409: "Conflict (tombstoned, already rated, feedback owed, a dream run or clustering already running)",
            413: "The body is larger than MAX_REQUEST_BYTES", 415: "A write whose body is not application/json",
            429: "Rate limited (Retry-After header)", 502: "The LLM answered badly (flux_extracts mode)",
            503: "Write queue full (Retry-After header), the database read-only or not answering (PostgreSQL "
                 "down or restarting: database_unavailable, Retry-After), or the LLM unreachable (flux_extracts mode)",
            507: "The database is full (disk, or MAX_DATABASE_MB): nothing was written (Retry-After header)"}
    return {str(c): _json(_ref("Error"), text[c]) for c in codes}


NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
GRAIN = {
    "type": "object",
    "required": ["id", "content", "provenance", "status", "confidence", "weight"],
    "properties": {
        "id": {"type": "integer"}, "content": {"type": "string"},
        "provenance": {"type": "string", "enum": [p.value for p in Provenance]},
        "status": {"type": "string", "enum": [s.value for s in Status]},
        "tier": {"type": "string"}, "confidence": {"type": "number"}, "weight": {"type": "number"},
        "level": {"type": "integer"}, "retrievals": {"type": "integer"}, "useful_count": {"type": "integer"},
        "not_useful_count": {"type": "integer"}, "context": {"type": "string"}, "occurred_at": NULLABLE_TIME,
        "created_at": {"type": "string", "format": "date-time"},
        "last_accessed_at": {"type": "string", "format": "date-time"},
        "superseded_by": {"type": ["integer", "null"], "description": "The grain that superseded this one."},
        "cluster_id": {"type": ["integer", "null"]},
    },
}
STORE_ITEM = {
    "type": "object",
    "required": ["content"],
    "additionalProperties": False,
    "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": DEFAULTS["MAX_CONTENT_CHARS"],
                    "description": "The fact to remember."},
        "provenance": {"type": "string", "enum": [p.value for p in Provenance], "default": "ai_stated"},
        "context": {"type": "string", "maxLength": 200,
                    "description": "Groups grains stored together (e.g. one conversation); close ones are linked."},
        "occurred_at": {"type": ["string", "null"], "format": "date-time"},
        "restore": {"type": "boolean", "default": False, "description": "Store content that was forgotten."},
    },
}
STORED = {"type": "object", "required": ["created", "restored", "grain"],
          "properties": {"created": {"type": "boolean"}, "restored": {"type": "boolean"}, "grain": _ref("Grain")}}
EXTRACTED = {"type": "object", "required": ["items", "created", "source_id", "warning"],
             "description": "flux_extracts mode: the facts the LLM found, each stored as an ai_inferred grain.",
             "properties": {"items": {"type": "array", "items": _ref("Stored")}, "created": {"type": "integer"},
                            "source_id": {"type": ["integer", "null"]}, "warning": {"type": ["string", "null"]}}}
RETRIEVED = {
    "type": "object",
    "required": ["id", "content", "rank", "score", "hops", "path"],
    "properties": {
        "id": {"type": "integer"}, "content": {"type": "string"}, "rank": {"type": "integer"},
        "score": {"type": "number"}, "signal": {"type": "number"}, "hops": {"type": "integer"},
        "path": {"type": "array", "items": {"type": "integer"}}, "provenance": {"type": "string"},
        "status": {"type": "string"}, "confidence": {"type": "number"}, "weight": {"type": "number"},
        "context": {"type": "string"},
        "superseded_by": {"type": ["integer", "null"],
                          "description": "The live grain that supersedes this one; it ranks above it."},
        "contradicted_by": {"type": "array", "items": {"type": "integer"},
                            "description": "Grains that contradict this one."},
        "level": {"type": "integer", "description": "0 for stored grains, 1 for a dream's abstraction."},
        "sources": {"type": "array", "items": {"type": "integer"},
                    "description": "An abstraction's source grains."},
    },
}
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "object", "required": ["code", "message", "details"], "properties": {
        "code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}},
}
CALLER_HEADERS = [
    {"name": "X-Flux-Client", "in": "header", "required": False, "description": "Stable client name, e.g. codex.",
     "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$"}},
    {"name": "X-Flux-Role", "in": "header", "required": False, "schema": {"type": "string", "enum": CALLER_ROLES}},
]
OBJECT = {"type": "object"}
NO_FIELDS = {"type": "object", "additionalProperties": False}  # the body of an endpoint that takes no arguments


# Every write: keys, foreign pages, body size, JSON only (api/middleware.py), a full database.
WRITE_ERRORS = (401, 403, 413, 415, 507)


def _post(summary: str, body: dict, ok: dict, *errors: int, parameters: list | None = None) -> dict:
    return {"post": {"summary": summary, "parameters": CALLER_HEADERS if parameters is None else parameters,
                     "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                     "responses": {**ok, **_errors(*sorted({*errors, *WRITE_ERRORS}))}}}


def _get(summary: str, ok: dict, *errors: int, parameters: list | None = None) -> dict:
    return {"get": {"summary": summary, "parameters": parameters or [],
                    "responses": {**ok, **_errors(*sorted({*errors, 401}))}}}


def _id_param(name: str) -> list:
    return [{"name": name, "in": "path", "required": True,
             "schema": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}}]


SCHEMA = {
    "openapi": "3.1.0",
    "info": {"title": "Flux Memory", "version": flux_version(),
             "description": "Self-organizing long-term memory for AI agents. Errors share one shape: "
                            '{"error": {"code", "message", "details"}}.'},
    "paths": {
        "/store": _post("Store one grain (or corroborate the same content); in flux_extracts mode, the facts of a text",
                        _ref("StoreItem"),
                        {"201": _json({"oneOf": [_ref("Stored"), EXTRACTED]}, "Stored"),
                         "200": _json(_ref("Stored"), "Already known")},
                        400, 403, 409, 429, 502, 503),
        "/store/batch": _post(
            "Store up to MAX_GRAINS_PER_CALL grains, all or nothing",
            {"type": "object", "required": ["items"], "additionalProperties": False,
             "properties": {"items": {"type": "array", "minItems": 1, "maxItems": DEFAULTS["MAX_GRAINS_PER_CALL"],
                                      "items": _ref("StoreItem")}}},
            {"201": _json({"type": "object", "required": ["items", "created"], "properties": {
                "items": {"type": "array", "items": _ref("Stored")}, "created": {"type": "integer"}}}, "Stored")},
            400, 403, 409, 429, 503),
        "/retrieve": _post(
            "Retrieve the grains most relevant to a query",
            {"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": DEFAULTS["MAX_QUERY_CHARS"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": DEFAULTS["MAX_TOP_K"],
                          "default": DEFAULTS["TOP_K"]},
                "include_quarantined": {"type": "boolean", "default": False}}},
            {"200": _json({"type": "object", "required": ["trace_id", "query", "grains"], "properties": {
                "trace_id": {"type": ["integer", "null"],
                             "description": "null when the database was full and the trace could not be kept"},
                "query": {"type": "string"},
                "grains": {"type": "array", "items": _ref("RetrievedGrain")},
                "abstractions": {"type": "array", "items": _ref("RetrievedGrain"),
                                 "description": "Dreams' abstractions reached; they take no grain's place."}}},
                "Ranked grains and their trace")},
            400, 403, 409, 429),
        "/feedback": _post(
            "Rate one grain returned by a trace (applied asynchronously)",
            {"type": "object", "required": ["trace_id", "grain_id", "useful"], "additionalProperties": False,
             "properties": {"trace_id": {"type": "integer", "minimum": 1},
                            "grain_id": {"type": "integer", "minimum": 1}, "useful": {"type": "boolean"}}},
            {"202": _json({"type": "object", "required": ["feedback_id", "status"], "properties": {
                "feedback_id": {"type": "integer"}, "trace_id": {"type": "integer"}, "grain_id": {"type": "integer"},
                "useful": {"type": "boolean"}, "status": {"type": "string", "enum": ["accepted", "already_recorded"]}}},
                "Accepted")},
            400, 403, 404, 409, 429),
        "/health": _get("Status (ok / warn / critical), the 14 signals with value, range, state and suggestion, "
                        "open warnings, counts by status and kind, queue depths, last snapshot",
                        {"200": _json(OBJECT, "Health")}),
        "/health/history": _get(
            "One signal's value and state in each snapshot, oldest first", {"200": _json(OBJECT, "History")}, 400,
            parameters=[
                {"name": "signal", "in": "query", "required": True, "schema": {"type": "string", "enum": SIGNAL_NAMES}},
                {"name": "since", "in": "query", "schema": {"type": "string", "format": "date-time"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 5000}},
            ]),
        "/health/snapshot": _post(
            "Take a health snapshot now: raise and clear warnings (the body is an empty JSON object)", NO_FIELDS,
            {"200": _json(OBJECT, "The snapshot's status and the warnings raised and cleared")}, 400, 503,
            parameters=[]),
        "/grains": _get(
            "List grains, newest first", {"200": _json({"type": "object", "required": ["grains"], "properties": {
                "grains": {"type": "array", "items": _ref("Grain")}}}, "Grains")}, 400, 429,
            parameters=[
                {"name": "status", "in": "query", "schema": {"type": "string", "enum": [s.value for s in Status]}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0,
                                                             "maximum": MAX_OFFSET}},
            ]),
        "/grains/{grain_id}": _get(
            "A grain with its conduits, confidence history and traces; format=dossier adds its relations and "
            "dreams, as a JSON download", {"200": _json(_ref("Grain"), "The grain")}, 400, 404, 429,
            parameters=_id_param("grain_id") + [
                {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["detail", "dossier"]}}]),
        "/traces/{trace_id}": _get("A retrieval: query, caller, returned grains with paths and feedback",
                                   {"200": _json(OBJECT, "The trace")}, 400, 404, 429,
                                   parameters=_id_param("trace_id")),
        "/callers": _get("Callers with their counts and feedback compliance", {"200": _json(OBJECT, "Callers")}, 429),
        "/relations": {
            **_get("Typed relations (supports, contradicts, supersedes, caused_by), newest first",
                   {"200": _json({"type": "object", "required": ["relations"], "properties": {
                       "relations": {"type": "array", "items": OBJECT}}}, "Relations")}, 400, 429,
                   parameters=[
                       {"name": "kind", "in": "query",
                        "schema": {"type": "string", "enum": [k.value for k in RELATION_KINDS]}},
                       {"name": "grain_id", "in": "query", "schema": {"type": "integer", "minimum": 1,
                                                                      "maximum": 2**63 - 1}},
                       {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                       {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0,
                                                                    "maximum": MAX_OFFSET}},
                   ]),
            **_post("Assert a typed relation between two grains (applied once: confidence, supersession)",
                    {"type": "object", "required": ["source_id", "target_id", "kind"], "additionalProperties": False,
                     "properties": {
                         "source_id": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1,
                                       "description": "supersedes: the newer grain; caused_by: the effect."},
                         "target_id": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                         "kind": {"type": "string", "enum": [k.value for k in RELATION_KINDS]},
                         "note": {"type": "string", "maxLength": 200}}},
                    {"201": _json(OBJECT, "Asserted"), "200": _json(OBJECT, "Already known")}, 400, 404, 409, 503),
        },
        "/dreams": _get(
            "Dreams (consolidation attempts), newest first: accepted ones with their level-1 grain, rejected "
            "ones with the reason and the failing sentence", {"200": _json(OBJECT, "Dreams")}, 400, 429,
            parameters=[
                {"name": "status", "in": "query", "schema": {"type": "string", "enum": ["accepted", "rejected"]}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}},
            ]),
        "/dreams/run": _post(
            "Run the dream cycle now (the body is an empty JSON object: the cycle takes no arguments); grains "
            "stored since the last clustering are clustered first; one run at a time", NO_FIELDS,
            {"200": _json(OBJECT, "What the cycle did: candidates, accepted and rejected dream ids")},
            400, 409, parameters=[]),
        "/clusters/run": _post(
            "Re-cluster the graph now (the body is an empty JSON object); one clustering at a time", NO_FIELDS,
            {"200": _json(OBJECT, "The clustering: clusters, grains clustered, created, kept, removed, seconds")},
            400, 409, parameters=[]),
        "/clusters": _get(
            "Clusters of the graph, largest first", {"200": _json(OBJECT, "Clusters")}, 400, 429,
            parameters=[
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}},
            ]),
    },
    "components": {"schemas": {"Grain": GRAIN, "StoreItem": STORE_ITEM, "Stored": STORED,
                               "RetrievedGrain": RETRIEVED, "Error": ERROR},
                   "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description":
                                                  "Required when the instance has API keys (`flux keys add`)."}}},
    "security": [{}, {"apiKey": []}],
}


def openapi_view(request: HttpRequest) -> JsonResponse:
    return JsonResponse(SCHEMA)
