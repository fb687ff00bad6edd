from django.apps import AppConfig


class EpistemicConfig(AppConfig):
    name = "epistemic"
    default_auto_field = "django.db.models.BigAutoField"
