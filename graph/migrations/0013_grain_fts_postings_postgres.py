"""PostgreSQL: an inverted index of the grains' lexemes, kept by triggers, that search ranks from.

Search ranked by reading every grain that matched a query (through the GIN index on ``fts_doc``) and unnesting
its whole document to find the query's lexemes in it: at 10,000 grains 11 ms a query, where FTS5 takes 1.5 ms
at 100,000. ``grain_fts_postings`` holds one row per lexeme of each grain: how often it occurs in the content
and in the learned cues, and the grain's length in tokens (BM25's f and dl), read from ``fts_doc`` and
``fts_length`` by triggers on every insert, delete and change of content or cues. A query reads the rows of its
few rare lexemes through the index on (lexeme, grain_id) and ranks them without reading the grains (their
statuses are looked up for the best few after); the GIN index, which nothing reads then, goes.

SQLite: nothing (FTS5 keeps its own index).
"""
from django.db import migrations

from core.vendor_sql import run_by_vendor

OPS = ("insert", "delete", "update", "truncate")
# The postings of each grain of a set of rows (``{rows}``: a transition table, or the updated row alone).
POSTINGS = ("INSERT INTO grain_fts_postings (lexeme, grain_id, content_tf, cue_tf, length) "
            "SELECT u.lexeme, r.id, cardinality(array_positions(u.weights, 'A')), "
            "cardinality(array_positions(u.weights, 'B')), r.fts_length FROM {rows} CROSS JOIN LATERAL unnest(r.fts_doc) u")
POSTGRES_UP = [
    "CREATE TABLE grain_fts_postings (lexeme text NOT NULL, grain_id bigint NOT NULL, content_tf smallint NOT NULL, "
    "cue_tf smallint NOT NULL, length integer NOT NULL, PRIMARY KEY (grain_id, lexeme))",
    POSTINGS.format(rows="grains_grain r"),
    "CREATE INDEX grain_fts_postings_lexeme ON grain_fts_postings (lexeme, grain_id) "
    "INCLUDE (content_tf, cue_tf, length)",
    f"""CREATE FUNCTION grain_fts_postings_change() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'TRUNCATE' THEN
           DELETE FROM grain_fts_postings;
         ELSIF TG_OP = 'INSERT' THEN
           {POSTINGS.format(rows="new_rows r")};
         ELSIF TG_OP = 'DELETE' THEN
           DELETE FROM grain_fts_postings p USING old_rows o WHERE p.grain_id = o.id;
         ELSE
           DELETE FROM grain_fts_postings WHERE grain_id = OLD.id;
           {POSTINGS.format(rows="(SELECT NEW.id, NEW.fts_doc, NEW.fts_length) r(id, fts_doc, fts_length)")};
         END IF;
         RETURN NULL;
       END $$""",
    "CREATE TRIGGER grain_fts_postings_insert AFTER INSERT ON grains_grain REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_postings_change()",
    "CREATE TRIGGER grain_fts_postings_delete AFTER DELETE ON grains_grain REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_postings_change()",
    "CREATE TRIGGER grain_fts_postings_update AFTER UPDATE OF content, cues ON grains_grain FOR EACH ROW "
    "WHEN (OLD.fts_doc IS DISTINCT FROM NEW.fts_doc OR OLD.fts_length IS DISTINCT FROM NEW.fts_length) "
    "EXECUTE FUNCTION grain_fts_postings_change()",
    "CREATE TRIGGER grain_fts_postings_truncate AFTER TRUNCATE ON grains_grain "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_postings_change()",
    "DROP INDEX IF EXISTS grain_fts_doc",
]
POSTGRES_DOWN = [
    "CREATE INDEX IF NOT EXISTS grain_fts_doc ON grains_grain USING gin (fts_doc)",
    *(f"DROP TRIGGER IF EXISTS grain_fts_postings_{op} ON grains_grain" for op in OPS),
    "DROP FUNCTION IF EXISTS grain_fts_postings_change()",
    "DROP TABLE IF EXISTS grain_fts_postings",
]


class Migration(migrations.Migration):
    dependencies = [("graph", "0012_grain_fts_terms_postgres")]

    operations = [migrations.RunPython(run_by_vendor({"postgresql": POSTGRES_UP}),
                                       run_by_vendor({"postgresql": POSTGRES_DOWN}))]
