from django.apps import AppConfig


class GrainsConfig(AppConfig):
    name = "grains"
    default_auto_field = "django.db.models.BigAutoField"
