"""Gauges kept exact by the database: grains by status and tier, conduits by kind, and their totals.

Triggers update a handful of rows of vitals_gauge on every insert, delete or
status/tier change (creating a row when it is missing), so health never
counts a table. The gauges start from the counts of the data already there.
A later migration that makes SQLite rebuild grains_grain or graph_conduit
drops these triggers and must create them again (as 0005 of grains does for
the full-text triggers).
"""
from django.db import migrations

STATUSES = ["active", "dormant", "quarantined", "archived"]
TIERS = ["core", "working", "ephemeral"]
KINDS = ["association", "shortcut", "contradicts", "supersedes", "supports", "caused_by", "abstracts"]

def _bump(name: str, step: int) -> str:
    """Add ``step`` to the gauge ``name`` (an SQL expression), creating it when missing."""
    return (f"INSERT INTO vitals_gauge (name, value) VALUES ({name}, {step}) "
            f"ON CONFLICT (name) DO UPDATE SET value = vitals_gauge.value + ({step});")


def _grain(row: str, step: int, total: bool) -> str:
    names = (["'grains'"] if total else []) + [f"'grains:' || {row}.status", f"'tier:' || {row}.tier"]
    return " ".join(_bump(n, step) for n in names)


def _conduit(row: str, step: int) -> str:
    return " ".join(_bump(n, step) for n in ("'conduits'", f"'conduits:' || {row}.kind"))


SQLITE = [
    f"CREATE TRIGGER vitals_gauge_grain_insert AFTER INSERT ON grains_grain BEGIN {_grain('new', 1, True)} END",
    f"CREATE TRIGGER vitals_gauge_grain_delete AFTER DELETE ON grains_grain BEGIN {_grain('old', -1, True)} END",
    "CREATE TRIGGER vitals_gauge_grain_update AFTER UPDATE OF status, tier ON grains_grain "
    f"WHEN old.status != new.status OR old.tier != new.tier BEGIN {_grain('old', -1, False)} "
    f"{_grain('new', 1, False)} END",
    f"CREATE TRIGGER vitals_gauge_conduit_insert AFTER INSERT ON graph_conduit BEGIN {_conduit('new', 1)} END",
    f"CREATE TRIGGER vitals_gauge_conduit_delete AFTER DELETE ON graph_conduit BEGIN {_conduit('old', -1)} END",
]
SQLITE_DOWN = [f"DROP TRIGGER IF EXISTS vitals_gauge_{t}" for t in
               ("grain_insert", "grain_delete", "grain_update", "conduit_insert", "conduit_delete")]

POSTGRES = [
    f"""CREATE FUNCTION vitals_grain_gauges() RETURNS trigger AS $$
       BEGIN
         IF TG_OP = 'DELETE' THEN {_grain('OLD', -1, True)}
         ELSIF TG_OP = 'INSERT' THEN {_grain('NEW', 1, True)}
         ELSIF OLD.status IS DISTINCT FROM NEW.status OR OLD.tier IS DISTINCT FROM NEW.tier THEN
           {_grain('OLD', -1, False)} {_grain('NEW', 1, False)}
         END IF;
         RETURN NULL;
       END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER vitals_grain_gauges AFTER INSERT OR DELETE OR UPDATE OF status, tier ON grains_grain
       FOR EACH ROW EXECUTE FUNCTION vitals_grain_gauges()""",
    f"""CREATE FUNCTION vitals_conduit_gauges() RETURNS trigger AS $$
       BEGIN
         IF TG_OP = 'DELETE' THEN {_conduit('OLD', -1)} ELSE {_conduit('NEW', 1)} END IF;
         RETURN NULL;
       END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER vitals_conduit_gauges AFTER INSERT OR DELETE ON graph_conduit
       FOR EACH ROW EXECUTE FUNCTION vitals_conduit_gauges()""",
]
POSTGRES_DOWN = [
    "DROP TRIGGER IF EXISTS vitals_grain_gauges ON grains_grain", "DROP FUNCTION IF EXISTS vitals_grain_gauges()",
    "DROP TRIGGER IF EXISTS vitals_conduit_gauges ON graph_conduit", "DROP FUNCTION IF EXISTS vitals_conduit_gauges()",
]


def _start_gauges(schema_editor) -> None:
    counts = [("grains", "SELECT count(*) FROM grains_grain"), ("conduits", "SELECT count(*) FROM graph_conduit")]
    counts += [(f"grains:{s}", f"SELECT count(*) FROM grains_grain WHERE status = '{s}'") for s in STATUSES]
    counts += [(f"tier:{t}", f"SELECT count(*) FROM grains_grain WHERE tier = '{t}'") for t in TIERS]
    counts += [(f"conduits:{k}", f"SELECT count(*) FROM graph_conduit WHERE kind = '{k}'") for k in KINDS]
    for name, query in counts:
        schema_editor.execute(f"INSERT INTO vitals_gauge (name, value) SELECT '{name}', ({query})")


def up(apps, schema_editor):
    _start_gauges(schema_editor)
    vendor = schema_editor.connection.vendor
    for sql in {"sqlite": SQLITE, "postgresql": POSTGRES}.get(vendor, []):
        schema_editor.execute(sql)


def down(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for sql in {"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}.get(vendor, []):
        schema_editor.execute(sql)
    schema_editor.execute("DELETE FROM vitals_gauge")


class Migration(migrations.Migration):
    dependencies = [("vitals", "0001_initial"), ("grains", "0001_squashed_0008"), ("graph", "0003_conduit_conduit_weight")]

    operations = [migrations.RunPython(up, down)]
