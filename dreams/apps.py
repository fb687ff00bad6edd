from django.apps import AppConfig


class DreamsConfig(AppConfig):
    name = "dreams"
    default_auto_field = "django.db.models.BigAutoField"
