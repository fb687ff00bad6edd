"""Trace items lose the single-column indexes of their two foreign keys: the unique (trace, grain) constraint
and the (grain, origin_id) index lead with the same columns, and every retrieval inserts ten rows. Dropping
the two indexes changes no row; letting Django alter the fields would copy the whole table twice on SQLite."""
import django.db.models.deletion
from django.db import migrations, models

INDEXES = {"graph_traceitem_grain_id_f646d330": "grain_id", "graph_traceitem_trace_id_b6239f7c": "trace_id"}


class Migration(migrations.Migration):

    dependencies = [
        ('grains', '0009_security'),
        ('graph', '0009_graph_change_clusters'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{name}"',
                                  f'CREATE INDEX IF NOT EXISTS "{name}" ON "graph_traceitem" ("{column}")')
                for name, column in INDEXES.items()
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='traceitem',
                    name='grain',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name='trace_items', to='grains.grain'),
                ),
                migrations.AlterField(
                    model_name='traceitem',
                    name='trace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name='items', to='graph.trace'),
                ),
            ],
        ),
    ]
