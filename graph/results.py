"""What a retrieval returns, as plain dataclasses (no Django): the services build them, the REST API serialises
them, and the SDK's HTTP client rebuilds them from JSON, so both ways of calling Flux return the same types."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class RetrievedGrain:
    id: int
    content: str
    rank: int
    score: float
    signal: float
    hops: int
    path: list[int]
    provenance: str
    status: str
    confidence: float
    weight: float
    context: str
    superseded_by: int | None = None
    contradicted_by: list[int] = field(default_factory=list)
    level: int = 0
    sources: list[int] = field(default_factory=list)  # an abstraction's source grains

    def as_dict(self) -> dict:
        return {**self.__dict__, "contradicted_by": list(self.contradicted_by), "sources": list(self.sources)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievedGrain:
        """From ``as_dict``'s shape; fields a newer service adds are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class RetrieveResult:
    trace_id: int | None  # None when the storage could not record the trace (disk full): nothing to rate
    query: str
    grains: list[RetrievedGrain] = field(default_factory=list)
    abstractions: list[RetrievedGrain] = field(default_factory=list)  # dreams' level-1 grains reached

    def as_dict(self) -> dict:
        return {"trace_id": self.trace_id, "query": self.query, "grains": [g.as_dict() for g in self.grains],
                "abstractions": [g.as_dict() for g in self.abstractions]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrieveResult:
        return cls(trace_id=data["trace_id"], query=data["query"],
                   grains=[RetrievedGrain.from_dict(g) for g in data.get("grains", [])],
                   abstractions=[RetrievedGrain.from_dict(g) for g in data.get("abstractions", [])])

