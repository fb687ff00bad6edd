"""Django's quick middleware, run in the event loop under ASGI.

Django runs a sync middleware's ``process_request`` and ``process_response`` under ASGI through
``sync_to_async``: two hops to its one shared sync thread and back per middleware and request. The three
below only read and set headers (no database, no file, nothing that blocks), so here they run where the
request already is. Behaviour is Django's own; only where the hooks run changes.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.middleware import clickjacking, common, security


class _Inline:
    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        return self.process_response(request, response)


class SecurityMiddleware(_Inline, security.SecurityMiddleware):
    pass


class CommonMiddleware(_Inline, common.CommonMiddleware):
    pass


class XFrameOptionsMiddleware(_Inline, clickjacking.XFrameOptionsMiddleware):
    pass
