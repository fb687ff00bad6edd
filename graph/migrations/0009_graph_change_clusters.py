"""The change log of the graph mirror names clusters too (their hubs), so a mirror keeps each cluster's hubs and
a retrieval asks the database nothing about them (SQLite only, as the log)."""
from django.db import migrations

from core.vendor_sql import run_by_vendor

LOG = "INSERT INTO graph_graphchange (kind, row, token) VALUES"
SQLITE_UP = [
    f"CREATE TRIGGER graph_change_cluster_insert AFTER INSERT ON graph_cluster BEGIN {LOG} (3, NEW.id, random()); END",
    f"CREATE TRIGGER graph_change_cluster_update AFTER UPDATE OF hubs ON graph_cluster "
    f"BEGIN {LOG} (3, NEW.id, random()); END",
    f"CREATE TRIGGER graph_change_cluster_delete AFTER DELETE ON graph_cluster BEGIN {LOG} (3, OLD.id, random()); END",
]
SQLITE_DOWN = [f"DROP TRIGGER IF EXISTS graph_change_cluster_{op}" for op in ("insert", "update", "delete")]


class Migration(migrations.Migration):
    dependencies = [("graph", "0008_grain_fts_postgres")]

    operations = [migrations.RunPython(run_by_vendor({"sqlite": SQLITE_UP}), run_by_vendor({"sqlite": SQLITE_DOWN}))]
