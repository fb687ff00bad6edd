"""The dashboard listener (DASHBOARD_HOST:DASHBOARD_PORT): pages, read-only data, static files, the websocket.

Run apart from the REST API: ``daphne -b 127.0.0.1 -p 7462 fluxsite.dashboard_asgi:application``.
"""
from __future__ import annotations

import os

os.environ["FLUX_LISTENER"] = "dashboard"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")

from django.core.asgi import get_asgi_application  # after FLUX_LISTENER is set: settings read it

http = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

from dashboard.access import SameOriginSocket  # noqa: E402
from dashboard.consumers import ActivityConsumer  # noqa: E402

application = ProtocolTypeRouter({
    "http": http,
    "websocket": SameOriginSocket(AllowedHostsOriginValidator(URLRouter([path("ws/activity",
                                                                        ActivityConsumer.as_asgi())]))),
})
