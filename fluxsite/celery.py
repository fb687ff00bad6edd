"""The Celery app and its beat schedule, declared here from settings.

Embedded default: kombu's SQLAlchemy transport on its own SQLite file in the
instance folder (no server); REDIS_URL set: Redis. Results are not stored.
"""
from __future__ import annotations

import os
import sys

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")

_path = list(sys.path)
app = Celery("fluxsite")
# Celery's Django fix-up puts the current folder first on the import path (for a project run from its own
# folder). Ours is installed: a folder of the user's holding packages named as ours (core, api, memory...) would
# shadow them in every process (an MCP client launches the bridge in its own project's folder).
sys.path[:] = _path
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _schedule(sender: Celery, **kwargs: object) -> None:
    from django.conf import settings

    from graph.mirror import PRUNE_SECONDS

    flux = settings.FLUX
    sender.conf.beat_schedule = {
        "decay-sweep": {"task": "graph.decay_sweep", "schedule": float(flux["DECAY_INTERVAL_SECONDS"])},
        "cluster-rebuild": {"task": "graph.cluster_rebuild", "schedule": float(flux["CLUSTER_INTERVAL_SECONDS"])},
        "cluster-refresh": {"task": "graph.cluster_refresh", "schedule": float(flux["CLUSTER_CHECK_SECONDS"])},
        "epistemic-pass": {"task": "epistemic.epistemic_pass", "schedule": float(flux["EPISTEMIC_INTERVAL_SECONDS"])},
        "dream-run": {"task": "dreams.dream_run", "schedule": float(flux["DREAM_INTERVAL_SECONDS"])},
        "health-snapshot": {"task": "vitals.vitals_snapshot", "schedule": float(flux["HEALTH_INTERVAL_SECONDS"])},
        "feedback-apply-pending": {"task": "graph.feedback_apply_pending",
                                   "schedule": float(flux["FEEDBACK_SWEEP_SECONDS"])},
        "backup-daily": {"task": "grains.backup_daily", "schedule": float(flux["BACKUP_INTERVAL_SECONDS"])},
        "embed-missing": {"task": "graph.embed_missing", "schedule": float(flux["EMBED_INTERVAL_SECONDS"])},
        "changes-prune": {"task": "graph.changes_prune", "schedule": PRUNE_SECONDS},
        "search-terms-fold": {"task": "graph.search_terms_fold", "schedule": PRUNE_SECONDS},
        # Restore data of purged grains is cleared when the window ends; checked as often as decay runs.
        "tombstones-expire": {"task": "grains.tombstones_expire", "schedule": float(flux["DECAY_INTERVAL_SECONDS"])},
    }
    if settings.CELERY_BROKER_URL.startswith("sqla+"):
        sender.conf.beat_schedule["broker-cleanup"] = {
            "task": "grains.broker_cleanup", "schedule": float(flux["BROKER_CLEANUP_INTERVAL_SECONDS"])}
