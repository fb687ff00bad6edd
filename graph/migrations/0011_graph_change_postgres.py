"""The graph mirror's change log on PostgreSQL too, so each process retrieves from memory there as on SQLite.

Its transactions commit out of id order, so a mirror cannot follow the log by id alone: each row also holds the
id of the transaction that wrote it (``xact``), and a mirror asks for the rows of the transactions its last
snapshot did not see yet (graph.mirror). Inserts and deletes are logged once per statement (a batch's hundreds
of conduits in one insert); an update per row, only when it sets a field the mirror reads to another value (a
retrieval's touch of the access time is not logged, and costs no trigger call).
"""
from django.db import migrations

from core.vendor_sql import run_by_vendor

# table -> (kind, the fields the mirror reads), as the SQLite triggers of 0007 and 0009 log them
LOGGED = {
    "grains_grain": (1, "status, tier, weight, confidence, last_decayed_at, superseded_by, cluster_id, level"),
    "graph_conduit": (2, "source_id, target_id, kind, directed, weight, created_at, last_decayed_at"),
    "graph_cluster": (3, "hubs"),
}
LOG = "INSERT INTO graph_graphchange (kind, row, token)"
FUNCTION = f"""CREATE FUNCTION graph_change_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_LEVEL = 'ROW' THEN
    {LOG} VALUES (TG_ARGV[0]::smallint, NEW.id, 0);
  ELSIF TG_OP = 'INSERT' THEN
    {LOG} SELECT TG_ARGV[0]::smallint, id, 0 FROM new_rows;
  ELSE
    {LOG} SELECT TG_ARGV[0]::smallint, id, 0 FROM old_rows;
  END IF;
  RETURN NULL;
END $$"""


def _triggers(table: str) -> list[str]:
    kind, fields = LOGGED[table]
    names = [f.strip() for f in fields.split(",")]
    changed = f"({', '.join(f'OLD.{n}' for n in names)}) IS DISTINCT FROM ({', '.join(f'NEW.{n}' for n in names)})"
    return [
        f"CREATE TRIGGER graph_change_insert AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows "
        f"FOR EACH STATEMENT EXECUTE FUNCTION graph_change_log('{kind}')",
        f"CREATE TRIGGER graph_change_delete AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows "
        f"FOR EACH STATEMENT EXECUTE FUNCTION graph_change_log('{kind}')",
        f"CREATE TRIGGER graph_change_update AFTER UPDATE OF {fields} ON {table} FOR EACH ROW "
        f"WHEN ({changed}) EXECUTE FUNCTION graph_change_log('{kind}')",
    ]


POSTGRES_UP = [
    # The transaction's id as a number (xid8 is 64 bits, never wraps); a column Django's model leaves out.
    "ALTER TABLE graph_graphchange ADD COLUMN xact bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)",
    "CREATE INDEX graph_graphchange_xact ON graph_graphchange (xact)",
    FUNCTION,
    *(sql for table in LOGGED for sql in _triggers(table)),
]
POSTGRES_DOWN = [
    *(f"DROP TRIGGER IF EXISTS graph_change_{event} ON {table}" for table in LOGGED
      for event in ("insert", "update", "delete")),
    "DROP FUNCTION IF EXISTS graph_change_log()",
    "ALTER TABLE graph_graphchange DROP COLUMN IF EXISTS xact",
]


class Migration(migrations.Migration):
    dependencies = [("graph", "0010_trace_item_no_single_indexes")]

    operations = [migrations.RunPython(run_by_vendor({"postgresql": POSTGRES_UP}),
                                       run_by_vendor({"postgresql": POSTGRES_DOWN}))]
