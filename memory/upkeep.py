"""What Celery beat runs, each safe to run twice: lazy decay applied everywhere with the lifecycle moves
(graph), re-clustering (graph, one run at a time), the epistemic pass over new grains (epistemic), a health
snapshot raising and clearing warnings (vitals), embedding grains stored without a vector, pruning the graph
mirror's change log and folding PostgreSQL's counts of each search term (graph), clearing
expired restore data (memory.forgetting), and cleaning the embedded broker (core)."""
from __future__ import annotations

from core.backup import DAILY_PREFIX, Backup, backups_prune, database_backup, default_backup_path
from core.broker import broker_cleanup
from core.conf import flux_setting as S
from epistemic.review import epistemic_pass
from grains.locks import exclusive
from graph.mirror import changes_prune
from graph.search import search_terms_fold
from graph.semantic import embed_missing
from graph.services.clustering import ClusterResult, cluster_rebuild, cluster_rebuild_if_grown
from graph.services.decay import decay_sweep
from vitals.services import vitals_snapshot

BACKUP_LOCK_SECONDS = 3600  # a daily backup's lock outlives the longest copy; a killed holder's is taken over

__all__ = ["backup_daily", "broker_cleanup", "changes_prune", "cluster_rebuild", "cluster_refresh", "decay_sweep",
           "embed_missing", "epistemic_pass", "search_terms_fold", "vitals_snapshot"]


def cluster_refresh() -> ClusterResult | None:
    """Re-cluster when the graph grew enough since the last clustering (CLUSTER_GROWTH_GRAINS or
    CLUSTER_GROWTH_FRACTION), so a young memory gets clusters within minutes rather than CLUSTER_INTERVAL_SECONDS."""
    return cluster_rebuild_if_grown(grains=S("CLUSTER_GROWTH_GRAINS"), fraction=S("CLUSTER_GROWTH_FRACTION"))


def backup_daily() -> Backup | None:
    """With BACKUP_KEEP > 0: a backup in backups/ (flux-daily-<time>), the oldest beyond BACKUP_KEEP deleted as it
    is put in place, so there are never more than BACKUP_KEEP. One at a time across the instance's processes (a
    backlog of beat's runs after a pause makes one backup, not several at once): None when another is running."""
    keep = int(S("BACKUP_KEEP"))
    if keep <= 0:
        return None
    with exclusive("backup_daily", seconds=BACKUP_LOCK_SECONDS) as other:
        if other is not None:
            return None
        return database_backup(default_backup_path(DAILY_PREFIX), make_room=lambda: backups_prune(keep - 1))
