from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The service's interfaces for people and programs: the REST API, the Django admin and the operator's
    commands (flux_admin, flux_admin_link, flux_embed, flux_broker_prepare)."""

    name = "api"
    verbose_name = "Flux Memory API"
