"""Security: operator purges lifted only by operators, locks and rate counts shared by processes, one-time
login links, and the audit log kept free of purged content.

Tombstones made before this migration count as an operator's (the safe side: only an operator lifts them).
Earlier audit entries of purges and restores lose the content they held; the grain id, hash and reason stay.
"""

from django.db import migrations, models


def scrub_audit_content(apps, schema_editor):
    AuditEvent = apps.get_model("grains", "AuditEvent")
    for event in AuditEvent.objects.filter(action__in=["purge", "restore"]).only("before", "after"):
        before, after = dict(event.before or {}), dict(event.after or {})
        if "content" in before or "content" in after:
            before.pop("content", None)
            after.pop("content", None)
            AuditEvent.objects.filter(pk=event.pk).update(before=before, after=after)


class Migration(migrations.Migration):

    dependencies = [
        ('grains', '0001_squashed_0008'),
    ]

    operations = [
        migrations.CreateModel(
            name='Lock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=64, unique=True)),
                ('holder', models.CharField(max_length=120)),
                ('acquired_at', models.DateTimeField()),
                ('expires_at', models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name='LoginLinkUse',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('nonce', models.CharField(max_length=64, unique=True)),
                ('used_at', models.DateTimeField()),
            ],
        ),
        migrations.AddField(
            model_name='tombstone',
            name='by_operator',
            field=models.BooleanField(default=True),
        ),
        migrations.AlterField(
            model_name='tombstone',
            name='by_operator',
            field=models.BooleanField(default=False, help_text="An operator's purge: only an operator's restore lifts it (a caller's forgetting can be undone by the caller storing the content again with restore)."),
        ),
        migrations.RunPython(scrub_audit_content, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='tombstone',
            name='restore_data',
            field=models.JSONField(blank=True, help_text='The grain, its conduits and confidence history, for a restore (cleared with the preview when the restore window ends).', null=True),
        ),
        migrations.CreateModel(
            name='RateCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('slot', models.BigIntegerField(help_text="The window's number: seconds since the epoch // window length.")),
                ('used', models.PositiveIntegerField(default=0)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('name', 'slot'), name='rate_count_name_slot')],
            },
        ),
    ]
