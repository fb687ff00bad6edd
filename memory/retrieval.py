"""Retrieving and rating: what an agent does on every turn.

Walk of a retrieval (graph.services.retrieval, on a read worker): the caller checked and feedback debts
enforced (grains, graph), entry points found (graph.search: FTS5 or PostgreSQL full text; graph.semantic when
on), signal propagated along conduits and cluster hubs (graph.algorithms.propagation), ranked and re-ranked
(graph.services.ranker), superseded grains placed under their successors (grains.selectors), contradictions
flagged; then one short write on the writer's bookkeeping lane: the trace, the returned grains touched, the
counters and the activity event.

Walk of feedback: accepted at once (graph.services.learning: the trace must be the caller's own), applied in
the background by one coalesced write (conduits strengthened or weakened, shortcuts, confidence, the ranker
and the learned cues).
"""
from __future__ import annotations

import gc

from graph.mirror import mirrors
from graph.semantic import semantic_warm_up
from graph.services.learning import feedback_accept, feedback_apply_pending, feedback_record
from graph.services.retrieval import grain_retrieve
from graph.services.traces import trace_arrived, trace_written, traces_written

__all__ = ["feedback_accept", "feedback_apply_pending", "feedback_record", "grain_retrieve", "retrieval_warm_up",
           "trace_arrived", "trace_written", "traces_written"]


def retrieval_warm_up(*, wait_seconds: float = 0.0) -> None:
    """Load what retrieval keeps in memory (the graph mirror, the embedding model and the vectors; with
    ``wait_seconds``, waiting that long at most for an approximate vector index being built), and let the
    process's young objects pile up to YOUNG_COLLECTION before the cycle collector looks at them."""
    # A retrieval holds a few thousand small containers at once (edges, activations, features): at the
    # interpreter's default of 700 the collector ran several times within each, walking objects that were about
    # to be freed anyway (about 0.1-0.2 ms a retrieval at 100,000 grains).
    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])
    mirrors.current()
    semantic_warm_up(wait_seconds=wait_seconds)


YOUNG_COLLECTION = 10_000  # objects allocated and not yet freed before a collection of the youngest generation
