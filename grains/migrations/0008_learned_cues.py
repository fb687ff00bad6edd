"""Learned cues: query words that useful feedback attached to a grain, indexed beside its content.

``cues`` is nullable so that SQLite adds the column in place (a NOT NULL
column with a default would rebuild the table and drop its triggers). The
FTS5 table is created again with two columns, content and cues, filled from
the table, and its triggers follow both. PostgreSQL's GIN index covers both.
"""
from django.db import migrations, models

_FTS = """CREATE VIRTUAL TABLE grain_fts USING fts5(
    {columns}, content='grains_grain', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
)"""


def _sqlite(columns: str) -> list[str]:
    """Statements that (re)create the index over ``columns`` ("content" or "content, cues") and its triggers."""
    new = ", ".join(f"new.{c.strip()}" for c in columns.split(","))
    old = ", ".join(f"old.{c.strip()}" for c in columns.split(","))
    changed = " OR ".join(f"old.{c.strip()} IS NOT new.{c.strip()}" for c in columns.split(","))
    return [
        "DROP TRIGGER IF EXISTS grain_fts_insert",
        "DROP TRIGGER IF EXISTS grain_fts_delete",
        "DROP TRIGGER IF EXISTS grain_fts_update",
        "DROP TABLE IF EXISTS grain_fts_vocab",
        "DROP TABLE IF EXISTS grain_fts",
        _FTS.format(columns=columns),
        "INSERT INTO grain_fts(grain_fts) VALUES ('rebuild')",
        "CREATE VIRTUAL TABLE grain_fts_vocab USING fts5vocab(grain_fts, 'row')",
        f"""CREATE TRIGGER grain_fts_insert AFTER INSERT ON grains_grain BEGIN
             INSERT INTO grain_fts(rowid, {columns}) VALUES (new.id, {new});
           END""",
        f"""CREATE TRIGGER grain_fts_delete AFTER DELETE ON grains_grain BEGIN
             INSERT INTO grain_fts(grain_fts, rowid, {columns}) VALUES ('delete', old.id, {old});
           END""",
        f"""CREATE TRIGGER grain_fts_update AFTER UPDATE OF {columns} ON grains_grain
           WHEN {changed} BEGIN
             INSERT INTO grain_fts(grain_fts, rowid, {columns}) VALUES ('delete', old.id, {old});
             INSERT INTO grain_fts(rowid, {columns}) VALUES (new.id, {new});
           END""",
    ]


POSTGRES_UP = [
    "DROP INDEX IF EXISTS grain_content_fts",
    "CREATE INDEX grain_content_fts ON grains_grain "
    "USING gin (to_tsvector('english', content || ' ' || coalesce(cues, '')))",
]
POSTGRES_DOWN = [
    "DROP INDEX IF EXISTS grain_content_fts",
    "CREATE INDEX grain_content_fts ON grains_grain USING gin (to_tsvector('english', content))",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("grains", "0007_caller_blocked")]

    operations = [
        migrations.AddField(
            model_name="grain",
            name="cues",
            field=models.TextField(
                blank=True, null=True,
                help_text="Query words that useful feedback attached to this grain (searched beside its content)."),
        ),
        migrations.RunPython(
            _run({"sqlite": _sqlite("content, cues"), "postgresql": POSTGRES_UP}),
            _run({"sqlite": _sqlite("content"), "postgresql": POSTGRES_DOWN}),
        ),
    ]
