"""The activity log keeps no relation notes: a note quotes both grains' values ("tulip 42 vs orchid 19") and
would outlive a purge of either grain there. Notes stay on the relations themselves, which a purge deletes with
its grain; events recorded before this migration lose theirs."""

from django.db import migrations

CHUNK = 2000


def notes_off_the_log(apps, schema_editor):
    ActivityEvent = apps.get_model("grains", "ActivityEvent")
    found = ActivityEvent.objects.filter(kind="epistemic.relation_found").only("payload").order_by("pk")
    last = 0
    while True:
        events = list(found.filter(pk__gt=last)[:CHUNK])
        if not events:
            return
        last = events[-1].pk
        for event in events:
            if isinstance(event.payload, dict) and "note" in event.payload:
                event.payload = {k: v for k, v in event.payload.items() if k != "note"}
                ActivityEvent.objects.filter(pk=event.pk).update(payload=event.payload)


class Migration(migrations.Migration):

    dependencies = [
        ("grains", "0009_security"),
    ]

    operations = [
        migrations.RunPython(notes_off_the_log, migrations.RunPython.noop),
    ]
