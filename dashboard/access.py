"""Who may view the dashboard: anyone on this machine (127.0.0.1, ::1); from elsewhere only with the viewing
token that `flux start --broadcast` prints in its LAN URLs (good for that run of the service).

The token comes in the URL once (``?token=...``), is exchanged for a cookie and the address bar is cleaned; the
cookie then opens pages, data and the websocket. Without it every page, API and socket answers 401 (403 when
the dashboard was not started to be shared at all). Pure helpers plus one middleware; the websocket consumer
uses ``viewer_allowed`` on its scope.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Callable
from http.cookies import SimpleCookie
from urllib.parse import unquote_plus, urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse

from core.http import error_body

TOKEN_ENV = "FLUX_VIEW_TOKEN"
COOKIE_MAX_AGE = 7 * 86400


def view_token() -> str:
    return os.environ.get(TOKEN_ENV, "")


def cookie_name() -> str:
    return settings.SESSION_COOKIE_NAME.removesuffix("_session") + "_view"


def local(address: str | None) -> bool:
    """This machine itself: 127.0.0.1 or ::1 (also IPv4-mapped). Other 127/8 addresses are not trusted."""
    try:
        ip = ipaddress.ip_address((address or "").strip("[]"))
    except ValueError:
        return False
    if getattr(ip, "ipv4_mapped", None):
        ip = ip.ipv4_mapped
    return str(ip) in ("127.0.0.1", "::1")


def token_matches(given: str | None) -> bool:
    token = view_token()
    return bool(token and given) and hmac.compare_digest(given.encode(), token.encode())


def viewer_allowed(address: str | None, cookie: str | None, query_token: str | None) -> bool:
    return local(address) or token_matches(cookie) or token_matches(query_token)


def refusal(path: str) -> HttpResponse:
    if view_token():
        status, code, message = 401, "viewing_token_required", (
            "this dashboard is shared by a link with a viewing token; open the link printed by "
            "`flux start --broadcast` (or `flux status`) on the machine that runs it")
    else:
        status, code, message = 403, "not_shared", (
            "this dashboard is not shared beyond its own machine; its owner shares it with `flux start --broadcast`")
    return JsonResponse(error_body(code, message, {"path": path}), status=status)


class ViewerMiddleware:
    """On the dashboard listener, before every view: a remote viewer needs the token (URL once, then cookie)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.GET.get("token")
        if local(request.META.get("REMOTE_ADDR")) or token_matches(request.COOKIES.get(cookie_name())):
            return self.get_response(request)
        if not token_matches(given):
            return refusal(request.path)
        # The rest of the query as it came, parameter by parameter (a blank one, bytes that are not UTF-8), only
        # the token taken out.
        rest = "&".join(part for part in request.META.get("QUERY_STRING", "").split("&")
                        if part and unquote_plus(part.split("=", 1)[0]) != "token")
        response = HttpResponseRedirect(request.path + (f"?{rest}" if rest else ""))
        response.set_cookie(cookie_name(), given, max_age=COOKIE_MAX_AGE, httponly=True, samesite="Strict")
        return response


def scope_cookie(scope: dict, name: str) -> str | None:
    """A cookie of a websocket's handshake."""
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            morsel = SimpleCookie(value.decode("latin-1")).get(name)
            if morsel is not None:
                return morsel.value
    return None


class SameOriginSocket:
    """The dashboard's socket opened by its own pages only: the Origin a browser sends names the host and port the
    socket was asked of (its Host). Channels' check of the Origin's host against ALLOWED_HOSTS let in any page
    served on 127.0.0.1 or localhost, at any port: another local program's page read every event (grains'
    contents, agents' queries). A client that sends no Origin (not a browser) is refused too, as before."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        headers = dict(scope.get("headers", []))
        origin, host = headers.get(b"origin", b"").decode("latin-1"), headers.get(b"host", b"").decode("latin-1")
        try:
            netloc = urlsplit(origin).netloc.lower() if origin else ""
        except ValueError:
            netloc = ""
        if not netloc or netloc != host.lower():
            await WebsocketDenier()(scope, receive, send)
            return
        await self.app(scope, receive, send)
