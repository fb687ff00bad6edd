"""The grains app's tables as migrations 0001-0008 left them, in one step, with no dependency on another app.

A database made before this squash has 0001-0008 applied and counts this one as applied too; a new one is
created by it. The grain's cluster is a plain id the graph app keeps (an older database still carries the
foreign key's constraint, which stays satisfied: clustering clears a cluster's grains before deleting it).
The full-text index over grains is the graph app's (graph 0006).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True
    replaces = [
        ('grains', '0001_initial'), ('grains', '0002_initial'), ('grains', '0003_fulltext'),
        ('grains', '0004_extraction_sources'), ('grains', '0005_epistemic_lifecycle'),
        ('grains', '0006_purge_restore_audit'), ('grains', '0007_caller_blocked'), ('grains', '0008_learned_cues'),
    ]

    dependencies = [
    ]

    operations = [
        migrations.CreateModel(
            name='ActivityEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(max_length=64)),
                ('payload', models.JSONField(default=dict)),
                ('created_at', models.DateTimeField(db_index=True)),
            ],
        ),
        migrations.CreateModel(
            name='AuditEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor', models.CharField(max_length=120)),
                ('action', models.CharField(max_length=32)),
                ('grain_id', models.BigIntegerField(blank=True, db_index=True, null=True)),
                ('before', models.JSONField(default=dict)),
                ('after', models.JSONField(default=dict)),
                ('reason', models.CharField(max_length=300)),
                ('created_at', models.DateTimeField(db_index=True)),
            ],
        ),
        migrations.CreateModel(
            name='Caller',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('client', models.CharField(max_length=100)),
                ('role', models.CharField(choices=[('chat', 'Chat'), ('memory_writer', 'Memory Writer'), ('background_lookup', 'Background Lookup'), ('system', 'System'), ('admin', 'Admin'), ('test', 'Test'), ('unknown', 'Unknown')], max_length=32)),
                ('created_at', models.DateTimeField()),
                ('stored', models.PositiveIntegerField(default=0, help_text='Grains stored (duplicates included).')),
                ('retrievals', models.PositiveIntegerField(default=0, help_text='Retrievals made.')),
                ('returned', models.PositiveIntegerField(default=0, help_text='Grains returned by its retrievals.')),
                ('rated', models.PositiveIntegerField(default=0, help_text='Returned grains that got feedback.')),
                ('blocked', models.BooleanField(default=False, help_text='Refused on store, retrieve and feedback.')),
                ('blocked_reason', models.CharField(blank=True, max_length=300)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('client', 'role'), name='caller_unique_client_role')],
            },
        ),
        migrations.CreateModel(
            name='Source',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('text', models.TextField()),
                ('created_at', models.DateTimeField()),
                ('caller', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='sources', to='grains.caller')),
            ],
        ),
        migrations.CreateModel(
            name='Grain',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('content', models.TextField()),
                ('cues', models.TextField(blank=True, help_text='Query words that useful feedback attached to this grain (searched beside its content).', null=True)),
                ('content_hash', models.CharField(max_length=64, unique=True)),
                ('provenance', models.CharField(choices=[('user_stated', 'User Stated'), ('ai_stated', 'Ai Stated'), ('ai_inferred', 'Ai Inferred'), ('observed', 'Observed'), ('imported', 'Imported'), ('consolidated', 'Consolidated')], max_length=16)),
                ('status', models.CharField(choices=[('active', 'Active'), ('dormant', 'Dormant'), ('quarantined', 'Quarantined'), ('archived', 'Archived')], default='active', max_length=12)),
                ('tier', models.CharField(choices=[('core', 'Core'), ('working', 'Working'), ('ephemeral', 'Ephemeral')], default='working', max_length=10)),
                ('confidence', models.FloatField()),
                ('weight', models.FloatField()),
                ('level', models.PositiveSmallIntegerField(default=0)),
                ('retrievals', models.PositiveIntegerField(default=0)),
                ('useful_count', models.PositiveIntegerField(default=0)),
                ('not_useful_count', models.PositiveIntegerField(default=0)),
                ('context', models.CharField(blank=True, default='', max_length=200)),
                ('occurred_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField()),
                ('last_accessed_at', models.DateTimeField()),
                ('last_decayed_at', models.DateTimeField()),
                ('confidence_at', models.DateTimeField(help_text='When the confidence last changed (age drift runs from here).')),
                ('status_changed_at', models.DateTimeField(help_text='When the grain entered its status.')),
                ('superseded_by', models.BigIntegerField(blank=True, help_text='Id of the grain that supersedes this one (it may since be a tombstone).', null=True)),
                ('cluster_id', models.BigIntegerField(blank=True, help_text="The graph's cluster of this grain (set by clustering), if any.", null=True)),
                ('caller', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='grains', to='grains.caller')),
                ('source', models.ForeignKey(blank=True, help_text='The raw text this grain was extracted from, if any.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='grains', to='grains.source')),
            ],
        ),
        migrations.CreateModel(
            name='Tombstone',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('content_hash', models.CharField(max_length=64, unique=True)),
                ('grain_id', models.BigIntegerField(help_text='Id the grain had.')),
                ('preview', models.CharField(blank=True, max_length=120)),
                ('reason', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField()),
                ('superseded_by', models.BigIntegerField(blank=True, help_text='Id of the grain that superseded the forgotten one, so chains still resolve.', null=True)),
                ('restore_data', models.JSONField(blank=True, help_text='The grain, its conduits and confidence history, for a restore (cleared with the preview when the restore window ends).', null=True)),
                ('restorable_until', models.DateTimeField(blank=True, null=True)),
                ('caller', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='tombstones', to='grains.caller')),
            ],
        ),
        migrations.CreateModel(
            name='ConfidenceEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('confidence', models.FloatField()),
                ('reason', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField()),
                ('related_grain_id', models.BigIntegerField(blank=True, help_text='The grain that supported or contradicted this one, if any.', null=True)),
                ('caller', models.ForeignKey(blank=True, help_text='Who caused the change (a corroborating caller, a rater), if anyone.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='grains.caller')),
                ('grain', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='confidence_events', to='grains.grain')),
            ],
            options={
                'indexes': [models.Index(fields=['grain', 'created_at'], name='confidence_grain_time')],
            },
        ),
        migrations.AddIndex(
            model_name='grain',
            index=models.Index(fields=['status', 'id'], name='grain_status_id'),
        ),
        migrations.AddIndex(
            model_name='grain',
            index=models.Index(fields=['context', 'id'], name='grain_context_id'),
        ),
        migrations.AddIndex(
            model_name='grain',
            index=models.Index(fields=['last_decayed_at'], name='grain_last_decayed'),
        ),
        migrations.AddIndex(
            model_name='grain',
            index=models.Index(fields=['cluster_id', 'id'], name='grain_cluster_id'),
        ),
    ]
