"""What Celery beat runs, each safe to run twice: lazy decay applied everywhere with the lifecycle moves
(graph), re-clustering (graph, one run at a time), the epistemic pass over new grains (epistemic), a health
snapshot raising and clearing warnings (vitals), embedding grains stored without a vector (graph), clearing
expired restore data (memory.forgetting), and cleaning the embedded broker (core)."""
from __future__ import annotations

from core.broker import broker_cleanup
from epistemic.review import epistemic_pass
from graph.semantic import embed_missing
from graph.services.clustering import cluster_rebuild
from graph.services.decay import decay_sweep
from vitals.services import vitals_snapshot

__all__ = ["broker_cleanup", "cluster_rebuild", "decay_sweep", "embed_missing", "epistemic_pass", "vitals_snapshot"]
