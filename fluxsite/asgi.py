from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")
admin = get_asgi_application()

from django.conf import settings  # noqa: E402 - after Django is set up

from fluxsite.api_handler import ApiHandler  # noqa: E402

api = ApiHandler()


async def application(scope: dict, receive: object, send: object) -> None:
    """The admin (and anything not HTTP) through the full middleware chain, every API call through the API's."""
    lighter = scope["type"] == "http" and not scope["path"].startswith(settings.ADMIN_PATH)
    await (api if lighter else admin)(scope, receive, send)

from core.booth import get_booth  # noqa: E402 - after Django is set up
from memory.retrieval import retrieval_warm_up  # noqa: E402

# The graph mirror, the embedding model and the vector index are loaded on a read worker now, so the first
# retrieval does not wait for them (a retrieval meanwhile waits for the same lock and finds them ready).
get_booth().read(retrieval_warm_up)
