"""The change log of the graph mirror: triggers append a row per grain or conduit changed (SQLite only: on
PostgreSQL retrieval reads the database)."""
from django.db import migrations, models

from core.vendor_sql import run_by_vendor

GRAIN_FIELDS = "status, tier, weight, confidence, last_decayed_at, superseded_by, cluster_id, level"
CONDUIT_FIELDS = "source_id, target_id, kind, directed, weight, created_at, last_decayed_at"
LOG = "INSERT INTO graph_graphchange (kind, row, token) VALUES"
SQLITE_UP = [
    f"CREATE TRIGGER graph_change_grain_insert AFTER INSERT ON grains_grain BEGIN {LOG} (1, NEW.id, random()); END",
    f"CREATE TRIGGER graph_change_grain_update AFTER UPDATE OF {GRAIN_FIELDS} ON grains_grain "
    f"BEGIN {LOG} (1, NEW.id, random()); END",
    f"CREATE TRIGGER graph_change_grain_delete AFTER DELETE ON grains_grain BEGIN {LOG} (1, OLD.id, random()); END",
    f"CREATE TRIGGER graph_change_conduit_insert AFTER INSERT ON graph_conduit "
    f"BEGIN {LOG} (2, NEW.id, random()); END",
    f"CREATE TRIGGER graph_change_conduit_update AFTER UPDATE OF {CONDUIT_FIELDS} ON graph_conduit "
    f"BEGIN {LOG} (2, NEW.id, random()); END",
    f"CREATE TRIGGER graph_change_conduit_delete AFTER DELETE ON graph_conduit "
    f"BEGIN {LOG} (2, OLD.id, random()); END",
]
SQLITE_DOWN = [f"DROP TRIGGER IF EXISTS graph_change_{table}_{op}" for table in ("grain", "conduit")
               for op in ("insert", "update", "delete")]


class Migration(migrations.Migration):
    dependencies = [("graph", "0006_grain_fulltext")]

    operations = [
        migrations.CreateModel(
            name="GraphChange",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.PositiveSmallIntegerField()),
                ("row", models.BigIntegerField()),
                ("token", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(run_by_vendor({"sqlite": SQLITE_UP}), run_by_vendor({"sqlite": SQLITE_DOWN})),
    ]
