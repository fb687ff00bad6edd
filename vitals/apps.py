from django.apps import AppConfig


class VitalsConfig(AppConfig):
    name = "vitals"
    default_auto_field = "django.db.models.BigAutoField"
