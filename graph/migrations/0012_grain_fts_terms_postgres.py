"""PostgreSQL: each lexeme's document frequency kept by triggers, as FTS5's vocabulary keeps it on SQLite.

Search counted the grains having each of a query's lexemes (and a store each of its grains' lexemes) through the
index or a scan of the table: 1.3 ms a lexeme at 5,000 grains, 0.26 s for a batch of 100 grains' 460 lexemes.
``grain_fts_terms`` holds differences: a statement that inserts grains appends one row per lexeme it brings
(the number of its grains having it), a delete the negative, a change of content or cues the lexemes gained and
lost; a lexeme's frequency is the sum of its rows, read through an index. Writers only append (no row that
concurrent writers would queue on); the beat folds the rows into one per lexeme (graph.search.search_terms_fold).

SQLite: nothing (FTS5 keeps its own vocabulary).
"""
from django.db import migrations

from core.vendor_sql import run_by_vendor

ADD = "INSERT INTO grain_fts_terms (lexeme, docs)"
OPS = ("insert", "delete", "update", "truncate")
POSTGRES_UP = [
    "CREATE TABLE grain_fts_terms (id bigserial PRIMARY KEY, lexeme text NOT NULL, docs bigint NOT NULL)",
    "CREATE INDEX grain_fts_terms_lexeme ON grain_fts_terms (lexeme) INCLUDE (docs)",
    f"{ADD} SELECT u.lexeme, count(*) FROM grains_grain g CROSS JOIN LATERAL unnest(tsvector_to_array(g.fts_doc)) "
    "u(lexeme) GROUP BY u.lexeme",
    f"""CREATE FUNCTION grain_fts_terms_change() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'TRUNCATE' THEN
           DELETE FROM grain_fts_terms;
         ELSIF TG_OP = 'INSERT' THEN
           {ADD} SELECT u.lexeme, count(*) FROM new_rows n
             CROSS JOIN LATERAL unnest(tsvector_to_array(n.fts_doc)) u(lexeme) GROUP BY u.lexeme;
         ELSIF TG_OP = 'DELETE' THEN
           {ADD} SELECT u.lexeme, -count(*) FROM old_rows o
             CROSS JOIN LATERAL unnest(tsvector_to_array(o.fts_doc)) u(lexeme) GROUP BY u.lexeme;
         ELSE
           {ADD} SELECT lexeme, 1 FROM unnest(tsvector_to_array(NEW.fts_doc)) lexeme
               WHERE lexeme <> ALL (tsvector_to_array(OLD.fts_doc))
             UNION ALL
             SELECT lexeme, -1 FROM unnest(tsvector_to_array(OLD.fts_doc)) lexeme
               WHERE lexeme <> ALL (tsvector_to_array(NEW.fts_doc));
         END IF;
         RETURN NULL;
       END $$""",
    "CREATE TRIGGER grain_fts_terms_insert AFTER INSERT ON grains_grain REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_terms_change()",
    "CREATE TRIGGER grain_fts_terms_delete AFTER DELETE ON grains_grain REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_terms_change()",
    "CREATE TRIGGER grain_fts_terms_update AFTER UPDATE OF content, cues ON grains_grain FOR EACH ROW "
    "WHEN (OLD.fts_doc IS DISTINCT FROM NEW.fts_doc) EXECUTE FUNCTION grain_fts_terms_change()",
    "CREATE TRIGGER grain_fts_terms_truncate AFTER TRUNCATE ON grains_grain "
    "FOR EACH STATEMENT EXECUTE FUNCTION grain_fts_terms_change()",
]
POSTGRES_DOWN = [
    *(f"DROP TRIGGER IF EXISTS grain_fts_terms_{op} ON grains_grain" for op in OPS),
    "DROP FUNCTION IF EXISTS grain_fts_terms_change()",
    "DROP TABLE IF EXISTS grain_fts_terms",
]


class Migration(migrations.Migration):
    dependencies = [("graph", "0011_graph_change_postgres")]

    operations = [migrations.RunPython(run_by_vendor({"postgresql": POSTGRES_UP}),
                                       run_by_vendor({"postgresql": POSTGRES_DOWN}))]
