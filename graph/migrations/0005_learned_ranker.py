from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('graph', '0004_grain_vector'),
    ]

    operations = [
        migrations.AddField(
            model_name='traceitem',
            name='features',
            field=models.JSONField(blank=True, default=dict, help_text='What the learned ranker saw of this grain (it learns from them on feedback).'),
        ),
        migrations.CreateModel(
            name='RankerWeight',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=120, unique=True)),
                ('weight', models.FloatField(default=0.0)),
                ('updates', models.PositiveIntegerField(default=0)),
                ('updated_at', models.DateTimeField()),
            ],
        ),
    ]
