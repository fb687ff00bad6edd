"""Full-text index over grain content, kept in sync by the database itself.

SQLite: an external-content FTS5 table (porter stemming) maintained by triggers;
(0005 puts archived grains in it too; queries filter by status.) A vocabulary
table beside it gives each term's document frequency. PostgreSQL: a
GIN index over ``to_tsvector('english', content)``.
"""
from django.db import migrations

SQLITE_UP = [
    """CREATE VIRTUAL TABLE grain_fts USING fts5(
        content, content='grains_grain', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
    )""",
    # Document frequency of every indexed term, to choose the rare terms of a query.
    "CREATE VIRTUAL TABLE grain_fts_vocab USING fts5vocab(grain_fts, 'row')",
    """CREATE TRIGGER grain_fts_insert AFTER INSERT ON grains_grain
       WHEN new.status != 'archived' BEGIN
         INSERT INTO grain_fts(rowid, content) VALUES (new.id, new.content);
       END""",
    """CREATE TRIGGER grain_fts_delete AFTER DELETE ON grains_grain
       WHEN old.status != 'archived' BEGIN
         INSERT INTO grain_fts(grain_fts, rowid, content) VALUES ('delete', old.id, old.content);
       END""",
    """CREATE TRIGGER grain_fts_update AFTER UPDATE OF content, status ON grains_grain
       WHEN old.content != new.content OR (old.status = 'archived') != (new.status = 'archived') BEGIN
         INSERT INTO grain_fts(grain_fts, rowid, content)
           SELECT 'delete', old.id, old.content WHERE old.status != 'archived';
         INSERT INTO grain_fts(rowid, content)
           SELECT new.id, new.content WHERE new.status != 'archived';
       END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS grain_fts_update",
    "DROP TRIGGER IF EXISTS grain_fts_delete",
    "DROP TRIGGER IF EXISTS grain_fts_insert",
    "DROP TABLE IF EXISTS grain_fts_vocab",
    "DROP TABLE IF EXISTS grain_fts",
]
POSTGRES_UP = [
    "CREATE INDEX grain_content_fts ON grains_grain USING gin (to_tsvector('english', content))",
]
POSTGRES_DOWN = ["DROP INDEX IF EXISTS grain_content_fts"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("grains", "0002_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
            _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}),
        )
    ]
