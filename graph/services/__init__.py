"""Graph services: the only code that writes conduits, traces and feedback."""
from graph.services.clustering import cluster_rebuild
from graph.services.conduits import conduit_strengthen, conduits_link_new_grains
from graph.services.decay import decay_sweep
from graph.services.learning import feedback_accept, feedback_apply, feedback_apply_pending, feedback_record
from graph.services.retrieval import grain_retrieve

__all__ = [
    "cluster_rebuild", "conduit_strengthen", "conduits_link_new_grains", "decay_sweep", "feedback_accept",
    "feedback_apply", "feedback_apply_pending", "feedback_record", "grain_retrieve",
]
