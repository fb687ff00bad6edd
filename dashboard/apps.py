from django.apps import AppConfig
from django.conf import settings


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Dashboard"

    def ready(self) -> None:
        if settings.REDIS_URL:  # every process sends what it writes to the dashboards (dashboard/publish.py)
            from dashboard.publish import publish_soon
            from grains.activity import activity_listen

            activity_listen(publish_soon)
