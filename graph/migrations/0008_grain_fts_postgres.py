"""PostgreSQL: what search needs to rank grains by BM25 as FTS5 does on SQLite.

``fts_doc``, a stored generated column: the content's lexemes with weight A and the learned cues' with weight
B (search counts a cue word for CUE_WEIGHT of a content word), each with its positions (term frequencies). A
GIN index over it replaces the expression index of 0006. ``fts_length``, also generated: a grain's length in
words, stopwords included, as FTS5 counts tokens (the last position in a document of the simple configuration,
which drops no word). Generated columns are never named by the ORM, so the model does not know them.

``grain_fts_size``: the grain count and their total length in tokens (BM25's N and mean document length),
kept by triggers as FTS5 keeps them, so that search reads them exactly without a scan. Writers only append a
row of differences (no row that concurrent writers would queue on); every 256th row, a writer folds the rows
no one else holds into one.

SQLite: nothing (FTS5 keeps its own index).
"""
from django.db import migrations

from core.vendor_sql import run_by_vendor

DOCUMENT = ("setweight(to_tsvector('english'::regconfig, content), 'A') || "
            "setweight(to_tsvector('english'::regconfig, coalesce(cues, '')), 'B')")
ADD = "INSERT INTO grain_fts_size (grains, tokens)"
OPS = ("insert", "delete", "update", "truncate")
POSTGRES_UP = [
    f"ALTER TABLE grains_grain ADD COLUMN IF NOT EXISTS fts_doc tsvector GENERATED ALWAYS AS ({DOCUMENT}) STORED",
    """CREATE OR REPLACE FUNCTION grain_fts_length(doc tsvector) RETURNS integer LANGUAGE sql IMMUTABLE AS
       $$ SELECT coalesce(max(positions[cardinality(positions)]), 0) FROM unnest(doc) $$""",
    "ALTER TABLE grains_grain ADD COLUMN IF NOT EXISTS fts_length integer GENERATED ALWAYS AS ("
    "grain_fts_length(to_tsvector('simple'::regconfig, content || ' ' || coalesce(cues, '')))) STORED",
    "CREATE INDEX IF NOT EXISTS grain_fts_doc ON grains_grain USING gin (fts_doc)",
    "DROP INDEX IF EXISTS grain_content_fts",
    "CREATE TABLE IF NOT EXISTS grain_fts_size (id bigserial PRIMARY KEY, grains bigint NOT NULL, "
    "tokens bigint NOT NULL)",
    f"{ADD} SELECT count(*), coalesce(sum(fts_length), 0) FROM grains_grain "
    "WHERE NOT EXISTS (SELECT FROM grain_fts_size)",
    f"""CREATE OR REPLACE FUNCTION grain_fts_size_change() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE added bigint;
       BEGIN
         IF TG_OP = 'TRUNCATE' THEN
           DELETE FROM grain_fts_size;
           RETURN NULL;
         ELSIF TG_OP = 'INSERT' THEN
           {ADD} SELECT count(*), coalesce(sum(fts_length), 0) FROM new_rows
             HAVING count(*) > 0 RETURNING id INTO added;
         ELSIF TG_OP = 'DELETE' THEN
           {ADD} SELECT -count(*), -coalesce(sum(fts_length), 0) FROM old_rows
             HAVING count(*) > 0 RETURNING id INTO added;
         ELSE
           {ADD} VALUES (0, NEW.fts_length - OLD.fts_length) RETURNING id INTO added;
         END IF;
         IF mod(added, 256) = 0 THEN
           WITH folded AS (
             DELETE FROM grain_fts_size WHERE id IN (SELECT id FROM grain_fts_size FOR UPDATE SKIP LOCKED)
             RETURNING grains, tokens)
           {ADD} SELECT sum(grains), sum(tokens) FROM folded HAVING count(*) > 0;
         END IF;
         RETURN NULL;
       END $$""",
    *(f"DROP TRIGGER IF EXISTS grain_fts_size_{op} ON grains_grain" for op in OPS),
    "CREATE TRIGGER grain_fts_size_insert AFTER INSERT ON grains_grain REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_size_change()",
    "CREATE TRIGGER grain_fts_size_delete AFTER DELETE ON grains_grain REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_size_change()",
    "CREATE TRIGGER grain_fts_size_update AFTER UPDATE OF content, cues ON grains_grain FOR EACH ROW "
    "WHEN (OLD.fts_length <> NEW.fts_length) EXECUTE FUNCTION grain_fts_size_change()",
    "CREATE TRIGGER grain_fts_size_truncate AFTER TRUNCATE ON grains_grain "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_size_change()",
]
POSTGRES_DOWN = [
    *(f"DROP TRIGGER IF EXISTS grain_fts_size_{op} ON grains_grain" for op in OPS),
    "DROP FUNCTION IF EXISTS grain_fts_size_change()",
    "DROP TABLE IF EXISTS grain_fts_size",
    "ALTER TABLE grains_grain DROP COLUMN IF EXISTS fts_length",
    "DROP FUNCTION IF EXISTS grain_fts_length(tsvector)",
    "CREATE INDEX IF NOT EXISTS grain_content_fts ON grains_grain "
    "USING gin (to_tsvector('english', content || ' ' || coalesce(cues, '')))",
    "DROP INDEX IF EXISTS grain_fts_doc",
    "ALTER TABLE grains_grain DROP COLUMN IF EXISTS fts_doc",
]


class Migration(migrations.Migration):
    dependencies = [("graph", "0007_graph_change")]

    operations = [
        migrations.RunPython(run_by_vendor({"postgresql": POSTGRES_UP}), run_by_vendor({"postgresql": POSTGRES_DOWN})),
    ]
