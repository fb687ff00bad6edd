"""Lifecycle and epistemic fields; the full-text index now holds archived grains too.

Archived grains stay searchable so that a retrieval can bring one back when
nothing livelier matches (queries filter by status). On SQLite, making the new
columns NOT NULL rebuilds the table, which drops its triggers: they are
created again here, in their new form.
"""
from django.db import migrations, models

SQLITE_TRIGGERS = [
    "DROP TRIGGER IF EXISTS grain_fts_insert",
    "DROP TRIGGER IF EXISTS grain_fts_delete",
    "DROP TRIGGER IF EXISTS grain_fts_update",
    """CREATE TRIGGER grain_fts_insert AFTER INSERT ON grains_grain BEGIN
         INSERT INTO grain_fts(rowid, content) VALUES (new.id, new.content);
       END""",
    """CREATE TRIGGER grain_fts_delete AFTER DELETE ON grains_grain BEGIN
         INSERT INTO grain_fts(grain_fts, rowid, content) VALUES ('delete', old.id, old.content);
       END""",
    """CREATE TRIGGER grain_fts_update AFTER UPDATE OF content ON grains_grain
       WHEN old.content != new.content BEGIN
         INSERT INTO grain_fts(grain_fts, rowid, content) VALUES ('delete', old.id, old.content);
         INSERT INTO grain_fts(rowid, content) VALUES (new.id, new.content);
       END""",
]


def index_archived(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    # Archived rows were left out of the index before this migration; add them before the new triggers.
    schema_editor.execute("INSERT INTO grain_fts(rowid, content) SELECT id, content FROM grains_grain "
                          "WHERE status = 'archived'")


def triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_TRIGGERS:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("grains", "0004_extraction_sources"),
        ("graph", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(index_archived, migrations.RunPython.noop),
        migrations.AddField(model_name="grain", name="confidence_at", field=models.DateTimeField(null=True)),
        migrations.AddField(model_name="grain", name="status_changed_at", field=models.DateTimeField(null=True)),
        migrations.RunSQL(
            "UPDATE grains_grain SET confidence_at = created_at, status_changed_at = last_accessed_at",
            migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="grain", name="confidence_at",
            field=models.DateTimeField(help_text="When the confidence last changed (age drift runs from here)."),
        ),
        migrations.AlterField(
            model_name="grain", name="status_changed_at",
            field=models.DateTimeField(help_text="When the grain entered its status."),
        ),
        migrations.AddField(
            model_name="grain",
            name="superseded_by",
            field=models.BigIntegerField(
                blank=True, null=True,
                help_text="Id of the grain that supersedes this one (it may since be a tombstone)."),
        ),
        migrations.AddField(
            model_name="tombstone",
            name="superseded_by",
            field=models.BigIntegerField(
                blank=True, null=True,
                help_text="Id of the grain that superseded the forgotten one, so chains still resolve."),
        ),
        migrations.AddField(
            model_name="confidenceevent",
            name="caller",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=models.deletion.SET_NULL, related_name="+", to="grains.caller",
                help_text="Who caused the change (a corroborating caller, a rater), if anyone."),
        ),
        migrations.AddField(
            model_name="confidenceevent",
            name="related_grain_id",
            field=models.BigIntegerField(blank=True, null=True,
                                         help_text="The grain that supported or contradicted this one, if any."),
        ),
        migrations.AddIndex(model_name="grain", index=models.Index(fields=["cluster", "id"], name="grain_cluster_id")),
        migrations.RunPython(triggers, migrations.RunPython.noop),
    ]
