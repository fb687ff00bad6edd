"""The full-text index over grains, owned by the graph app (its search reads it).

SQLite: an external-content FTS5 table over a grain's content and learned cues (porter stemming), a
vocabulary table beside it (each term's document frequency) and the triggers that keep it in step with the
grains table, archived grains included (queries filter by status). PostgreSQL: a GIN index over both.
Every statement is idempotent: a database made before this migration (whose grains migrations created the
same index) keeps its index as it is.
"""
from django.db import migrations

from core.vendor_sql import run_by_vendor

SQLITE_UP = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS grain_fts USING fts5(content, cues, content='grains_grain', "
    "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS grain_fts_vocab USING fts5vocab(grain_fts, 'row')",
    """CREATE TRIGGER IF NOT EXISTS grain_fts_insert AFTER INSERT ON grains_grain BEGIN
         INSERT INTO grain_fts(rowid, content, cues) VALUES (new.id, new.content, new.cues);
       END""",
    """CREATE TRIGGER IF NOT EXISTS grain_fts_delete AFTER DELETE ON grains_grain BEGIN
         INSERT INTO grain_fts(grain_fts, rowid, content, cues) VALUES ('delete', old.id, old.content, old.cues);
       END""",
    """CREATE TRIGGER IF NOT EXISTS grain_fts_update AFTER UPDATE OF content, cues ON grains_grain
       WHEN old.content IS NOT new.content OR old.cues IS NOT new.cues BEGIN
         INSERT INTO grain_fts(grain_fts, rowid, content, cues) VALUES ('delete', old.id, old.content, old.cues);
         INSERT INTO grain_fts(rowid, content, cues) VALUES (new.id, new.content, new.cues);
       END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS grain_fts_update",
    "DROP TRIGGER IF EXISTS grain_fts_delete",
    "DROP TRIGGER IF EXISTS grain_fts_insert",
    "DROP TABLE IF EXISTS grain_fts_vocab",
    "DROP TABLE IF EXISTS grain_fts",
]
POSTGRES_UP = ["CREATE INDEX IF NOT EXISTS grain_content_fts ON grains_grain "
               "USING gin (to_tsvector('english', content || ' ' || coalesce(cues, '')))"]
POSTGRES_DOWN = ["DROP INDEX IF EXISTS grain_content_fts"]


class Migration(migrations.Migration):
    dependencies = [("graph", "0005_learned_ranker"), ("grains", "0001_squashed_0008")]

    operations = [
        migrations.RunPython(run_by_vendor({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
                             run_by_vendor({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN})),
    ]
