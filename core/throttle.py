"""Request-rate limits (django-ratelimit's core, on the instance's shared cache), beside the grains-per-minute
counter the store keeps itself: retrievals, feedback and listings per client; the dashboard's search and
activity APIs and the admin's login link per client address. Over the rate: 429 ``rate_limited`` with
Retry-After, in the project's error contract."""
from __future__ import annotations

from django.http import HttpRequest
from django_ratelimit.core import get_usage

from core.conf import flux_setting as S
from core.errors import RateLimited
from core.redis_state import redis_down, redis_errors


def client_key(group: str, request: HttpRequest) -> str:
    """Who a REST request counts against: the client of its API key, else the client it names, else its address."""
    keyed = getattr(request, "flux_client", None)
    named = request.headers.get("X-Flux-Client") or request.headers.get("X-Caller-Id", "").split(":")[0]
    return f"client:{keyed or named}" if keyed or named else f"ip:{request.META.get('REMOTE_ADDR', '')}"


def address_key(group: str, request: HttpRequest) -> str:
    return f"ip:{request.META.get('REMOTE_ADDR', '')}"


def throttle(request: HttpRequest, group: str, setting: str, *, per_address: bool = False) -> None:
    """Count this request against ``setting``'s rate (e.g. "600/m") for its client (or address); RateLimited when
    it is over."""
    rate = str(S(setting))
    try:
        usage = get_usage(getattr(request, "_request", request), group=group, rate=rate, increment=True,
                          key=address_key if per_address else client_key)
    except redis_errors() as exc:  # the shared cache is away: serve, uncounted, rather than fail
        redis_down("request rates are not counted meanwhile", exc)
        return
    if usage and usage["should_limit"]:
        wait = max(1, int(usage["time_left"]))
        who = "this address" if per_address else "this client"
        raise RateLimited(f"{who} may make {rate} {group} requests ({setting}); retry in {wait} s",
                          details={"limit": rate, "retry_after": wait, "setting": setting})
