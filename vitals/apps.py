from django.apps import AppConfig


class VitalsConfig(AppConfig):
    name = "vitals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The services count through core.metrics; the counts land in this app's hourly counters.
        from core import metrics
        from vitals.counters import tally

        metrics.install(tally)
