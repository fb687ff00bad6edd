from django.apps import AppConfig


class GraphConfig(AppConfig):
    name = "graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the connection_created receivers before any connection opens, and the system checks.
        from core import checkpoint  # noqa: F401
        from graph import checks, search  # noqa: F401
