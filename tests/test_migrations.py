"""Migrations: no app's migrations depend on an app above it (so the migration graph has no loop between apps),
and a database made by the version before the layered apps migrates to today's schema with nothing lost."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from django.db.migrations.loader import MigrationLoader

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "flux-5939e21.sqlite3.gz"
# Each app's migrations may depend only on apps below it (Django's own apps are below all).
ORDER = ["grains", "graph", "epistemic", "dreams", "vitals"]
TABLES = {"grains": "grains_grain", "conduits": "graph_conduit", "clusters": "graph_cluster",
          "feedback": "graph_feedback", "tombstones": "grains_tombstone"}


def test_migrations_depend_only_downwards():
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    edges = {(key[0], parent.key[0]) for key, node in graph.node_map.items() for parent in node.parents
             if parent.key[0] != key[0]}
    ours = {(a, b) for a, b in edges if a in ORDER and b in ORDER}
    assert ours and all(ORDER.index(b) < ORDER.index(a) for a, b in ours), sorted(ours)


CHECK = """
import json, django
django.setup()
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from core.errors import Tombstoned
from grains.models import Grain, Tombstone
from graph.models import Cluster, Conduit, Feedback
from graph.search import entry_search
from memory.store import grain_store
from memory.upkeep import cluster_rebuild

before = {"grains": Grain.objects.count(), "conduits": Conduit.objects.count(), "clusters": Cluster.objects.count(),
          "feedback": Feedback.objects.count(), "tombstones": Tombstone.objects.count()}
try:
    grain_store(content="The old vault code is 4471", caller="check:chat")
    refused = False
except Tombstoned:
    refused = True
new = grain_store(content="Lena also grows basil beside the tomatoes", caller="check:chat").grain.pk
hits = [gid for gid, _ in entry_search().search_many(["tomatoes"], limit=10, statuses=["active"], max_terms=5)[0]]
with connection.cursor() as cursor:
    cursor.execute("INSERT INTO grain_fts(grain_fts) VALUES ('integrity-check')")
rebuilt = cluster_rebuild()
dangling = Grain.objects.exclude(cluster_id=None).exclude(cluster_id__in=Cluster.objects.values("pk")).count()
applied = {f"{a}.{n}" for a, n in MigrationRecorder.Migration.objects.values_list("app", "name")}
print(json.dumps({"before": before, "refused": refused, "new": new, "hits": hits, "dangling": dangling,
                  "clusters": rebuilt.clusters, "squash": "grains.0001_squashed_0008" in applied}))
"""


def test_a_database_of_the_previous_version_migrates_with_nothing_lost(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    with gzip.open(FIXTURE) as packed, open(folder / "flux.sqlite3", "wb") as out:
        shutil.copyfileobj(packed, out)
    with sqlite3.connect(folder / "flux.sqlite3") as db:  # what the old version wrote, read before migrating
        old = {name: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for name, table in TABLES.items()}
    assert old["grains"] and old["conduits"] and old["clusters"] and old["feedback"] and old["tombstones"]
    env = {**{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
           "FLUX_DATA_DIR": str(folder), "DJANGO_SETTINGS_MODULE": "fluxsite.settings"}
    migrated = subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    out = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["before"] == old
    assert result["refused"] and result["squash"] and result["dangling"] == 0 and result["clusters"] >= 2
    assert len(result["hits"]) >= 5 and result["new"] in result["hits"]  # old grains and a new one, searchable
